package org.smbdirect.rdma.sim.internal;

/**
 * Ring sizing for the queues' preallocated arrays: the arrays hold the next power of two at or
 * above the queue's depth, so that a slot is the absolute counter masked, not divided (a 64-bit
 * division on every post, completion and poll was a tenth of a message's time in the fabric). The
 * depth still bounds how many entries are held.
 */
final class Rings {
    private Rings() {
    }

    /**
     * @param depth the queue's depth, at least 1
     * @return the array length: the least power of two not below {@code depth}
     */
    static int capacity(int depth) {
        if (depth < 1 || depth > 1 << 30) {
            throw new IllegalArgumentException("queue depth " + depth + " outside [1, 2^30]");
        }
        return depth == 1 ? 1 : Integer.highestOneBit(depth - 1) << 1;
    }
}
