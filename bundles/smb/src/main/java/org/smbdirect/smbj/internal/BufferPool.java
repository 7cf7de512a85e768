package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;

/**
 * Direct buffers for RDMA-channel requests of one connection, kept for the next request: smbj
 * hands its data over in heap arrays, which cannot be registered, and a direct buffer of 1 MiB
 * costs more to allocate (and zero) than to copy into. A few are kept; the rest go to the
 * garbage collector.
 */
final class BufferPool {
    private static final int KEEP = 8;
    private static final int MIN_CAPACITY = 64 * 1024;
    private final ArrayDeque<ByteBuffer> free = new ArrayDeque<>();

    /** A direct buffer with position 0 and limit {@code length}. */
    synchronized ByteBuffer take(int length) {
        for (int i = free.size(); i > 0; i--) {
            ByteBuffer b = free.poll();
            if (b.capacity() >= length) {
                return b.clear().limit(length);
            }
            free.add(b);
        }
        return ByteBuffer.allocateDirect(Math.max(length, MIN_CAPACITY)).limit(length);
    }

    /** Takes a buffer back once no peer can reach it any more. */
    synchronized void give(ByteBuffer buffer) {
        if (free.size() < KEEP) {
            free.add(buffer);
        }
    }
}
