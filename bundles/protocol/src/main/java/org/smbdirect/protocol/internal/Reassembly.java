package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;

/**
 * Connection.FragmentReassemblyBuffer and Connection.FragmentReassemblyRemaining (MS-SMBD
 * 3.1.1.1, 3.1.5.8): the fragments of one upper-layer message, in order. The buffer is sized by
 * the first fragment's DataLength + RemainingDataLength, which 3.1.5.8 bounds by
 * MaxFragmentedRecvSize, and reused by the next sequence when it fits; an idle connection drops
 * it. Confined to the connection's thread.
 */
final class Reassembly {
    private ByteBuffer buffer;
    private ByteBuffer view;
    private long remaining;

    /**
     * Connection.FragmentReassemblyRemaining.
     *
     * @return bytes still announced; 0 when no sequence is in progress
     */
    long remaining() {
        return remaining;
    }

    /**
     * Whether a fragmented sequence is in progress.
     *
     * @return {@code true} between a first fragment and the last
     */
    boolean inProgress() {
        return remaining > 0;
    }

    /**
     * Adds a fragment (3.1.5.8): the first one of a sequence sizes the buffer.
     *
     * @param data the message buffer
     * @param offset where the fragment's data starts in it
     * @param length DataLength
     * @param remainingDataLength the fragment's RemainingDataLength
     * @return the reassembled message (a read-only view, valid until the next sequence starts)
     *         when this was the last fragment, else {@code null}
     */
    ByteBuffer add(ByteBuffer data, int offset, int length, long remainingDataLength) {
        if (remaining == 0) {
            start((int) (length + remainingDataLength));
        }
        remaining = remainingDataLength;
        buffer.put(buffer.position(), data, offset, length);
        buffer.position(buffer.position() + length);
        if (remainingDataLength != 0) {
            return null;
        }
        int total = buffer.position();
        view.limit(total).position(0);
        buffer.clear();
        return view;
    }

    /**
     * Hands the buffer of the message just completed to its holder: the next sequence gets a new
     * one (an upper layer that holds a message keeps its bytes).
     */
    void handOver() {
        buffer = null;
        view = null;
    }

    /** Drops the buffer while no sequence is in progress: an idle connection keeps none. */
    void releaseIfIdle() {
        if (remaining == 0) {
            buffer = null;
            view = null;
        }
    }

    /** Empties it (3.1.4.1, 3.1.7.2) and lets the memory go. */
    void clear() {
        remaining = 0;
        buffer = null;
        view = null;
    }

    /**
     * The bytes held now, for stating memory per connection.
     *
     * @return the buffer's capacity, 0 without one
     */
    int capacity() {
        return buffer == null ? 0 : buffer.capacity();
    }

    private void start(int total) {
        if (buffer == null || buffer.capacity() < total) {
            buffer = ByteBuffer.allocate(total);
            view = buffer.asReadOnlyBuffer();
        }
        buffer.clear();
    }
}
