package org.smbdirect.rdma.verbs.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

import com.ibm.disni.verbs.IbvCQ;
import com.ibm.disni.verbs.IbvCompChannel;
import com.ibm.disni.verbs.SVCReqNotify;
import com.ibm.disni.verbs.impl.NatObject;

/**
 * A completion queue over a verbs CQ with its own completion channel (both created through DiSNI).
 *
 * <p>Completions taken from the verbs CQ go through a software ring of {@link #depth()} entries
 * (the queue the consumer sees). Requests the consumer did not ask to hear of (successful {@link
 * org.smbdirect.rdma.RequestFlags#SILENT_SUCCESS} requests, memory window binds) are consumed on
 * the way. The ring makes the NDK arm rules implementable over {@code ibv_req_notify_cq}: arming
 * requests a verbs notification first and then moves whatever the verbs CQ already holds into
 * the ring, so no completion can slip between the two; the provider's completion thread calls
 * the handler, never {@link #arm} itself.
 *
 * <p>Mapping of arm types onto verbs: {@link ArmType#ANY} requests a notification for any
 * completion ({@code solicited_only = 0}); {@link ArmType#SOLICITED} and {@link ArmType#ERRORS}
 * request {@code solicited_only = 1}, which devices raise for receives of solicited sends and for
 * failed completions (errors are then filtered here; Soft-RoCE raises nothing for a failed send, so
 * the completion thread also polls every queue five times a second). Verbs work completions do not
 * say whether a receive was solicited, so {@link CompletionResult#solicited()} is always {@code
 * false} here, and an arm for {@link ArmType#SOLICITED} made while new completions are queued is
 * satisfied at once (they may be solicited).
 */
final class VerbsCompletionQueue implements CompletionQueue {
    private static final int POLL_BATCH = 64;

    /** One queued completion. */
    static final class Entry {
        Object context;
        Endpoint endpoint;
        OperationType type;
        RdmaStatus status;
        int bytes;
        boolean tokenInvalidated;
        int token;
        long seq;

        void copyFrom(Entry e) {
            context = e.context;
            endpoint = e.endpoint;
            type = e.type;
            status = e.status;
            bytes = e.bytes;
            tokenInvalidated = e.tokenInvalidated;
            token = e.token;
        }

        void clear() {
            context = null;
            endpoint = null;
        }
    }

    private final VerbsProvider provider;
    private final int depth;
    private final CompletionNotificationHandler handler;
    private final IbvCompChannel channel;
    private final IbvCQ cq;
    private final SVCReqNotify notifyAny;
    private final SVCReqNotify notifySolicited;
    final long cqPtr;
    final int channelFd;

    private final ReentrantLock lock = new ReentrantLock();
    private final Entry[] ring;
    private int head;
    private int size;
    private long arrivals;
    private long lastNotified;
    private long lastError;
    private final Entry scratch = new Entry();
    private final ByteBuffer records;
    private final long recordsAddress;
    private ArmType armed;
    /**
     * What the device was last asked to signal ({@code ibv_req_notify_cq}: ANY or SOLICITED), or
     * {@code null} once an event showed the request fired. Lock held.
     */
    private ArmType deviceRequest;
    /** Requests made of the device. */
    private long deviceRequests;
    /** Of those, requests for any completion (the others ask for solicited ones only). */
    private long anyRequests;
    /** Work completions taken from the device; under the lock. */
    private long workCompletions;
    private boolean notificationPending;
    private boolean overflowed;
    private int hwEntries;
    private int reserved;
    private boolean nativeReleased;
    /** Closed by the consumer while closed endpoints still used it. */
    private boolean releaseWhenUnused;
    private volatile boolean closed;
    private final Set<VerbsEndpoint> users = ConcurrentHashMap.newKeySet();

