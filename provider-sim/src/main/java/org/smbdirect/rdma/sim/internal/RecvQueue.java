package org.smbdirect.rdma.sim.internal;

/**
 * The receive queue of an endpoint, a ring of posted receives (structure of arrays, preallocated).
 * {@code [head, tail)} are posted. {@code tail} moves under the endpoint's lock (posts check the
 * endpoint's state there); {@code head} is advanced only by the one consumer, the connection's
 * actor (or, before any connection, the endpoint's own flush), after it is done with the slot.
 * Both are volatile: the consumer reads a slot after reading {@code tail}, and a post reuses a slot
 * after reading {@code head}, so each sees the other's writes to the slot without taking the lock
 * that posts and deliveries to many connections would otherwise contend for at every message.
 */
final class RecvQueue {
    final int depth;
    /** Array length minus one: a slot is a counter masked with it. */
    private final int mask;
    final int maxSge;
    final Object[] context;
    final int[] sgeCount;
    final SimRegion[] sgeRegion;
    final int[] sgeOffset;
    final int[] sgeLength;
    final int[] capacity;

    volatile long head;
    volatile long tail;

    RecvQueue(int depth, int maxSge) {
        this.depth = depth;
        int ring = Rings.capacity(depth);
        mask = ring - 1;
        this.maxSge = maxSge;
        context = new Object[ring];
        sgeCount = new int[ring];
        sgeRegion = new SimRegion[ring * maxSge];
        sgeOffset = new int[ring * maxSge];
        sgeLength = new int[ring * maxSge];
        capacity = new int[ring];
    }

    int slot(long counter) {
        return (int) counter & mask;
    }

    /**
     * Whether every region the slot's scatter list names is still valid: none was deregistered or
     * invalidated after posting.
     */
    boolean regionsValid(int s) {
        return SimRegion.allValid(sgeRegion, s * maxSge, sgeCount[s]);
    }

    void clear(int s) {
        context[s] = null;
        int base = s * maxSge;
        for (int i = 0; i < sgeCount[s]; i++) {
            sgeRegion[base + i] = null;
        }
        sgeCount[s] = 0;
        capacity[s] = 0;
    }

    long footprint() {
        return 4L * (context.length + sgeRegion.length) + 4L * (sgeCount.length + sgeOffset.length
                + sgeLength.length + capacity.length) + 8 * 16;
    }
}
