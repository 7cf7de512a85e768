package org.smbdirect.rdma.sim.internal;

/**
 * The receive queue of an endpoint, a ring of posted receives (structure of arrays, preallocated).
 * {@code [head, tail)} are posted; {@code tail} moves under the endpoint's lock, {@code head} under
 * the lock too but only the connection's actor advances it, after it is done with the slot.
 */
final class RecvQueue {
    final int depth;
    final int maxSge;
    final Object[] context;
    final int[] sgeCount;
    final SimRegion[] sgeRegion;
    final int[] sgeOffset;
    final int[] sgeLength;
    final int[] capacity;

    long head;
    long tail;

    RecvQueue(int depth, int maxSge) {
        this.depth = depth;
        this.maxSge = maxSge;
        context = new Object[depth];
        sgeCount = new int[depth];
        sgeRegion = new SimRegion[depth * maxSge];
        sgeOffset = new int[depth * maxSge];
        sgeLength = new int[depth * maxSge];
        capacity = new int[depth];
    }

    int slot(long counter) {
        return (int) (counter % depth);
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
