package org.smbdirect.rdma.sim.internal;

import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A completion queue with the NDKPI completion rules. Completions live in a preallocated ring
 * (structure of arrays). The queue is also the actor that calls the notification handler, so
 * calls of the handler are serialised and never run on a consumer's thread.
 */
final class SimCompletionQueue extends Actor implements CompletionQueue {
    private static final OperationType[] TYPES = OperationType.values();
    private static final RdmaStatus[] STATUSES = RdmaStatus.values();
    private static final byte F_SOLICITED = 1;
    private static final byte F_INVALIDATED = 2;

    final SimProvider provider;
    private final CompletionNotificationHandler handler;
    private final int depth;
    /** Array length minus one: an entry's index is its absolute count masked with it. */
    private final int mask;
    private final Object[] context;
    private final SimEndpoint[] endpoint;
    private final byte[] type;
    private final byte[] status;
    private final byte[] flag;
    private final int[] bytes;
    private final int[] token;
    /** Absolute index of the oldest completion held. Guarded by this. */
    private long popCount;
    /** Absolute index of the next completion. Guarded by this. */
    private long pushCount;
    /** {@link #pushCount} when the handler was last called. Guarded by this. */
    private long pushCountAtLastCallback;
    /** The pending arm or {@code null}. Guarded by this. */
    private ArmType armed;
    /** Satisfied arms whose callback has not started yet. Guarded by this. */
    private int callbacksDue;
    private boolean overflowed;
    private boolean closed;
    /** The provider shut down: no more completions or callbacks. */
    private boolean stopped;
    /** Endpoints (not yet closed) that report here. Guarded by this. */
    private final List<SimEndpoint> users = new ArrayList<>();

    SimCompletionQueue(SimProvider provider, int depth, CompletionNotificationHandler handler) {
        super(provider.scheduler);
        this.provider = provider;
        this.handler = handler;
        this.depth = depth;
        int ring = Rings.capacity(depth);
        mask = ring - 1;
        context = new Object[ring];
        endpoint = new SimEndpoint[ring];
        type = new byte[ring];
        status = new byte[ring];
        flag = new byte[ring];
        bytes = new int[ring];
        token = new int[ring];
    }

    @Override
    public int depth() {
        return depth;
    }

    /**
     * Queues a completion (called by connection actors, or by a consumer thread closing an idle
     * endpoint). On overflow the completion is lost and every endpoint reporting here is ended.
     */
    void push(Object ctx, SimEndpoint ep, OperationType t, RdmaStatus st, int n, boolean solicited, boolean invalidated,
            int invalidatedToken) {
        List<SimEndpoint> toFail = null;
        boolean wake = false;
        synchronized (this) {
            if (closed || overflowed || stopped) {
                return;
            }
            if (pushCount - popCount == depth) {
                overflowed = true;
                toFail = new ArrayList<>(users);
            } else {
                int i = (int) pushCount & mask;
                context[i] = ctx;
                endpoint[i] = ep;
                type[i] = (byte) t.ordinal();
                status[i] = (byte) st.ordinal();
                flag[i] = (byte) ((solicited ? F_SOLICITED : 0) | (invalidated ? F_INVALIDATED : 0));
                bytes[i] = n;
                token[i] = invalidatedToken;
                pushCount++;
                if (armed != null && armed.isSatisfiedBy(st, solicited)) {
                    armed = null;
                    callbacksDue++;
                    wake = true;
                }
            }
        }
        if (wake) {
            kick();
        }
        if (toFail != null) {
            SimLog.warn("completion queue of " + provider.name() + " (depth " + depth + ") overflowed; ending "
                    + toFail.size() + " endpoint(s)");
            for (SimEndpoint e : toFail) {
                e.fail(RdmaStatus.COMPLETION_QUEUE_OVERFLOW, "completion queue overflow (depth " + depth + ")");
            }
        }
    }

    @Override
    public int getResults(CompletionResult[] results) {
        return drain(results, false);
    }

    @Override
    public int getResultsEx(CompletionResult[] results) {
        return drain(results, true);
    }

    private synchronized int drain(CompletionResult[] results, boolean extended) {
        int n = 0;
        while (n < results.length && popCount < pushCount) {
            int i = (int) popCount & mask;
            boolean inv = extended && (flag[i] & F_INVALIDATED) != 0;
            results[n++].set(context[i], endpoint[i], TYPES[type[i]], STATUSES[status[i]], bytes[i],
                    (flag[i] & F_SOLICITED) != 0, inv, inv ? token[i] : 0);
            context[i] = null;
            endpoint[i] = null;
            popCount++;
        }
        return n;
    }

    @Override
    public void arm(ArmType armType) {
        if (armType == null) {
            return;
        }
        boolean wake = false;
        synchronized (this) {
            if (closed || stopped) {
                return;
            }
            armed = armed == null ? armType : armed.combine(armType);
            // NDKPI: a completion that arrived since the last callback and satisfies the arm
            // satisfies it at once (the callback still runs on a fabric thread, never in here).
            for (long k = Math.max(popCount, pushCountAtLastCallback); k < pushCount; k++) {
                int i = (int) k & mask;
                if (armed.isSatisfiedBy(STATUSES[status[i]], (flag[i] & F_SOLICITED) != 0)) {
                    armed = null;
                    callbacksDue++;
                    wake = true;
                    break;
                }
            }
        }
        if (wake) {
            kick();
        }
    }

    @Override
    protected void act() {
        for (;;) {
            synchronized (this) {
                if (callbacksDue == 0) {
                    return;
                }
                callbacksDue--;
                pushCountAtLastCallback = pushCount;
            }
            Scheduler.beforeConsumerCall();
            try {
                handler.onCompletionNotification(this);
            } catch (Throwable t) {
                SimLog.error("completion notification handler failed", t);
            } finally {
                Scheduler.afterConsumerCall();
            }
        }
    }

    synchronized void attach(SimEndpoint ep) throws RdmaException {
        if (closed) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "completion queue is closed");
        }
        if (overflowed) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "completion queue has overflowed");
        }
        users.add(ep);
    }

    synchronized void detach(SimEndpoint ep) {
        users.remove(ep);
    }

    synchronized boolean isOverflowed() {
        return overflowed;
    }

    @Override
    public void close() throws RdmaException {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (!users.isEmpty()) {
                throw new RdmaException(RdmaStatus.INVALID_STATE,
                        "completion queue still used by " + users.size() + " open endpoint(s)");
            }
            closed = true;
            armed = null;
            callbacksDue = 0;
            popCount = pushCount;
            for (int i = 0; i < depth; i++) {
                context[i] = null;
                endpoint[i] = null;
            }
        }
        provider.forget(this);
    }

    /**
     * When the provider shuts down: no more completions or callbacks, but what is queued stays
     * retrievable until the consumer closes the queue or drops it.
     */
    void shutdown() {
        synchronized (this) {
            users.clear();
            armed = null;
            callbacksDue = 0;
            stopped = true;
        }
    }

    @Override
    public String toString() {
        return "SimCompletionQueue[" + provider.name() + ", depth=" + depth + "]";
    }
}
