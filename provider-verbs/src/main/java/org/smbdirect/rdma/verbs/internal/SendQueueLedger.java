package org.smbdirect.rdma.verbs.internal;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The send queue of one endpoint's queue pair, as a ledger: which request each slot holds, in the
 * order the device completes them, and how many of the consumer's and the provider's own slots are
 * taken. It decides which requests reach the device unsignaled and accounts for them when a
 * reported request after them completes. No native call and no lock of its own: the posting side
 * runs under the endpoint's send lock, the completion side under the send completion queue's lock.
 *
 * <p>Why requests go unsignaled: on Soft-RoCE every work completion costs the device's completer
 * and the poller work. A {@link #SILENT} consumer request is left unsignaled except one in half the
 * consumer's depth (as perftest's {@code --cq-mod}), so that its slots come back; a memory window
 * bind is left unsignaled except one in {@link #SIGNALED_BIND_EVERY}, since the request that hands
 * its token to the peer follows it anyway. A reliable connection's send queue completes in order
 * and a failed request reports itself, so an unsignaled request before a reported one completed
 * successfully.
 *
 * <p>A request is recorded before it is handed to the device, and may stay recorded and unposted
 * for a while: a {@link org.smbdirect.rdma.RequestFlags#DEFER} request (a consumer's, or the memory
 * window bind of a registration made with the flag) waits for the next request posted without it,
 * and all reach the device in one post.
 *
 * <p>Once a request failed before reaching the device the ledger is doomed: later consumer
 * requests, and deferred ones that will now never be posted, are kept here as synthetic ones and
 * complete, in order, without the device.
 */
final class SendQueueLedger {
    /** Send-queue slots kept for the provider's own requests (memory window binds, their invalidates). */
    static final int BIND_RESERVE = 32;
    /**
     * One memory window bind in this many is signaled, so that binds posted without any other
     * request after them still complete within the reserve.
     */
    static final int SIGNALED_BIND_EVERY = BIND_RESERVE / 2;

    /** The consumer asked not to see the request's success. */
    static final byte SILENT = 1;
    /** The provider's own request (a bind, or a local invalidate behind one). */
    static final byte INTERNAL = 2;
    /** Never handed to the device: completes INVALID_TOKEN in order, then ends the connection. */
    static final byte SYNTHETIC_INVALID = 4;
    /** Never handed to the device: posted after a synthetic failure, completes FLUSHED. */
    static final byte SYNTHETIC_FLUSH = 8;
    static final byte SYNTHETIC = SYNTHETIC_INVALID | SYNTHETIC_FLUSH;
    /** Handed to the device without IBV_SEND_SIGNALED: completes with the next reported request. */
    static final byte UNSIGNALED = 16;

    private final int consumerDepth;
    private final int internalReserve;
    private final int size;
    /** A silent consumer request is signaled when it would make the unsignaled run this long. */
    private final int signaledSilentEvery;
    private final Consumer<VerbsMemoryRegion> bindSettled;

    private final Object[] context;
    private final byte[] op;
    private final byte[] flag;
    private final int[] bytes;
    private final VerbsMemoryRegion[] region;
    /** Number of requests ever recorded, posted or not; written on the posting side. */
    private volatile long recorded;
    /** Number of requests ever handed to the device (or made synthetic); written on the posting side. */
    private volatile long posted;
    /** Number of requests completed; on the completion side. */
    private long completed;
    /** A request failed before reaching the device: later ones are flushed without reaching it. */
    private volatile boolean doomed;
    /** Sequence number of the last signaled request recorded, -1 before the first; posting side. */
    private long lastSignaled = -1;
    /** Unsignaled requests recorded since the last signaled one; posting side. */
    private int unsignaledRun;
    /** {@link #lastSignaled} and {@link #unsignaledRun} before the last request was recorded. */
    private long lastSignaledBefore = -1;
    private int unsignaledRunBefore;
    /** Unsignaled requests posted whose completion is not accounted yet (part of the two counts below). */
    private final AtomicInteger unsignaledInFlight = new AtomicInteger();
    private final AtomicInteger consumerRequests = new AtomicInteger();
    private final AtomicInteger internalRequests = new AtomicInteger();

    /**
     * @param consumerDepth the consumer's send-queue depth
     * @param internalReserve slots for the provider's own requests on top of it (0 without memory windows)
     * @param bindSettled told of each memory window bind the ledger finds completed
     */
    SendQueueLedger(int consumerDepth, int internalReserve, Consumer<VerbsMemoryRegion> bindSettled) {
        this.consumerDepth = consumerDepth;
        this.internalReserve = internalReserve;
        this.size = consumerDepth + internalReserve;
        this.signaledSilentEvery = Math.max(1, consumerDepth / 2);
        this.bindSettled = bindSettled;
        this.context = new Object[size];
        this.op = new byte[size];
        this.flag = new byte[size];
        this.bytes = new int[size];
        this.region = new VerbsMemoryRegion[size];
    }

    /** The queue pair's send-queue size: the consumer's depth plus the reserve. */
    int size() {
        return size;
    }

    // ------------------------------------------------------------------ budgets (any thread)

    /** Takes one of the consumer's slots; {@code false} when all are taken. */
    boolean tryReserveConsumer() {
        int n = consumerRequests.get();
        while (n < consumerDepth) {
            if (consumerRequests.compareAndSet(n, n + 1)) {
                return true;
            }
            n = consumerRequests.get();
        }
        return false;
    }

    /** Gives back a consumer slot whose request was not posted after all. */
    void unreserveConsumer() {
        consumerRequests.decrementAndGet();
    }

    /** Whether a slot of the provider's reserve is free. */
    boolean internalRoom() {
        return internalRequests.get() < internalReserve;
    }

    /**
     * Requests whose completion is still due. Unsignaled ones are left out: one that completed
     * reports nothing unless a reported request follows it, and once the queue pair is in error
     * the device finishes or flushes it either way.
     */
    int outstanding() {
        return consumerRequests.get() + internalRequests.get() - unsignaledInFlight.get();
    }

    // ------------------------------------------------------------------ posting side (send lock)

    boolean doomed() {
        return doomed;
    }

    /** The sequence number the next request recorded gets. */
    long next() {
        return recorded;
    }

    /** Requests recorded and not yet handed to the device (deferred). */
    int unposted() {
        return (int) (recorded - posted);
    }

    /** Whether a signaled request was recorded after the request numbered {@code seq}. */
    boolean signaledAfter(long seq) {
        return lastSignaled > seq;
    }

    /** Whether the next memory window bind is signaled. */
    boolean signalNextBind() {
        return unsignaledRun + 1 >= SIGNALED_BIND_EVERY;
    }

    /**
     * The flags a consumer request is posted with: {@link #UNSIGNALED} added to a silent one
     * (but a local invalidate, whose completion frees its window) unless it is its run's turn.
     */
    byte signaling(byte flags, int opcode) {
        if ((flags & SILENT) != 0 && opcode != VerbsNative.OP_LOCAL_INV && unsignaledRun + 1 < signaledSilentEvery) {
            return (byte) (flags | UNSIGNALED);
        }
        return flags;
    }

    /**
     * Records a request in the next slot before it is handed to the device, and returns the slot
     * (carried in the work request id). {@link #posted} or {@link #unrecord} follows, for a
     * deferred request when the chain it waits in is posted.
     */
    int record(int opcode, Object ctx, byte flags, int length, VerbsMemoryRegion r) {
        long seq = recorded;
        int slot = (int) (seq % size);
        context[slot] = ctx;
        op[slot] = (byte) opcode;
        flag[slot] = flags;
        bytes[slot] = length;
        region[slot] = r;
        if ((flags & INTERNAL) != 0) {
            internalRequests.incrementAndGet();
        }
        if ((flags & UNSIGNALED) != 0) {
            unsignaledInFlight.incrementAndGet();
        }
        lastSignaledBefore = lastSignaled;
        unsignaledRunBefore = unsignaledRun;
        if ((flags & UNSIGNALED) != 0) {
            unsignaledRun++;
        } else {
            unsignaledRun = 0;
            lastSignaled = seq;
        }
        recorded = seq + 1;
        return slot;
    }

    /**
     * The device refused the request recorded last, in {@code slot}, and the caller learns of it:
     * it never happened.
     */
    void unrecord(int slot) {
        recorded--;
        lastSignaled = lastSignaledBefore;
        unsignaledRun = unsignaledRunBefore;
        if ((flag[slot] & INTERNAL) != 0) {
            internalRequests.decrementAndGet();
        }
        if ((flag[slot] & UNSIGNALED) != 0) {
            unsignaledInFlight.decrementAndGet();
        }
        context[slot] = null;
        region[slot] = null;
    }

    /** The device took the oldest {@code n} requests recorded and not yet posted. */
    void posted(int n) {
        posted += n;
    }

    /**
     * The deferred requests recorded and not posted will never reach the device (its post failed,
     * or the connection ended): they become synthetic flushes, and the ledger is doomed. Returns
     * how many there were.
     */
    int abandonUnposted() {
        int n = 0;
        for (long seq = posted; seq < recorded; seq++, n++) {
            int slot = (int) (seq % size);
            if ((flag[slot] & UNSIGNALED) != 0) {
                unsignaledInFlight.decrementAndGet();
            }
            // a deferred bind stays the provider's own: its window is settled, nobody is told
            flag[slot] = (byte) (SYNTHETIC_FLUSH | (flag[slot] & INTERNAL));
        }
        if (n > 0) {
            doomed = true;
            posted = recorded;
        }
        return n;
    }

    /**
     * Records a consumer request that never reaches the device (its slot is reserved) and dooms the
     * ledger: it completes in order, through {@link #nextSynthetic}. No deferred request may be
     * waiting (they would follow it).
     */
    void recordSynthetic(int opcode, Object ctx, byte flags, VerbsMemoryRegion r) {
        if (recorded != posted) {
            throw new IllegalStateException(unposted() + " deferred requests wait before a synthetic one");
        }
        long seq = posted;
        int slot = (int) (seq % size);
        context[slot] = ctx;
        op[slot] = (byte) opcode;
        flag[slot] = flags;
        bytes[slot] = 0;
        region[slot] = r;
        doomed = true;
        recorded = seq + 1;
        posted = seq + 1;
    }

    // ------------------------------------------------------------------ completion side (send CQ's lock)

    /**
     * A reported request of {@code slot} completed: the unsignaled requests before it are settled
     * first. Returns whether {@code slot} is now next in line; it is not when it held an unsignaled
     * bind that was settled already because the ledger was doomed (its flush is ignored).
     */
    boolean reported(int slot) {
        // recorded, not posted: the requests of one chain are counted as posted only after the
        // post returns, and a later one of them may already have completed
        while (completed < recorded) {
            int s = (int) (completed % size);
            if (s == slot || (flag[s] & UNSIGNALED) == 0) {
                break;
            }
            settleUnsignaled(s);
        }
        return (int) (completed % size) == slot;
    }

    /**
     * The slot of the next request when it is synthetic, after settling the unsignaled requests
     * before it if the ledger is doomed (nothing reported follows them on the device any more: they
     * completed, or the queue pair's error flushes them, and a late report is then ignored);
     * -1 when the next request is a real one or there is none.
     */
    int nextSynthetic() {
        while (completed < posted) {
            int slot = (int) (completed % size);
            byte f = flag[slot];
            if ((f & UNSIGNALED) != 0 && doomed) {
                settleUnsignaled(slot);
                continue;
            }
            return (f & SYNTHETIC) != 0 ? slot : -1;
        }
        return -1;
    }

    Object context(int slot) {
        return context[slot];
    }

    int opcode(int slot) {
        return op[slot];
    }

    byte flags(int slot) {
        return flag[slot];
    }

    int bytes(int slot) {
        return bytes[slot];
    }

    VerbsMemoryRegion region(int slot) {
        return region[slot];
    }

    /** The request next in line, in {@code slot}, completed (reported, failed or flushed): its slot is free. */
    void retire(int slot) {
        byte f = flag[slot];
        context[slot] = null;
        region[slot] = null;
        completed++;
        if ((f & UNSIGNALED) != 0) {
            unsignaledInFlight.decrementAndGet(); // it failed, or was flushed
        }
        if ((f & INTERNAL) != 0) {
            internalRequests.decrementAndGet();
        } else {
            consumerRequests.decrementAndGet();
        }
    }

    /** An unsignaled request completed successfully: a bind settles its window; a silent request frees its slot. */
    private void settleUnsignaled(int slot) {
        VerbsMemoryRegion r = region[slot];
        boolean bind = (flag[slot] & INTERNAL) != 0;
        retire(slot);
        if (bind) {
            bindSettled.accept(r);
        }
    }
}
