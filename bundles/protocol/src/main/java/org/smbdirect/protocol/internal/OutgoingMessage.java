package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.CompletableFuture;

/**
 * An entry of Connection.SendQueue (MS-SMBD 3.1.1.1): one upper-layer message with its optional
 * remote token to invalidate, sent as one or more Data Transfer messages (3.1.5.4). Entries are
 * pooled per connection so that sending allocates nothing.
 */
final class OutgoingMessage {
    /** The caller's buffer; bytes [start, start + length) are the message. */
    ByteBuffer data;
    int start;
    int length;
    /** A gathering send's buffers instead of {@link #data}: the message is their bytes in order. */
    ByteBuffer[] parts;
    /** Bytes already placed into posted fragments. */
    int offset;
    /** Whether at least one fragment was posted (an empty message has exactly one). */
    boolean started;
    boolean hasToken;
    int remoteToken;
    /** Fragments posted and not yet completed. */
    int inFlight;
    /** An empty Data Transfer message the engine itself sends (credits, keepalive answer). */
    boolean internal;
    /** Whether the completion was reported; it is reported once. */
    boolean finished;

    CompletableFuture<Void> future;
    CompletionHandler<Void, Object> handler;
    Object attachment;

    boolean fullyPosted() {
        return started && offset >= length;
    }

    /**
     * Copies {@code n} bytes of the message, from {@link #offset} on, into {@code dst} at {@code
     * index} (absolute; the buffers' positions are not changed).
     */
    void copyNext(ByteBuffer dst, int index, int n) {
        if (parts == null) {
            dst.put(index, data, start + offset, n);
            return;
        }
        int skip = offset;
        for (ByteBuffer p : parts) {
            int have = p.remaining();
            if (skip >= have) {
                skip -= have;
                continue;
            }
            int take = Math.min(have - skip, n);
            dst.put(index, p, p.position() + skip, take);
            index += take;
            n -= take;
            skip = 0;
            if (n == 0) {
                return;
            }
        }
    }

    void clear() {
        data = null;
        parts = null;
        start = 0;
        length = 0;
        offset = 0;
        started = false;
        hasToken = false;
        remoteToken = 0;
        inFlight = 0;
        internal = false;
        finished = false;
        future = null;
        handler = null;
        attachment = null;
    }

    void succeed() {
        if (finished) {
            return;
        }
        finished = true;
        if (future != null) {
            future.complete(null);
        } else if (handler != null) {
            handler.completed(null, attachment);
        }
    }

    void fail(Throwable t) {
        if (finished) {
            return;
        }
        finished = true;
        if (future != null) {
            future.completeExceptionally(t);
        } else if (handler != null) {
            handler.failed(t, attachment);
        }
    }
}
