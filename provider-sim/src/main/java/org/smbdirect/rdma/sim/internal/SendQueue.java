package org.smbdirect.rdma.sim.internal;

/**
 * The send queue of an endpoint: sends, send-and-invalidates, RDMA Reads and Writes and local
 * invalidates, in posted order. Structure of arrays indexed by slot, preallocated for the endpoint's
 * depth ({@link Rings}), so that posting and completing allocate nothing.
 *
 * <p>Four monotonic counters split the ring: {@code [head, next)} started (arrived at the peer, or
 * executed), awaiting in-order completion; {@code [next, sent)} transmitted, in flight to the peer;
 * {@code [sent, tail)} posted, not yet transmitted. Slots are written by a posting thread only while
 * free and under the endpoint's lock; {@code tail} and {@code head} move under that lock; {@code
 * next}, {@code sent} and the slot states belong to the connection's actor.
 */
final class SendQueue {
    static final byte OP_SEND = 1;
    static final byte OP_SEND_INVALIDATE = 2;
    static final byte OP_WRITE = 3;
    static final byte OP_READ = 4;
    static final byte OP_INVALIDATE = 5;

    static final byte POSTED = 0;
    static final byte STARTED = 1;
    /** Finished with a status (an error detected when starting), awaiting in-order completion. */
    static final byte FAILED = 2;

    final int depth;
    /** Array length minus one: a slot is a counter masked with it. */
    private final int mask;
    final int maxSge;
    final Object[] context;
    final byte[] op;
    final int[] flags;
    final int[] sgeCount;
    final SimRegion[] sgeRegion;
    final int[] sgeOffset;
    final int[] sgeLength;
    final int[] length;
    final long[] remoteOffset;
    final int[] remoteToken;
    final SimRegion[] subject;
    final byte[] state;
    final byte[] status;
    final long[] due;
    /** Receiver-not-ready retries spent on the request (rdma_cm's rnr_retry_count bounds them). */
    final byte[] rnrTries;
    /** Capture: the first packet sequence number of the request. */
    final int[] psn;
    /**
     * Inline copies when the endpoint allows inline data: each slot's array is allocated the first
     * time that slot carries inline data (an idle endpoint holds none), then reused.
     */
    final byte[][] inline;
    private final int inlineThreshold;

    long head;
    long next;
    long sent;
    long tail;

    SendQueue(int depth, int maxSge, int inlineThreshold) {
        this.depth = depth;
        int ring = Rings.capacity(depth);
        mask = ring - 1;
        this.maxSge = maxSge;
        context = new Object[ring];
        op = new byte[ring];
        flags = new int[ring];
        sgeCount = new int[ring];
        sgeRegion = new SimRegion[ring * maxSge];
        sgeOffset = new int[ring * maxSge];
        sgeLength = new int[ring * maxSge];
        length = new int[ring];
        remoteOffset = new long[ring];
        remoteToken = new int[ring];
        subject = new SimRegion[ring];
        state = new byte[ring];
        status = new byte[ring];
        due = new long[ring];
        rnrTries = new byte[ring];
        psn = new int[ring];
        this.inlineThreshold = inlineThreshold;
        inline = inlineThreshold > 0 ? new byte[ring][] : null;
    }

    /** The slot's inline array; called under the endpoint's lock while the slot is free. */
    byte[] inlineCopy(int slot) {
        byte[] b = inline[slot];
        if (b == null) {
            b = new byte[inlineThreshold];
            inline[slot] = b;
        }
        return b;
    }

    int slot(long counter) {
        return (int) counter & mask;
    }

    /**
     * Whether every region the slot's gather list names is still valid: none was deregistered or
     * invalidated after posting.
     */
    boolean regionsValid(int s) {
        return SimRegion.allValid(sgeRegion, s * maxSge, sgeCount[s]);
    }

    /** Forgets a completed slot's references so that the collector can reclaim the consumer's objects. */
    void clear(int s) {
        context[s] = null;
        subject[s] = null;
        int base = s * maxSge;
        for (int i = 0; i < sgeCount[s]; i++) {
            sgeRegion[base + i] = null;
        }
        sgeCount[s] = 0;
        state[s] = POSTED;
        status[s] = 0;
        due[s] = 0;
    }

    /** Approximate heap bytes of this queue, for the memory statement. */
    long footprint() {
        long refs = 4L * (context.length + sgeRegion.length + subject.length);
        long ints = 4L * (flags.length + psn.length + sgeCount.length + sgeOffset.length + sgeLength.length + length.length
                + remoteToken.length);
        long longs = 8L * (remoteOffset.length + due.length);
        long bytes = op.length + state.length + status.length;
        long in = inline == null ? 0 : (long) inline.length * (16 + inlineThreshold);
        return refs + ints + longs + bytes + in + 16 * 16;
    }
}