    VerbsCompletionQueue(VerbsProvider provider, int depth, CompletionNotificationHandler handler) throws RdmaException {
        this.provider = provider;
        this.depth = depth;
        this.handler = handler;
        this.ring = new Entry[depth];
        for (int i = 0; i < depth; i++) {
            ring[i] = new Entry();
        }
        this.records = ByteBuffer.allocateDirect(POLL_BATCH * VerbsNative.WC_SIZE).order(ByteOrder.nativeOrder());
        this.recordsAddress = VerbsNative.bufferAddress(records);
        IbvCompChannel ch = null;
        IbvCQ q = null;
        try {
            ch = provider.context.createCompChannel();
            if (ch == null) {
                throw new RdmaException(RdmaStatus.DEVICE_ERROR, "ibv_create_comp_channel failed");
            }
            // The verbs CQ holds what the endpoints using it can have outstanding; it grows as
            // endpoints are created (reserve), the ring holds what the consumer asked for.
            int initial = Math.min(provider.maxCqe, Math.max(16, Math.min(depth, 1024)));
            q = provider.context.createCQ(ch, initial, 0);
            if (q == null) {
                throw new RdmaException(RdmaStatus.DEVICE_ERROR, "ibv_create_cq failed");
            }
            this.channel = ch;
            this.cq = q;
            this.cqPtr = ((NatObject) q).getObjId();
            this.channelFd = VerbsNative.compChannelFd(((NatObject) ch).getObjId());
            this.hwEntries = VerbsNative.cqEntries(cqPtr);
            this.notifyAny = q.reqNotification(false);
            this.notifySolicited = q.reqNotification(true);
            // Keep a verbs notification requested at all times, so that failures are noticed
            // (and their connections ended) even while the consumer has not armed the queue.
            notifySolicited.execute();
            deviceRequest = ArmType.SOLICITED;
        } catch (IOException e) {
            destroyQuietly(q, ch);
            throw native_(e, "creating a completion queue");
        }
    }

    private static RdmaException native_(IOException e, String what) {
        if (e instanceof NativeException) {
            return ((NativeException) e).toRdmaException(what);
        }
        return new RdmaException(RdmaStatus.DEVICE_ERROR, what + ": " + e.getMessage(), e);
    }

    private static void destroyQuietly(IbvCQ q, IbvCompChannel ch) {
        try {
            if (q != null) {
                q.destroyCQ();
            }
            if (ch != null) {
                ch.destroyCompChannel();
            }
        } catch (IOException | RuntimeException e) {
            VerbsProvider.LOG.log(Level.WARNING, "releasing a completion queue failed: " + e.getMessage());
        }
    }

    VerbsProvider provider() {
        return provider;
    }

    /** How many times the device was asked for a notification ({@code ibv_req_notify_cq}; tests). */
    long deviceRequests() {
        lock.lock();
        try {
            return deviceRequests;
        } finally {
            lock.unlock();
        }
    }

    /** How many of the device requests asked for any completion, not solicited ones only (tests). */
    long anyRequests() {
        lock.lock();
        try {
            return anyRequests;
        } finally {
            lock.unlock();
        }
    }

    /** How many endpoints use the queue (released endpoints leave it; tests). */
    int endpoints() {
        return users.size();
    }

