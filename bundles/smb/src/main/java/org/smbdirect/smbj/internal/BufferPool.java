package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;

import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.SmbDirectException;

/**
 * Direct buffers for RDMA-channel requests of one connection, kept for the next request: smbj
 * hands its data over in heap arrays, which cannot be registered, and a direct buffer of 1 MiB
 * costs more to allocate (and zero) than to copy into. A few are kept; the rest go to the
 * garbage collector. A buffer comes back only once no peer can reach it.
 */
final class BufferPool {
    private static final System.Logger LOG = System.getLogger(BufferPool.class.getName());
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

    /**
     * Deregisters (MS-SMBD 3.1.4.4) and gives the buffer back (a split request's parts have none
     * of their own); false when deregistration failed: the peer may still reach the memory, which
     * is then never reused.
     *
     * @param registration the registration, or {@code null}
     * @param buffer its buffer, or {@code null}
     * @return whether the registration ended
     */
    boolean release(RegisteredBuffer registration, ByteBuffer buffer) {
        if (registration != null) {
            try {
                registration.deregister();
            } catch (SmbDirectException e) {
                LOG.log(System.Logger.Level.WARNING, "deregistering " + registration + " failed: " + e.getMessage());
                registration.close();
                return false;
            }
        }
        if (buffer != null) {
            give(buffer);
        }
        return true;
    }
}
