package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;

/**
 * Allocates the direct memory a transfer moves through: the receiver's buffer for a large send,
 * and the sender's copy of a heap buffer (RDMA needs memory that does not move).
 */
@FunctionalInterface
interface Allocator {
    /** Direct buffers from the JVM. */
    Allocator DIRECT = ByteBuffer::allocateDirect;

    /**
     * Allocates a direct buffer.
     *
     * @param size bytes
     * @return the buffer, position 0, limit {@code size}
     * @throws OutOfMemoryError when the memory cannot be had
     */
    ByteBuffer allocate(int size);
}
