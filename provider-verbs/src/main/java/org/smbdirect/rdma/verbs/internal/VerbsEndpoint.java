package org.smbdirect.rdma.verbs.internal;

import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.checkFlags;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.deregistered;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.opName;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.sendFlags;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.type;

import java.lang.System.Logger.Level;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.impl.NatObject;

/**
 * An endpoint: an rdma_cm identifier with a reliable-connection queue pair in its own protection
 * domain (allocated through DiSNI).
 *
 * <p>Work requests: the {@link SendQueueLedger} keeps what each send-queue slot holds and decides
 * which requests reach the device unsignaled; the receive ring keeps each receive's context and
 * regions. A work request id carries this endpoint's id in its upper half and the slot in its
 * lower half (with a bit for receives).
 *
 * <p>Connection events arrive on the provider's connection thread and are delivered there.
 */
final class VerbsEndpoint implements Endpoint {
    private static final long RECV_BIT = 1L << 31;
    private static final long SEQ_MASK = RECV_BIT - 1;
    private static final byte[] NONE = new byte[0];
    /** rdma_cm reject reason of InfiniBand/RoCE when nobody listens (IB_CM_REJ_INVALID_SERVICE_ID). */
    private static final int REJ_INVALID_SERVICE_ID = 8;
    private static final int ETIMEDOUT = 110;
    private static final int ECONNREFUSED = 111;

    final VerbsProvider provider;
    final int id;
    final long serial;
    private final boolean active;
    private final EndpointOptions options;
    private final ConnectionListener listener;
    final VerbsCompletionQueue sendCq;
    final VerbsCompletionQueue recvCq;
    private final VerbsConnectionRequest request;

    final long cmId;
    private final IbvPd pd;
    final long pdPtr;
    private final EndpointRegistrations registrations;
    final long qp;
    private final int sqSize;

    private final Object lock = new Object();
    private volatile EndpointState state = EndpointState.IDLE;
    private boolean began;
    private volatile boolean closeRequested;
    private boolean closeRequestedDuringConnect;
    private boolean terminalDelivered;
    private boolean disconnectIssued;
    /**
     * Guards the native objects against use after destruction: every native call on them holds the
     * read lock and checks the flags below, which are set under the write lock.
     */
    final ReentrantReadWriteLock nativeLock = new ReentrantReadWriteLock();
    /** The protection domain, registrations and (if owned) the identifier are destroyed. */
    private volatile boolean nativeReleased;
    /** The queue pair is destroyed. */
    private volatile boolean qpReleased;
    /** The identifier must not be used any more (destroyed, or left to the request to destroy). */
    private volatile boolean idReleased;
    private boolean releaseStarted;
    private boolean ownsCmId;
    private RdmaStatus failure;
    private String failureReason;
    private byte[] peerPrivateData = NONE;
    private int ird;
    private int ord;
    private volatile InetSocketAddress localAddress;
    private volatile InetSocketAddress remoteAddress;
    private volatile Object attachment;
    private byte[] connectPrivateData;
    private int connectIrd;
    private int connectOrd;

    /** Guards the send queue's posting side: the ledger's and the work request record. */
    private final Object sendLock = new Object();
    private final SendQueueLedger sendQueue;
    /** Calls of ibv_post_send; under sendLock. */
    private long postSendCalls;
    private final WorkRequestRecords records;

    private final Object recvLock = new Object();
    private final Object[] recvContext;
    /** The region, or regions, each outstanding receive names. */
    private final Object[] recvRegions;
    private long recvSeq;
    private final AtomicInteger receives = new AtomicInteger();

