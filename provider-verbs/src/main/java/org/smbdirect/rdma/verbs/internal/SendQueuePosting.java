package org.smbdirect.rdma.verbs.internal;

import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.checkFlags;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.opName;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.sendFlags;

import java.lang.System.Logger.Level;

import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * Posting to one endpoint's send queue: the consumer's sends, RDMA Reads and Writes and local
 * invalidates, and the provider's own requests, memory window binds and the local invalidates
 * behind them. Each request is recorded in the {@link SendQueueLedger} and its native record in
 * the {@link WorkRequestRecords}; a {@link RequestFlags#DEFER} request waits in the chain for the
 * next one, and the chain reaches the device in one {@code ibv_post_send}. A request that must
 * not reach the device completes through {@link EndpointCompletions#drainSynthetic}, in order
 * with the others.
 *
 * <p>The posting side runs under the send lock; the consumer's slots are reserved before it is
 * taken.
 */
final class SendQueuePosting {
    private final VerbsEndpoint endpoint;
    private final VerbsProvider provider;
    private final EndpointOptions options;
    private final EndpointConnection connection;
    private final EndpointRegistrations registrations;
    private final EndpointCompletions completions;
    private final VerbsCompletionQueue sendCq;

    /** Guards the send queue's posting side: the ledger's and the work request record. */
    private final Object sendLock = new Object();
    private final SendQueueLedger sendQueue;
    /** Calls of ibv_post_send; under sendLock. */
    private long postSendCalls;
    private final WorkRequestRecords records;

    SendQueuePosting(VerbsEndpoint endpoint, EndpointConnection connection, SendQueueLedger sendQueue,
            WorkRequestRecords records, EndpointCompletions completions) {
        this.endpoint = endpoint;
        this.provider = endpoint.provider;
        this.options = endpoint.options;
        this.connection = connection;
        this.registrations = endpoint.registrations;
        this.completions = completions;
        this.sendCq = endpoint.sendCq;
        this.sendQueue = sendQueue;
        this.records = records;
    }

    // ================================================================== RDMA service

    void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException {
        postData(VerbsNative.OP_SEND, context, sgl, count, flags, 0, 0, 0);
    }

    void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken)
            throws RdmaException {
        if (!provider.memoryWindows) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " cannot send with invalidate");
        }
        postData(VerbsNative.OP_SEND_INV, context, sgl, count, flags, 0, 0, remoteToken);
    }

    void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        if (!provider.capabilities().rdmaRead()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " has no RDMA Read");
        }
        if (connection.state() == EndpointState.CONNECTED && connection.ord() == 0) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint's ORD is 0: no RDMA Read can start");
        }
        postData(VerbsNative.OP_READ, context, sgl, count, flags, remoteOffset, remoteToken, 0);
    }

    void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        postData(VerbsNative.OP_WRITE, context, sgl, count, flags, remoteOffset, remoteToken, 0);
    }

    private void postData(int op, Object context, Sge[] sgl, int count, int flags, long remoteOffset, int rkey,
            int invalidate) throws RdmaException {
        String what = opName(op);
        int allowed;
        switch (op) {
            case VerbsNative.OP_READ:
                allowed = RequestFlags.SILENT_SUCCESS | RequestFlags.READ_FENCE | RequestFlags.DEFER;
                break;
            case VerbsNative.OP_WRITE:
                allowed = RequestFlags.ALL & ~RequestFlags.SOLICIT_EVENT;
                break;
            default:
                allowed = RequestFlags.ALL;
                break;
        }
        checkFlags(flags, allowed, what);
        boolean inline = (flags & RequestFlags.INLINE) != 0;
        int min = op == VerbsNative.OP_READ ? 1 : 0;
        if (sgl == null && count > 0 || count < min || sgl != null && count > sgl.length
                || !inline && count > options.maxSendSge()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a " + what + " takes " + min + " to "
                    + options.maxSendSge() + " elements, got " + count);
        }
        checkConnected();
        reserveConsumerSlot();
        boolean posted = false;
        try {
            synchronized (sendLock) {
                boolean defer = (flags & RequestFlags.DEFER) != 0;
                int n = records.sendElements(op, sgl, count, inline, !defer);
                byte flag = (flags & RequestFlags.SILENT_SUCCESS) != 0 ? SendQueueLedger.SILENT : 0;
                post(op, context, flag, sendFlags(flags), null, remoteOffset, rkey, invalidate, n,
                        records.sendBytes(), defer);
                posted = true;
            }
        } finally {
            if (!posted) {
                sendQueue.unreserveConsumer();
            }
        }
    }

    private void checkConnected() throws RdmaException {
        EndpointState s = connection.state();
        if (s != EndpointState.CONNECTED) {
            throw new RdmaException(RdmaStatus.NOT_CONNECTED, "the endpoint is " + s);
        }
    }

    /**
     * Takes one of the consumer's send-queue slots; if none is free, hands any deferred requests to
     * the device and reaps completions once.
     */
    private void reserveConsumerSlot() throws RdmaException {
        if (sendQueue.tryReserveConsumer()) {
            return;
        }
        synchronized (sendLock) {
            flushDeferred(); // deferred requests hold slots that only their completions free
        }
        sendCq.reap();
        if (!sendQueue.tryReserveConsumer()) {
            throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "the send queue holds "
                    + options.sendQueueDepth() + " requests");
        }
    }

    /**
     * Fills the record's common fields and posts it, with the deferred requests waiting before it;
     * a {@code defer} request joins them instead, unless the chain is full. sendLock held; for
     * consumer requests the slot was reserved by {@link #reserveConsumerSlot}.
     */
    private void post(int op, Object context, byte flag, int ibvFlags, VerbsMemoryRegion region, long remoteOffset,
            int rkey, int invalidate, int sges, int bytes, boolean defer) throws RdmaException {
        if (sendQueue.doomed()) {
            records.discard();
            if ((flag & SendQueueLedger.INTERNAL) != 0) {
                throw new RdmaException(RdmaStatus.NOT_CONNECTED, "the connection is ending");
            }
            postSynthetic(op, context, SendQueueLedger.SYNTHETIC_FLUSH, region);
            return;
        }
        flag = sendQueue.signaling(flag, op);
        if ((flag & SendQueueLedger.UNSIGNALED) != 0) {
            ibvFlags &= ~VerbsNative.SEND_SIGNALED;
        }
        int slot = sendQueue.record(op, context, flag, bytes, region);
        records.sendRequest(((long) endpoint.id << 32) | slot, op, ibvFlags, remoteOffset, rkey, invalidate, sges);
        records.commit(sges);
        // once the connection has ended nothing may wait: abandonDeferred ran, or is about to
        if (defer && !records.full() && connection.state() == EndpointState.CONNECTED) {
            return; // RequestFlags.DEFER: handed over with the next request posted without it
        }
        try {
            postChain();
        } catch (NativeException e) {
            // the deferred requests before this one were accepted by their posts: they complete
            // FLUSHED; this one is refused to its caller
            sendQueue.unrecord(slot);
            if (sendQueue.abandonUnposted() > 0) {
                sendCq.completeSynthetic(completions);
            }
            throw e.toRdmaException("posting a " + opName(op));
        }
    }

    private void post(int op, Object context, byte flag, int ibvFlags, VerbsMemoryRegion region, long remoteOffset,
            int rkey, int invalidate, int bytes) throws RdmaException {
        post(op, context, flag, ibvFlags, region, remoteOffset, rkey, invalidate, 0, bytes, false);
    }

    /**
     * Hands the chain to the device in one {@code ibv_post_send}. sendLock held. When the device
     * refuses a request, those before it are posted and the rest are not, and the chain is empty
     * either way.
     */
    private void postChain() throws NativeException {
        int n = records.chained();
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.qpReleased) {
                throw new NativeException("ibv_post_send", 107, "the queue pair was released");
            }
            postSendCalls++;
            records.post(endpoint.qp);
            sendQueue.posted(n);
        } catch (NativeException e) {
            sendQueue.posted(Math.max(0, Math.min(e.posted(), n)));
            throw e;
        } finally {
            records.clear();
            endpoint.nativeLock.readLock().unlock();
        }
    }

    /**
     * Hands the deferred requests to the device now (before a request that never reaches it, which
     * must follow them); when that fails they complete FLUSHED. sendLock held.
     */
    private void flushDeferred() {
        if (records.chained() == 0) {
            return;
        }
        try {
            postChain();
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.DEBUG, () -> "deferred requests not posted: " + e.getMessage());
            if (sendQueue.abandonUnposted() > 0) {
                sendCq.completeSynthetic(completions);
            }
            connection.requestFailed(e.status(), "posting deferred requests failed: " + e.getMessage());
        }
    }

    /** Hands the deferred requests, a bind among them, to the device now. */
    void postDeferred() {
        synchronized (sendLock) {
            flushDeferred();
        }
    }

    /**
     * The connection ended with deferred requests still waiting for a request without {@link
     * RequestFlags#DEFER}: they never reach the device and complete FLUSHED, in order.
     */
    void abandonDeferred() {
        synchronized (sendLock) {
            records.clear();
            if (sendQueue.abandonUnposted() > 0) {
                sendCq.completeSynthetic(completions);
            }
        }
    }

    /** Queues a request that never reaches the device. sendLock held; the consumer slot is reserved. */
    private void postSynthetic(int op, Object context, byte flag, VerbsMemoryRegion region) {
        flushDeferred();
        sendQueue.recordSynthetic(op, context, flag, region);
        sendCq.completeSynthetic(completions);
    }

    /** How many times requests were handed to the device ({@code ibv_post_send}); for tests. */
    long postSendCalls() {
        synchronized (sendLock) {
            return postSendCalls;
        }
    }

    // ================================================================== memory windows

    /**
     * Binds a region's memory window on the queue pair. The bind is posted before this returns, or
     * with {@code defer} waits in the chain for the next request posted, so that every request
     * posted afterwards (the send that hands the token to the peer) follows it on the queue: the
     * token is usable on the wire by the time the peer can know it. Never waits:
     * when the binds in flight fill their reserve of the send queue, the completed ones are taken
     * off the completion queue once, and if none has completed the registration is refused with
     * {@link RdmaStatus#INSUFFICIENT_RESOURCES} (a consumer on an engine thread must not block).
     */
    void bind(VerbsMemoryRegion r, boolean defer) throws RdmaException {
        for (int attempt = 0; attempt < 2; attempt++) {
            synchronized (sendLock) {
                if (sendQueue.internalRoom()) {
                    boolean signaled = sendQueue.signalNextBind();
                    records.bind(r);
                    r.bindPosted(sendQueue.next(), !signaled);
                    try {
                        post(VerbsNative.OP_BIND_MW, null, signaled ? SendQueueLedger.INTERNAL
                                : SendQueueLedger.INTERNAL | SendQueueLedger.UNSIGNALED,
                                signaled ? VerbsNative.SEND_SIGNALED : 0, r, 0, 0, 0, 0, 0, defer);
                    } catch (RdmaException | RuntimeException e) {
                        r.bindCompleted();
                        throw e;
                    }
                    return;
                }
            }
            if (attempt == 0) {
                postDeferred(); // deferred binds hold reserve slots that only their completions free
                sendCq.reap(); // binds that completed meanwhile free their reserve; no waiting
            }
        }
        throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, SendQueueLedger.BIND_RESERVE
                + " memory window binds are still outstanding");
    }

    /**
     * Posts a signaled local invalidate of a deregistered region's window behind its unsignaled
     * bind when no reported request follows the bind, so that the bind's completion, and with it
     * the window's release, comes. When the internal reserve is full or the connection is ending,
     * the release waits for the next reported request or the endpoint's release.
     */
    void invalidateBehindUnsignaledBind(VerbsMemoryRegion r, long bindSeq) {
        synchronized (sendLock) {
            if (sendQueue.signaledAfter(bindSeq) || sendQueue.doomed() || !sendQueue.internalRoom()) {
                return;
            }
            try {
                post(VerbsNative.OP_LOCAL_INV, null, SendQueueLedger.INTERNAL, VerbsNative.SEND_SIGNALED, r, 0, 0,
                        r.token, 0);
            } catch (RdmaException e) {
                VerbsProvider.LOG.log(Level.DEBUG, () -> "no local invalidate behind an unsignaled bind: "
                        + e.getMessage() + "; the window is released with the next reported request or the endpoint");
            }
        }
    }

    void postInvalidate(Object context, MemoryRegion region, int flags) throws RdmaException {
        checkFlags(flags, RequestFlags.SILENT_SUCCESS | RequestFlags.READ_FENCE | RequestFlags.DEFER, "invalidate");
        if (!provider.memoryWindows) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " has no memory windows: tokens "
                    + "cannot be invalidated");
        }
        VerbsMemoryRegion r = registrations.own(region, RdmaStatus.INVALID_PARAMETER);
        if (!r.isRemote()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "the region was registered without remote access");
        }
        checkConnected();
        // Learn of invalidations by the peer that already completed: invalidating a window twice
        // must never reach the device.
        endpoint.recvCq.reap();
        reserveConsumerSlot();
        boolean posted = false;
        try {
            synchronized (sendLock) {
                byte flag = (flags & RequestFlags.SILENT_SUCCESS) != 0 ? SendQueueLedger.SILENT : 0;
                boolean valid;
                synchronized (r) {
                    valid = r.state() == VerbsMemoryRegion.VALID && r.mw != 0 && registrations.isRegistered(r);
                }
                if (valid) {
                    post(VerbsNative.OP_LOCAL_INV, context, flag, sendFlags(flags), r, 0, 0, r.token, 0, 0,
                            (flags & RequestFlags.DEFER) != 0);
                    r.invalidated();
                } else {
                    // Already invalid. Nothing is handed to the device (Soft-RoCE of Linux 6.1
                    // dereferences a null pointer when asked to invalidate an unbound window): the
                    // request completes INVALID_TOKEN in order with the others and ends the connection.
                    postSynthetic(VerbsNative.OP_LOCAL_INV, context, SendQueueLedger.SYNTHETIC_INVALID, r);
                }
                posted = true;
            }
        } finally {
            if (!posted) {
                sendQueue.unreserveConsumer();
            }
        }
    }
}
