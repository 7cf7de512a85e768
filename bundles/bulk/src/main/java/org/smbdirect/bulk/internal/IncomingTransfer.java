package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.util.List;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;

/** One send of the peer, from its first control message until delivery. Guarded by the session's lock. */
final class IncomingTransfer {
    /** Where the transfer is. */
    enum State {
        /** Waiting for one of this side's in-flight slots. */
        QUEUED,
        /** Being read (READ path) or waiting for the sender's writes and COMPLETE (WRITE path). */
        MOVING,
        /** The data is here; delivered once every earlier send was. */
        READY,
        /** Abandoned (NOBUFS): nothing to deliver, later sends are not held up by it. */
        SKIPPED
    }

    final long sequence;
    /** READ path (this side reads) or WRITE path (the peer writes). */
    final boolean read;
    final int totalLength;
    /** Bytes that came inline with the request; the rest moves by RDMA. */
    final int firstPartLength;
    State state;
    /** The first part, copied from the request until the buffer exists. */
    byte[] firstPart;
    /** READ path: the sender's descriptors of the rest. */
    final List<BufferDescriptorV1> source;
    /** The whole send; handed to the application when delivered. */
    ByteBuffer buffer;
    /** WRITE path: the rest of {@link #buffer}, registered for the sender's RDMA Write. */
    RegisteredBuffer registration;
    /** Holds one of this side's in-flight slots: from start until delivered or skipped. */
    boolean holdsSlot;
    /** READ path: the next offset to read, reads outstanding, the first failure. */
    int nextOffset;
    int outstanding;
    Throwable failure;

    private IncomingTransfer(long sequence, boolean read, int totalLength, State state, byte[] firstPart,
            List<BufferDescriptorV1> source, ByteBuffer buffer) {
        this.sequence = sequence;
        this.read = read;
        this.totalLength = totalLength;
        this.firstPartLength = firstPart == null ? totalLength : firstPart.length;
        this.state = state;
        this.firstPart = firstPart;
        this.source = source;
        this.buffer = buffer;
    }

    /** A send that arrived whole (DATA). */
    static IncomingTransfer inline(long sequence, ByteBuffer data) {
        return new IncomingTransfer(sequence, false, data.remaining(), State.READY, null, List.of(), data);
    }

    /** A large send announced by READ_REQUEST or WRITE_REQUEST. */
    static IncomingTransfer large(long sequence, boolean read, int totalLength, byte[] firstPart,
            List<BufferDescriptorV1> source) {
        return new IncomingTransfer(sequence, read, totalLength, State.QUEUED, firstPart, source, null);
    }

    /** Bytes moved by RDMA. */
    int rdmaLength() {
        return totalLength - firstPartLength;
    }

    @Override
    public String toString() {
        return "incoming#" + sequence + "[" + (read ? "READ" : "WRITE") + ", " + totalLength + " bytes, " + state + "]";
    }
}