    VerbsEndpoint(VerbsProvider provider, int id, long serial, long cmId, boolean ownsCmId, EndpointOptions options,
            ConnectionListener listener, VerbsConnectionRequest request) throws RdmaException {
        this.provider = provider;
        this.id = id;
        this.serial = serial;
        this.cmId = cmId;
        this.ownsCmId = ownsCmId;
        this.active = request == null;
        this.options = options;
        this.listener = listener;
        this.request = request;
        this.sendCq = (VerbsCompletionQueue) options.sendQueue();
        this.recvCq = (VerbsCompletionQueue) options.receiveQueue();
        int reserve = provider.memoryWindows ? SendQueueLedger.BIND_RESERVE : 0;
        this.registrations = new EndpointRegistrations(this, provider);
        this.sendQueue = new SendQueueLedger(options.sendQueueDepth(), reserve, this::bindSettled);
        this.sqSize = sendQueue.size();
        this.recvContext = new Object[options.receiveQueueDepth()];
        this.recvRegions = new Object[options.receiveQueueDepth()];
        this.records = new WorkRequestRecords(this, options.maxSendSge(), options.maxReceiveSge(),
                options.inlineThreshold());

        boolean sendAttached = false;
        boolean recvAttached = false;
        IbvPd pd0 = null;
        try {
            sendCq.attach(this, sqSize);
            sendAttached = true;
            recvCq.attach(this, options.receiveQueueDepth());
            recvAttached = true;
            pd0 = provider.context.allocPd();
            if (pd0 == null) {
                throw new RdmaException(RdmaStatus.DEVICE_ERROR, "ibv_alloc_pd failed");
            }
            long pdp = ((NatObject) pd0).getObjId();
            int[] caps = new int[5];
            this.qp = VerbsNative.createQp(cmId, pdp, sendCq.cqPtr, recvCq.cqPtr, sqSize,
                    options.receiveQueueDepth(), options.maxSendSge(), options.maxReceiveSge(),
                    options.inlineThreshold(), caps);
            this.pd = pd0;
            this.pdPtr = pdp;
        } catch (RdmaException | RuntimeException e) {
            undo(pd0, sendAttached, recvAttached);
            throw e;
        } catch (java.io.IOException e) {
            undo(pd0, sendAttached, recvAttached);
            throw e instanceof NativeException ? ((NativeException) e).toRdmaException("creating an endpoint")
                    : new RdmaException(RdmaStatus.DEVICE_ERROR, "creating an endpoint: " + e.getMessage(), e);
        }
    }

    private void undo(IbvPd pd0, boolean sendAttached, boolean recvAttached) {
        if (pd0 != null) {
            try {
                pd0.deallocPd();
            } catch (Exception e) {
                VerbsProvider.LOG.log(Level.WARNING, "ibv_dealloc_pd failed: " + e.getMessage());
            }
        }
        if (sendAttached) {
            sendCq.detach(this, sqSize);
        }
        if (recvAttached) {
            recvCq.detach(this, options.receiveQueueDepth());
        }
    }

    // ================================================================== connection service

    @Override
    public RdmaProvider provider() {
        return provider;
    }

    @Override
    public EndpointOptions options() {
        return options;
    }

    @Override
    public EndpointState state() {
        return state;
    }

    boolean isClosed() {
        return state == EndpointState.CLOSED;
    }