    /** How many work completions were taken from the device ({@code ibv_poll_cq}; tests). */
    long workCompletions() {
        lock.lock();
        try {
            return workCompletions;
        } finally {
            lock.unlock();
        }
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public int depth() {
        return depth;
    }

    @Override
    public int getResults(CompletionResult[] results) {
        return take(results, false);
    }

    @Override
    public int getResultsEx(CompletionResult[] results) {
        return take(results, true);
    }

    private int take(CompletionResult[] results, boolean extended) {
        lock.lock();
        try {
            pollHardware();
            int n = Math.min(size, results.length);
            for (int i = 0; i < n; i++) {
                Entry e = ring[head];
                boolean inv = extended && e.tokenInvalidated;
                results[i].set(e.context, e.endpoint, e.type, e.status, e.bytes, false, inv, e.token);
                e.clear();
                head = (head + 1) % ring.length;
                size--;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void arm(ArmType type) {
        if (type == null) {
            throw new NullPointerException("type");
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            armed = armed == null ? type : armed.combine(type);
            // What is already queued may satisfy the arm (new completions may be solicited ones).
            // Only otherwise ask the device, then look again: nothing slips in between, and the
            // device is never left with a request for any completion that no arm needs.
            pollHardware();
            evaluate(true);
            if (armed != null && !(armed == ArmType.ANY && provider.cqLoop.asksBeforeWaiting())) {
                requestNotification();
                pollHardware();
                evaluate(true);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Busy polling ({@link CqEventLoop}): the completion thread, about to wait, asks the device
     * for the signal that this queue's arm needs (or the solicited-only one that notices failures)
     * and takes what arrived meanwhile. While the thread polls, ANY arms ask the device nothing.
     */
    void prepareToWait() {
        lock.lock();
        try {
            if (nativeReleased) {
                return;
            }
            pollHardware();
            evaluate(false);
            requestNotification();
            pollHardware();
            evaluate(false);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Requests the verbs notification that the current arm needs, unless the device still holds
     * the same request: a request stays until the device signals, and a signal not yet read from
     * the channel leads to {@link #onChannelReadable}, which requests again and polls. So the arm
     * that follows each notification costs no system call on devices where a request is one (rxe).
     * Lock held.
     */
    private void requestNotification() {
        if (nativeReleased) {
            return;
        }
        ArmType wanted = armed == ArmType.ANY ? ArmType.ANY : ArmType.SOLICITED;
        if (deviceRequest == wanted) {
            return; // only the same: siw lets a solicited-only request replace a pending ANY one
        }
        try {
            if (wanted == ArmType.ANY) {
                notifyAny.execute();
            } else {
                notifySolicited.execute();
            }
            deviceRequest = wanted;
            deviceRequests++;
            if (wanted == ArmType.ANY) {
                anyRequests++;
            }
        } catch (IOException e) {
            VerbsProvider.LOG.log(Level.ERROR, "ibv_req_notify_cq failed on a completion queue of "
                    + provider.name() + ": " + e.getMessage());
        }
    }

    /**
     * Satisfies the arm if a completion of its kind was queued since the handler was last called.
     * {@code solicitedEvidence}: a solicited completion may be among the new ones. Lock held.
     */
    private void evaluate(boolean solicitedEvidence) {
        if (armed == null || notificationPending) {
            return;
        }
        // The ring holds the completions numbered arrivals - size + 1 to arrivals, oldest first.
        long oldestQueued = arrivals - size;
        long threshold = Math.max(lastNotified, oldestQueued);
        boolean any = arrivals > threshold;
        boolean error = lastError > threshold;
        boolean satisfied;
        switch (armed) {
            case ANY:
                satisfied = any;
                break;
            case ERRORS:
                satisfied = error;
                break;
            default:
                satisfied = error || (solicitedEvidence && any);
                break;
        }
        if (satisfied) {
            armed = null;
            notificationPending = true;
            provider.cqLoop.notify(this);
        }
    }

    /** Called on the completion thread when the completion channel is readable. */
    void onChannelReadable() {
        lock.lock();
        try {
            if (nativeReleased) {
                return;
            }
            int events = 0;
            try {
                while (channel.getCqEvent(cq, 0)) {
                    events++;
                }
                if (events > 0) {
                    cq.ackEvents(events);
                    deviceRequest = null; // the request fired
                }
            } catch (IOException e) {
                deviceRequest = null; // request again below, as if it had fired
                VerbsProvider.LOG.log(Level.ERROR, "ibv_get_cq_event failed on " + provider.name() + ": " + e.getMessage());
            }
            // The device is asked for any completion only while an ANY arm is pending; otherwise it
            // was asked solicited-only and this event proves a solicited (or failed) completion.
            // While the thread polls, only a solicited arm needs the device now (prepareToWait).
            pollHardware();
            if (!provider.cqLoop.spins() || (armed != null && armed != ArmType.ANY)) {
                requestNotification();
                pollHardware();
            }
            evaluate(events > 0);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Moves completions from the verbs CQ into the ring; may be called from any thread. The
     * completion thread also calls it periodically, to notice failures a device did not signal.
     */
    void reap() {
        lock.lock();
        try {
            if (!nativeReleased) {
                pollHardware();
                evaluate(false);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Called on the completion thread for a queue whose arm was satisfied. */
    void deliverNotification() {
        lock.lock();
        try {
            if (!notificationPending || closed) {
                notificationPending = false;
                return;
            }
            notificationPending = false;
            lastNotified = arrivals;
        } finally {
            lock.unlock();
        }
        try {
            handler.onCompletionNotification(this);
        } catch (RuntimeException | Error e) {
            VerbsProvider.LOG.log(Level.WARNING, "completion notification handler threw", e);
        }
    }

    /** Takes every completion from the verbs CQ. Lock held. */
    private void pollHardware() {
        if (nativeReleased) {
            return;
        }
        try {
            int n;
            do {
                n = VerbsNative.pollCq(cqPtr, recordsAddress, POLL_BATCH);
                workCompletions += n;
                for (int i = 0; i < n; i++) {
                    int base = i * VerbsNative.WC_SIZE;
                    long wrId = records.getLong(base + VerbsNative.WC_ID);
                    VerbsEndpoint ep = provider.endpoint((int) (wrId >>> 32));
                    if (ep == null) {
                        continue; // its endpoint was released; nobody can receive this any more
                    }
                    ep.completions.complete(wrId, records.getInt(base + VerbsNative.WC_STATUS),
                            records.getInt(base + VerbsNative.WC_BYTE_LEN), records.getInt(base + VerbsNative.WC_FLAGS),
                            records.getInt(base + VerbsNative.WC_INVALIDATED), records.getInt(base + VerbsNative.WC_VENDOR_ERR),
                            scratch, this);
                    scratch.clear();
                }
            } while (n == POLL_BATCH);
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.ERROR, "polling a completion queue of " + provider.name() + " failed: "
                    + e.getMessage());
        }
    }

    /** Reports the endpoint's synthetic requests that are next in line; from a posting thread. */
    void completeSynthetic(EndpointCompletions completions) {
        lock.lock();
        try {
            completions.drainSynthetic(this);
            evaluate(false);
        } finally {
            lock.unlock();
        }
    }

    /** Queues a completion for the consumer. Lock held. */
    void enqueueLocked(Entry e) {
        if (size == ring.length) {
            if (!overflowed) {
                overflowed = true;
                VerbsProvider.LOG.log(Level.WARNING, "completion queue of depth " + depth + " on " + provider.name()
                        + " overflowed; ending its " + users.size() + " endpoint(s)");
                for (VerbsEndpoint user : users) {
                    user.connection.requestFailed(RdmaStatus.COMPLETION_QUEUE_OVERFLOW,
                            "more completions were due than the completion queue's depth " + depth);
                }
            }
            return;
        }
        Entry slot = ring[(head + size) % ring.length];
        slot.copyFrom(e);
        slot.seq = ++arrivals;
        if (e.status.isError()) {
            lastError = slot.seq;
        }
        size++;
    }

    /** An overflow reported by the device (IBV_EVENT_CQ_ERR). */
    void onDeviceOverflow() {
        lock.lock();
        try {
            overflowed = true;
        } finally {
            lock.unlock();
        }
        for (VerbsEndpoint user : users) {
            user.connection.requestFailed(RdmaStatus.COMPLETION_QUEUE_OVERFLOW,
                    "the device reported a completion queue overflow");
        }
    }

    /** Makes room in the verbs CQ for an endpoint's outstanding requests. */
    void attach(VerbsEndpoint endpoint, int entries) throws RdmaException {
        lock.lock();
        try {
            if (closed) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "the completion queue is closed");
            }
            int needed = reserved + entries;
            if (needed > hwEntries) {
                if (needed > provider.maxCqe) {
                    throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "the completion queue would need "
                            + needed + " entries for its endpoints' requests; " + provider.name() + " allows "
                            + provider.maxCqe);
                }
                try {
                    hwEntries = VerbsNative.resizeCq(cqPtr, needed);
                } catch (NativeException e) {
                    throw e.toRdmaException("growing the completion queue to " + needed + " entries");
                }
            }
            reserved = needed;
            users.add(endpoint);
        } finally {
            lock.unlock();
        }
    }

    void detach(VerbsEndpoint endpoint, int entries) {
        boolean release = false;
        lock.lock();
        try {
            if (users.remove(endpoint)) {
                reserved -= entries;
            }
            if (releaseWhenUnused && users.isEmpty()) {
                releaseWhenUnused = false;
                release = true;
            }
        } finally {
            lock.unlock();
        }
        if (release) {
            release();
        }
    }

    boolean inUseBy(VerbsEndpoint endpoint) {
        return users.contains(endpoint);
    }

    @Override
    public void close() throws RdmaException {
        boolean now;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            for (VerbsEndpoint user : users) {
                if (!user.isClosed()) {
                    throw new RdmaException(RdmaStatus.INVALID_STATE, "the completion queue is used by an open "
                            + "endpoint; close it first");
                }
            }
            closed = true;
            armed = null;
            // Closed endpoints may still be flushing into the queue: it goes when the last one has.
            now = users.isEmpty();
            releaseWhenUnused = !now;
        } finally {
            lock.unlock();
        }
        if (now) {
            release();
        }
    }

    private void release() {
        provider.cqLoop.remove(this);
        releaseNative();
        provider.forget(this);
    }

    /** Destroys the verbs objects; queued completions stay retrievable. */
    void releaseNative() {
        lock.lock();
        try {
            if (nativeReleased) {
                return;
            }
            closed = true;
            nativeReleased = true;
            notifyAny.free();
            notifySolicited.free();
            destroyQuietly(cq, channel);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return "VerbsCompletionQueue[" + provider.name() + ", depth=" + depth + "]";
    }
}