    @Override
    public void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) throws RdmaException {
        if (remote == null || remote.isUnresolved()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "remote must be a resolved socket address, was "
                    + remote);
        }
        checkConnectionParameters(provider, privateData, ird, ord);
        // rdma_cm resolves within the family of the address the identifier is bound to.
        InetSocketAddress from = active ? address(false) : null;
        if (from != null && (from.getAddress() instanceof Inet6Address) != (remote.getAddress() instanceof Inet6Address)) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "cannot reach " + remote.getAddress().getHostAddress()
                    + " from " + from.getAddress().getHostAddress() + ": the local address (EndpointOptions.localAddress) "
                    + "must be of the peer's address family; " + provider.name() + " has " + provider.addresses());
        }
        // A link-local peer named without its scope is reached through this endpoint's interface.
        int scope = VerbsNative.scopeId(remote.getAddress());
        if (scope == 0 && remote.getAddress().isLinkLocalAddress() && from != null) {
            scope = VerbsNative.scopeId(from.getAddress());
        }
        synchronized (lock) {
            if (!active || state != EndpointState.IDLE) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "connect needs an IDLE endpoint created by "
                        + "RdmaProvider.createEndpoint; this one is " + state + (active ? "" : " and passive"));
            }
            state = EndpointState.CONNECTING;
            began = true;
            connectPrivateData = privateData == null ? null : privateData.clone();
            connectIrd = ird;
            connectOrd = ord;
            remoteAddress = remote;
        }
        nativeLock.readLock().lock();
        try {
            if (idReleased) {
                throw new NativeException("rdma_resolve_addr", 22, "the endpoint was released");
            }
            VerbsNative.resolveAddr(cmId, remote.getAddress().getAddress(), scope, remote.getPort(),
                    provider.settings.resolveTimeoutMillis);
        } catch (NativeException e) {
            provider.cmLoop.execute(() -> attemptFailed(e.status() == RdmaStatus.INVALID_PARAMETER
                    ? RdmaStatus.UNREACHABLE : e.status(), "cannot reach " + remote + ": " + e.getMessage()));
        } finally {
            nativeLock.readLock().unlock();
        }
        provider.cmLoop.schedule(provider.settings.resolveTimeoutMillis * 2L + 60_000L, this::connectDeadline);
    }

    static void checkConnectionParameters(VerbsProvider provider, byte[] privateData, int ird, int ord)
            throws RdmaException {
        int max = provider.capabilities().maxPrivateData();
        if (privateData != null && privateData.length > max) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "private data of " + privateData.length
                    + " bytes exceeds the " + max + " bytes " + provider.name() + " can carry");
        }
        if (ird < 0 || ird > provider.capabilities().maxIrd()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "ird " + ird + " is outside 0.."
                    + provider.capabilities().maxIrd());
        }
        if (ord < 0 || ord > provider.capabilities().maxOrd()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "ord " + ord + " is outside 0.."
                    + provider.capabilities().maxOrd());
        }
    }

    /** Passive side: the consumer accepted the request this endpoint was created for. */
    void accepted(byte[] privateData, int ird, int ord) throws RdmaException {
        synchronized (lock) {
            if (state != EndpointState.IDLE) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint is " + state + ", not IDLE");
            }
            state = EndpointState.CONNECTING;
            began = true;
            this.ird = ird;
            this.ord = ord;
            this.peerPrivateData = request.peerPrivateData();
            this.localAddress = request.localAddress();
            this.remoteAddress = request.remoteAddress();
            ownsCmId = true;
        }
        nativeLock.readLock().lock();
        try {
            if (idReleased || qpReleased) {
                throw new NativeException("rdma_accept", 22, "the endpoint was released");
            }
            // MS-SMBD 3.1.4.2 relies on retries while the peer reposts receives; Linux and Windows
            // peers expect them (EndpointOptions.rnrRetryCount, 0 to 7, 7 = retry indefinitely).
            VerbsNative.accept(cmId, privateData, ird, ord, options.rnrRetryCount());
        } catch (NativeException e) {
            provider.cmLoop.execute(() -> attemptFailed(e.status(), "accepting failed: " + e.getMessage()));
        } finally {
            nativeLock.readLock().unlock();
        }
    }

    /**
     * Passive side: the request was rejected or expired before it was accepted; no events follow.
     * The request destroys the identifier next, which must not keep the queue pair.
     */
    void requestAbandoned() {
        synchronized (lock) {
            if (state == EndpointState.IDLE) {
                state = EndpointState.DISCONNECTED;
            }
            terminalDelivered = true;
        }
        qpToErrorQuietly();
        sendCq.reap();
        recvCq.reap();
        nativeLock.writeLock().lock();
        try {
            idReleased = true;
            if (!qpReleased) {
                qpReleased = true;
                VerbsNative.destroyQp(cmId);
            }
        } finally {
            nativeLock.writeLock().unlock();
        }
        scheduleRelease();
    }

    /** Moves the queue pair to the error state (flushing it), unless it is gone. */
    private void qpToErrorQuietly() {
        nativeLock.readLock().lock();
        try {
            if (!qpReleased) {
                VerbsNative.qpToError(qp);
            }
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.DEBUG, e.getMessage());
        } finally {
            nativeLock.readLock().unlock();
        }
    }

    /** rdma_disconnect, unless the identifier is gone; {@code false} when it failed or was gone. */
    private boolean disconnectQuietly() {
        nativeLock.readLock().lock();
        try {
            if (idReleased) {
                return false;
            }
            VerbsNative.disconnect(cmId);
            return true;
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.DEBUG, "rdma_disconnect: " + e.getMessage());
            return false;
        } finally {
            nativeLock.readLock().unlock();
        }
    }

    @Override
    public byte[] peerPrivateData() {
        synchronized (lock) {
            return peerPrivateData.clone();
        }
    }

    @Override
    public int ird() {
        synchronized (lock) {
            return ird;
        }
    }

    @Override
    public int ord() {
        synchronized (lock) {
            return ord;
        }
    }

    @Override
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    @Override
    public void disconnect() {
        boolean now = false;
        synchronized (lock) {
            if (state == EndpointState.CONNECTED && !disconnectIssued) {
                disconnectIssued = true;
                now = true;
            } else if (state == EndpointState.CONNECTING) {
                // rdma_cm cannot withdraw an attempt: end it as soon as it has an outcome.
                closeRequestedDuringConnect = true;
            }
        }
        if (now) {
            issueDisconnect();
        }
    }

    private void issueDisconnect() {
        if (!disconnectQuietly()) {
            // The identifier is not connected (any more): end locally.
            qpToErrorQuietly();
            provider.cmLoop.execute(this::deliverTerminal);
        }
    }

    @Override
    public void close() {
        EndpointState previous;
        boolean disconnect = false;
        boolean silent = false;
        boolean unanswered;
        synchronized (lock) {
            if (state == EndpointState.CLOSED) {
                return;
            }
            previous = state;
            state = EndpointState.CLOSED;
            closeRequested = true;
            if (previous == EndpointState.CONNECTED && !disconnectIssued) {
                disconnectIssued = true;
                disconnect = true;
            } else if (previous == EndpointState.CONNECTING) {
                closeRequestedDuringConnect = true;
            } else if (previous == EndpointState.IDLE) {
                terminalDelivered = true;
                silent = true;
            }
            unanswered = request != null && !ownsCmId;
        }
        registrations.revokeAll();
        if (disconnect) {
            issueDisconnect();
        } else if (silent) {
            qpToErrorQuietly();
        }
        if (unanswered) {
            request.endpointClosed(this);
        }
        scheduleRelease();
        provider.cmLoop.schedule(provider.settings.closeTimeoutMillis, this::forceRelease);
    }

    @Override
    public void attach(Object attachment) {
        this.attachment = attachment;
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    // ------------------------------------------------------------------ rdma_cm events (connection thread)

    void onAddressResolved() {
        if (!stillConnecting()) {
            return;
        }
        nativeLock.readLock().lock();
        try {
            if (!idReleased) {
                VerbsNative.resolveRoute(cmId, provider.settings.resolveTimeoutMillis);
            }
        } catch (NativeException e) {
            attemptFailed(RdmaStatus.UNREACHABLE, "route resolution failed: " + e.getMessage());
        } finally {
            nativeLock.readLock().unlock();
        }
    }

    void onRouteResolved() {
        if (!stillConnecting()) {
            return;
        }
        byte[] data;
        int i;
        int o;
        synchronized (lock) {
            data = connectPrivateData;
            i = connectIrd;
            o = connectOrd;
            localAddress = address(false);
        }
        nativeLock.readLock().lock();
        try {
            if (!idReleased) {
                // rnr_retry_count as configured: with 0 a send without a posted receive fails at once
                // (RECEIVER_NOT_READY); 7 means retry indefinitely.
                VerbsNative.connect(cmId, data, i, o, provider.settings.retryCount, options.rnrRetryCount());
            }
        } catch (NativeException e) {
            // iWARP (siw) refuses at once, in the call, where RoCE's CM rejects with an event
            attemptFailed(e.status(), e.errno() == ECONNREFUSED ? "nobody listens at " + remoteAddress + " ("
                    + e.getMessage() + ")" : e.getMessage());
        } finally {
            nativeLock.readLock().unlock();
        }
    }

    /** Whether an active attempt should go on; ends it quietly when the consumer closed it meanwhile. */
    private boolean stillConnecting() {
        boolean end;
        synchronized (lock) {
            if (terminalDelivered) {
                return false;
            }
            end = closeRequestedDuringConnect;
        }
        if (end) {
            qpToErrorQuietly();
            deliverTerminal();
            return false;
        }
        return true;
    }

    void onEstablished(int responderResources, int initiatorDepth, byte[] privateData) {
        synchronized (lock) {
            if (terminalDelivered) {
                return;
            }
            if (active) {
                // Values from the local point of view: what the peer accepted with.
                peerPrivateData = privateData;
                ird = responderResources;
                ord = initiatorDepth;
            }
            localAddress = address(false);
            remoteAddress = address(true);
        }
        boolean abort;
        while (true) {
            registrations.bindPending();
            synchronized (lock) {
                if (terminalDelivered) {
                    return;
                }
                if (registrations.bindsPending()) {
                    continue; // registered meanwhile, still CONNECTING: bound here, before anyone can post
                }
                // Closed or failed while connecting: no onEstablished, end the connection now.
                abort = closeRequestedDuringConnect || closeRequested || failure != null;
                if (abort) {
                    disconnectIssued = true;
                } else {
                    state = EndpointState.CONNECTED;
                }
            }
            break;
        }
        if (abort) {
            issueDisconnect();
            return;
        }
        try {
            listener.onEstablished(this);
        } catch (RuntimeException | Error e) {
            VerbsProvider.LOG.log(Level.WARNING, "ConnectionListener.onEstablished threw", e);
        }
    }

    void onRejected(int status, byte[] privateData) {
        synchronized (lock) {
            peerPrivateData = privateData;
        }
        String why = status == REJ_INVALID_SERVICE_ID || status == -ECONNREFUSED
                ? "nobody listens at " + remoteAddress : "the peer rejected the connection (reject reason " + status + ")";
        attemptFailed(RdmaStatus.CONNECTION_REFUSED, why);
    }

    void onAttemptError(int type, int status) {
        RdmaStatus st;
        String what;
        switch (type) {
            case VerbsProvider.CM_ADDR_ERROR:
                st = status == -ETIMEDOUT ? RdmaStatus.TIMEOUT : RdmaStatus.UNREACHABLE;
                what = "address resolution failed";
                break;
            case VerbsProvider.CM_ROUTE_ERROR:
                st = status == -ETIMEDOUT ? RdmaStatus.TIMEOUT : RdmaStatus.UNREACHABLE;
                what = "route resolution failed";
                break;
            case VerbsProvider.CM_UNREACHABLE:
                st = status == -ETIMEDOUT ? RdmaStatus.TIMEOUT : RdmaStatus.UNREACHABLE;
                what = "the peer did not answer";
                break;
            default:
                st = RdmaStatus.CONNECTION_RESET;
                what = "the connection could not be established";
                break;
        }
        attemptFailed(st, what + " (rdma_cm status " + status + ")" + (remoteAddress != null ? ", peer "
                + remoteAddress : ""));
    }

    /** A connection attempt failed before it was established. Connection thread. */
    void attemptFailed(RdmaStatus status, String reason) {
        synchronized (lock) {
            if (terminalDelivered) {
                return;
            }
            if (failure == null) {
                failure = status;
                failureReason = reason;
            }
        }
        qpToErrorQuietly();
        deliverTerminal();
    }

    void onDisconnected() {
        // A request of ours that failed is often why the peer disconnected: learn of it first, so
        // that the terminal event carries its status.
        sendCq.reap();
        recvCq.reap();
        boolean complete;
        synchronized (lock) {
            complete = !disconnectIssued;
            disconnectIssued = true;
        }
        if (complete) {
            // The peer disconnected: answer its request and flush our queue pair.
            disconnectQuietly();
        }
        qpToErrorQuietly();
        deliverTerminal();
    }

    void onDeviceRemoval() {
        synchronized (lock) {
            if (failure == null) {
                failure = RdmaStatus.DEVICE_ERROR;
                failureReason = "the RDMA device " + provider.name() + " was removed";
            }
        }
        deliverTerminal();
    }

    /** Delivers the one terminal event, if the endpoint began connecting. Connection thread. */
    void deliverTerminal() {
        RdmaStatus status;
        String reason;
        boolean deliver;
        synchronized (lock) {
            if (terminalDelivered) {
                return;
            }
            terminalDelivered = true;
            if (state != EndpointState.CLOSED) {
                state = EndpointState.DISCONNECTED;
            }
            status = failure;
            reason = failureReason;
            deliver = began;
        }
        abandonDeferred();
        if (deliver) {
            try {
                if (status == null) {
                    listener.onDisconnected(this);
                } else {
                    listener.onError(this, status, reason);
                }
            } catch (RuntimeException | Error e) {
                VerbsProvider.LOG.log(Level.WARNING, "ConnectionListener threw", e);
            }
        }
        scheduleRelease();
    }

    /** The attempt neither succeeded nor failed in time (rdma_cm gave no event). */
    private void connectDeadline() {
        boolean stuck;
        synchronized (lock) {
            stuck = state == EndpointState.CONNECTING && !terminalDelivered;
        }
        if (stuck) {
            attemptFailed(RdmaStatus.TIMEOUT, "no answer from " + remoteAddress);
        }
    }

    /** Provider shutdown: end the connection now. */
    void shutdown() {
        boolean disconnect;
        synchronized (lock) {
            disconnect = state == EndpointState.CONNECTED && !disconnectIssued;
            if (disconnect) {
                disconnectIssued = true;
            }
        }
        if (disconnect) {
            disconnectQuietly();
        }
        qpToErrorQuietly();
    }

    /** A request failed: the connection ends with this status (the first failure wins). */
    void requestFailed(RdmaStatus status, String reason) {
        boolean disconnect = false;
        synchronized (lock) {
            if (terminalDelivered) {
                return;
            }
            if (failure == null) {
                failure = status;
                failureReason = reason;
            }
            if (state == EndpointState.CONNECTED && !disconnectIssued) {
                disconnectIssued = true;
                disconnect = true;
            }
        }
        if (disconnect) {
            provider.cmLoop.execute(this::issueDisconnect);
        }
    }

    private InetSocketAddress address(boolean remote) {
        byte[] a;
        nativeLock.readLock().lock();
        try {
            a = idReleased ? null : VerbsNative.address(cmId, remote);
        } finally {
            nativeLock.readLock().unlock();
        }
        return VerbsNative.socketAddress(a);
    }

    // ------------------------------------------------------------------ release

    /**
     * Requests whose completion is still due (unsignaled ones are left out, see {@link
     * SendQueueLedger#outstanding}; {@link #releaseNative} settles the binds).
     */
    private int outstanding() {
        return sendQueue.outstanding() + receives.get();
    }

    private void scheduleRelease() {
        provider.cmLoop.execute(this::tryRelease);
    }

    private void tryRelease() {
        synchronized (lock) {
            if (releaseStarted || !closeRequested || !terminalDelivered) {
                return;
            }
        }
        if (outstanding() > 0) {
            sendCq.reap();
            recvCq.reap();
            if (outstanding() > 0) {
                return; // the last completion schedules another try; the close deadline forces it
            }
        }
        releaseNative();
    }

    private void forceRelease() {
        boolean terminal;
        synchronized (lock) {
            if (releaseStarted) {
                return;
            }
            terminal = terminalDelivered;
        }
        if (!terminal) {
            qpToErrorQuietly();
            deliverTerminal();
        }
        sendCq.reap();
        recvCq.reap();
        releaseNative();
    }

    /** Destroys the queue pair, the registrations, the protection domain and the identifier. */
    void releaseNative() {
        boolean destroyId;
        synchronized (lock) {
            if (releaseStarted) {
                return;
            }
            releaseStarted = true;
            destroyId = ownsCmId;
            terminalDelivered = true;
            if (state != EndpointState.CLOSED) {
                state = EndpointState.DISCONNECTED;
            }
        }
        provider.unregister(this);
        abandonDeferred();
        // No other lock is taken while holding the write lock: posting threads hold the send or
        // receive lock and pollers the completion queue's lock when they ask for the read lock.
        nativeLock.writeLock().lock();
        try {
            nativeReleased = true;
            registrations.releaseBeforeQueuePair();
            if (!qpReleased) {
                qpReleased = true;
                VerbsNative.destroyQp(cmId);
            }
            registrations.releaseAfterQueuePair();
            try {
                pd.deallocPd();
            } catch (Exception e) {
                VerbsProvider.LOG.log(Level.WARNING, "ibv_dealloc_pd failed: " + e.getMessage());
            }
            if (destroyId && !idReleased) {
                try {
                    VerbsNative.destroyCmId(cmId);
                } catch (NativeException e) {
                    VerbsProvider.LOG.log(Level.WARNING, e.getMessage());
                }
            }
            idReleased = true;
        } finally {
            nativeLock.writeLock().unlock();
        }
        sendCq.detach(this, sqSize);
        recvCq.detach(this, options.receiveQueueDepth());
    }

    /** The request this passive endpoint was created for while it is still unanswered, else {@code null}. */
    VerbsConnectionRequest unansweredRequest() {
        synchronized (lock) {
            if (request == null || ownsCmId) {
                return null;
            }
        }
        return request.isPending() ? request : null;
    }

    boolean isReleased() {
        return nativeReleased;
    }

    /** Whether the endpoint will see no further connection event (it never began, or it ended). */
    boolean isTerminated() {
        synchronized (lock) {
            return terminalDelivered || !began;
        }
    }

    boolean isDrained() {
        return outstanding() == 0;
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

    // ================================================================== registration service

    @Override
    public MemoryRegion register(ByteBuffer buffer, int access) throws RdmaException {
        return registrations.register(buffer, access, false);
    }

    /**
     * With {@link RequestFlags#DEFER} a memory window's bind joins the deferred requests and
     * reaches the device in one post with the next request, which saves Soft-RoCE a system call
     * (the bind's own post) per registration.
     */
    @Override
    public MemoryRegion register(ByteBuffer buffer, int access, int flags) throws RdmaException {
        checkFlags(flags, RequestFlags.DEFER, "registration");
        return registrations.register(buffer, access, (flags & RequestFlags.DEFER) != 0);
    }

    @Override
    public void deregister(MemoryRegion region) throws RdmaException {
        registrations.deregister(region);
    }

    /**
     * Whether a new region's window is bound now (the endpoint is connected) or once it is
     * (connecting); refused when the connection has ended.
     */
    boolean bindsNow(VerbsMemoryRegion region) throws RdmaException {
        synchronized (lock) {
            if (state == EndpointState.CONNECTED) {
                return true;
            }
            if (state == EndpointState.IDLE || state == EndpointState.CONNECTING) {
                registrations.bindLater(region);
                return false;
            }
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint is " + state);
        }
    }

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

    @Override
    public void postInvalidate(Object context, MemoryRegion region, int flags) throws RdmaException {
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
        recvCq.reap();
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

    /** Queues a request that never reaches the device. sendLock held; the consumer slot is reserved. */
    private void postSynthetic(int op, Object context, byte flag, VerbsMemoryRegion region) {
        flushDeferred();
        sendQueue.recordSynthetic(op, context, flag, region);
        sendCq.completeSynthetic(this);
    }

    /**
     * Reports the synthetic requests that are next in line, in order. Under the send completion
     * queue's lock.
     */
    void drainSynthetic(VerbsCompletionQueue cq) {
        for (int slot; (slot = sendQueue.nextSynthetic()) >= 0;) {
            byte flag = sendQueue.flags(slot);
            if ((flag & SendQueueLedger.INTERNAL) != 0) {
                // a deferred bind that never reached the device: its window is free to go
                VerbsMemoryRegion region = sendQueue.region(slot);
                sendQueue.retire(slot);
                bindSettled(region);
                continue;
            }
            VerbsCompletionQueue.Entry e = new VerbsCompletionQueue.Entry();
            e.context = sendQueue.context(slot);
            e.endpoint = this;
            e.type = type(sendQueue.opcode(slot));
            e.status = (flag & SendQueueLedger.SYNTHETIC_INVALID) != 0 ? RdmaStatus.INVALID_TOKEN : RdmaStatus.FLUSHED;
            sendQueue.retire(slot);
            if ((flag & SendQueueLedger.SYNTHETIC_INVALID) != 0) {
                requestFailed(RdmaStatus.INVALID_TOKEN, "a local invalidate named a token that was already "
                        + "invalidated or deregistered");
                qpToErrorQuietly();
            }
            cq.enqueueLocked(e);
        }
    }

    // ================================================================== RDMA service

    @Override
    public void postReceive(Object context, Sge[] sgl, int count) throws RdmaException {
        if (sgl == null || count < 1 || count > options.maxReceiveSge() || count > sgl.length) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a receive takes 1 to " + options.maxReceiveSge()
                    + " elements, got " + count);
        }
        EndpointState s = state;
        if (s == EndpointState.DISCONNECTED || s == EndpointState.CLOSED) {
            throw new RdmaException(RdmaStatus.NOT_CONNECTED, "the endpoint is " + s);
        }
        if (receives.get() >= recvContext.length) {
            recvCq.reap();
        }
        synchronized (recvLock) {
            if (receives.get() >= recvContext.length) {
                throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "the receive queue holds "
                        + recvContext.length + " receives");
            }
            long seq = recvSeq;
            int slot = (int) (seq % recvContext.length);
            records.receiveRequest(((long) id << 32) | RECV_BIT | slot, sgl, count);
            recvContext[slot] = context;
            recvRegions[slot] = records.receiveRegions();
            receives.incrementAndGet();
            nativeLock.readLock().lock();
            try {
                if (qpReleased) {
                    throw new NativeException("ibv_post_recv", 107, "the queue pair was released");
                }
                VerbsNative.postRecv(qp, records.receiveAddress);
            } catch (NativeException e) {
                recvContext[slot] = null;
                recvRegions[slot] = null;
                receives.decrementAndGet();
                throw e.toRdmaException("posting a receive");
            } finally {
                nativeLock.readLock().unlock();
            }
            recvSeq = seq + 1;
        }
    }

    @Override
    public void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException {
        postData(VerbsNative.OP_SEND, context, sgl, count, flags, 0, 0, 0);
    }

    @Override
    public void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken)
            throws RdmaException {
        if (!provider.memoryWindows) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " cannot send with invalidate");
        }
        postData(VerbsNative.OP_SEND_INV, context, sgl, count, flags, 0, 0, remoteToken);
    }

    @Override
    public void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        if (!provider.capabilities().rdmaRead()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " has no RDMA Read");
        }
        if (state == EndpointState.CONNECTED && ord() == 0) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint's ORD is 0: no RDMA Read can start");
        }
        postData(VerbsNative.OP_READ, context, sgl, count, flags, remoteOffset, remoteToken, 0);
    }

    @Override
    public void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
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
        EndpointState s = state;
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
        records.sendRequest(((long) id << 32) | slot, op, ibvFlags, remoteOffset, rkey, invalidate, sges);
        records.commit(sges);
        // once the connection has ended nothing may wait: abandonDeferred ran, or is about to
        if (defer && !records.full() && state == EndpointState.CONNECTED) {
            return; // RequestFlags.DEFER: handed over with the next request posted without it
        }
        try {
            postChain();
        } catch (NativeException e) {
            // the deferred requests before this one were accepted by their posts: they complete
            // FLUSHED; this one is refused to its caller
            sendQueue.unrecord(slot);
            if (sendQueue.abandonUnposted() > 0) {
                sendCq.completeSynthetic(this);
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
        nativeLock.readLock().lock();
        try {
            if (qpReleased) {
                throw new NativeException("ibv_post_send", 107, "the queue pair was released");
            }
            postSendCalls++;
            records.post(qp);
            sendQueue.posted(n);
        } catch (NativeException e) {
            sendQueue.posted(Math.max(0, Math.min(e.posted(), n)));
            throw e;
        } finally {
            records.clear();
            nativeLock.readLock().unlock();
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
                sendCq.completeSynthetic(this);
            }
            requestFailed(e.status(), "posting deferred requests failed: " + e.getMessage());
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
    private void abandonDeferred() {
        synchronized (sendLock) {
            records.clear();
            if (sendQueue.abandonUnposted() > 0) {
                sendCq.completeSynthetic(this);
            }
        }
    }

    /** How many times requests were handed to the device ({@code ibv_post_send}); for tests. */
    long postSendCalls() {
        synchronized (sendLock) {
            return postSendCalls;
        }
    }

    // ------------------------------------------------------------------ completions (under the CQ's lock)

    /**
     * Accounts for one verbs work completion of this endpoint and queues what the consumer is to
     * see on {@code cq}, the queue that polled it (under its lock).
     */
    void complete(long wrId, int wcStatus, int byteLen, int wcFlags, int invalidated, int vendorErr,
            VerbsCompletionQueue.Entry out, VerbsCompletionQueue cq) {
        int slot = (int) (wrId & SEQ_MASK);
        if ((wrId & RECV_BIT) != 0) {
            Object context = recvContext[slot];
            Object named = recvRegions[slot];
            recvContext[slot] = null;
            recvRegions[slot] = null;
            receives.decrementAndGet();
            RdmaStatus status = WcStatus.map(wcStatus, OperationType.RECEIVE, provider.softRoce);
            if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED && deregistered(named)) {
                // The consumer deregistered memory the receive named: devices report it in their
                // own ways (Soft-RoCE as a malformed receive).
                status = RdmaStatus.LOCAL_PROTECTION_ERROR;
            }
            String failure = status == RdmaStatus.SUCCESS || status == RdmaStatus.FLUSHED ? null
                    : "a receive failed with " + WcStatus.name(wcStatus) + " (vendor error 0x"
                            + Integer.toHexString(vendorErr) + ")";
            out.tokenInvalidated = false;
            out.token = 0;
            if (status == RdmaStatus.SUCCESS && (wcFlags & provider.withInvalidateFlags) != 0) {
                VerbsMemoryRegion r = registrations.byToken(invalidated);
                if (r != null && r.isRemote() && r.state() == VerbsMemoryRegion.VALID) {
                    r.invalidated();
                    registrations.recycleWindow(r); // free again: kept for another registration, under another key
                    out.tokenInvalidated = true;
                    out.token = invalidated;
                } else {
                    // NdkSendAndInvalidate: a token that is not a valid remote token of this
                    // endpoint aborts the connection (some devices invalidate other windows).
                    status = RdmaStatus.INVALID_TOKEN;
                    failure = "the peer's send invalidated token 0x" + Integer.toHexString(invalidated)
                            + ", which is not a valid remote token of this endpoint";
                }
            }
            out.context = context;
            out.endpoint = this;
            out.type = OperationType.RECEIVE;
            out.status = status;
            out.bytes = status == RdmaStatus.SUCCESS ? byteLen : 0;
            if (failure != null) {
                requestFailed(status, failure);
                if (status == RdmaStatus.INVALID_TOKEN) {
                    qpToErrorQuietly();
                }
            }
            cq.enqueueLocked(out);
        } else {
            if (!sendQueue.reported(slot)) {
                // an unsignaled bind already settled when the connection was doomed: its flush
                return;
            }
            Object context = sendQueue.context(slot);
            int op = sendQueue.opcode(slot);
            byte flag = sendQueue.flags(slot);
            int bytes = sendQueue.bytes(slot);
            VerbsMemoryRegion region = sendQueue.region(slot);
            sendQueue.retire(slot);
            RdmaStatus status = WcStatus.map(wcStatus, type(op), provider.softRoce);
            if ((flag & SendQueueLedger.INTERNAL) != 0) {
                bindSettled(region);
                if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED && region != null
                        && region.state() != VerbsMemoryRegion.DEREGISTERED) {
                    region.invalidated();
                    requestFailed(RdmaStatus.DEVICE_ERROR, "binding a memory window failed with "
                            + WcStatus.name(wcStatus));
                }
            } else {
                if (op == VerbsNative.OP_LOCAL_INV && status == RdmaStatus.SUCCESS && region != null) {
                    registrations.recycleWindow(region); // free again: kept for another registration, under another key
                }
                if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED) {
                    requestFailed(status, "a " + opName(op) + " failed with " + WcStatus.name(wcStatus)
                            + " (vendor error 0x" + Integer.toHexString(vendorErr) + ")");
                }
                if ((flag & SendQueueLedger.SILENT) == 0 || status != RdmaStatus.SUCCESS) {
                    out.context = context;
                    out.endpoint = this;
                    out.type = type(op);
                    out.status = status;
                    out.bytes = status == RdmaStatus.SUCCESS ? bytes : 0;
                    out.tokenInvalidated = false;
                    out.token = 0;
                    cq.enqueueLocked(out);
                }
            }
            drainSynthetic(cq);
        }
        if (closeRequested && outstanding() == 0) {
            scheduleRelease();
        }
    }

    /** A window's bind completed (told by the ledger, or by its own completion). */
    private void bindSettled(VerbsMemoryRegion region) {
        registrations.bindSettled(region);
    }

    @Override
    public String toString() {
        return "VerbsEndpoint[" + provider.name() + " #" + id + ", " + state + ", " + localAddress + " -> "
                + remoteAddress + "]";
    }
}
