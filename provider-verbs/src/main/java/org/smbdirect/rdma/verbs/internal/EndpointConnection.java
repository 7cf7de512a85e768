package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.net.Inet6Address;
import java.net.InetSocketAddress;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * One endpoint's connection: its state, the rdma_cm steps that make it (address and route
 * resolution and connect on the active side, accept on the passive side) and end it (disconnect,
 * close), the queue pair's moves with them (to the error state, which flushes it), and the one
 * terminal event, which carries the first failure.
 *
 * <p>Connection events arrive on the provider's connection thread and are delivered there; the
 * consumer's calls come from any thread. Native calls on the identifier and the queue pair hold the
 * endpoint's native read lock and check that they still exist.
 */
final class EndpointConnection {
    private static final byte[] NONE = new byte[0];
    /** rdma_cm reject reason of InfiniBand/RoCE when nobody listens (IB_CM_REJ_INVALID_SERVICE_ID). */
    private static final int REJ_INVALID_SERVICE_ID = 8;
    private static final int ETIMEDOUT = 110;
    private static final int ECONNREFUSED = 111;

    private final VerbsEndpoint endpoint;
    private final VerbsProvider provider;
    private final boolean active;
    private final ConnectionListener listener;
    private final VerbsConnectionRequest request;

    private final Object lock = new Object();
    private volatile EndpointState state = EndpointState.IDLE;
    private boolean began;
    private volatile boolean closeRequested;
    private boolean closeRequestedDuringConnect;
    private boolean terminalDelivered;
    private boolean disconnectIssued;
    private boolean releaseStarted;
    private boolean ownsCmId;
    private RdmaStatus failure;
    private String failureReason;
    private byte[] peerPrivateData = NONE;
    private int ird;
    private int ord;
    private volatile InetSocketAddress localAddress;
    private volatile InetSocketAddress remoteAddress;
    private byte[] connectPrivateData;
    private int connectIrd;
    private int connectOrd;

    /**
     * @param ownsCmId whether the endpoint destroys its identifier (a passive one owns it once accepted)
     * @param request the request a passive endpoint was created for; {@code null} on the active side
     */
    EndpointConnection(VerbsEndpoint endpoint, boolean ownsCmId, ConnectionListener listener,
            VerbsConnectionRequest request) {
        this.endpoint = endpoint;
        this.provider = endpoint.provider;
        this.ownsCmId = ownsCmId;
        this.active = request == null;
        this.listener = listener;
        this.request = request;
    }

    // ================================================================== connection service

    EndpointState state() {
        return state;
    }

    /** Whether the consumer closed the endpoint (read on every completion). */
    boolean closeRequested() {
        return closeRequested;
    }

    void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) throws RdmaException {
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
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.idReleased) {
                throw new NativeException("rdma_resolve_addr", 22, "the endpoint was released");
            }
            VerbsNative.resolveAddr(endpoint.cmId, remote.getAddress().getAddress(), scope, remote.getPort(),
                    provider.settings.resolveTimeoutMillis);
        } catch (NativeException e) {
            provider.cmLoop.execute(() -> attemptFailed(e.status() == RdmaStatus.INVALID_PARAMETER
                    ? RdmaStatus.UNREACHABLE : e.status(), "cannot reach " + remote + ": " + e.getMessage()));
        } finally {
            endpoint.nativeLock.readLock().unlock();
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
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.idReleased || endpoint.qpReleased) {
                throw new NativeException("rdma_accept", 22, "the endpoint was released");
            }
            // MS-SMBD 3.1.4.2 relies on retries while the peer reposts receives; Linux and Windows
            // peers expect them (EndpointOptions.rnrRetryCount, 0 to 7, 7 = retry indefinitely).
            VerbsNative.accept(endpoint.cmId, privateData, ird, ord, endpoint.options.rnrRetryCount());
        } catch (NativeException e) {
            provider.cmLoop.execute(() -> attemptFailed(e.status(), "accepting failed: " + e.getMessage()));
        } finally {
            endpoint.nativeLock.readLock().unlock();
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
        endpoint.sendCq.reap();
        endpoint.recvCq.reap();
        endpoint.leaveIdentifierToRequest();
        endpoint.scheduleRelease();
    }

    /** Moves the queue pair to the error state (flushing it), unless it is gone. */
    void qpToErrorQuietly() {
        endpoint.nativeLock.readLock().lock();
        try {
            if (!endpoint.qpReleased) {
                VerbsNative.qpToError(endpoint.qp);
            }
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.DEBUG, e.getMessage());
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
    }

    /** rdma_disconnect, unless the identifier is gone; {@code false} when it failed or was gone. */
    private boolean disconnectQuietly() {
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.idReleased) {
                return false;
            }
            VerbsNative.disconnect(endpoint.cmId);
            return true;
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.DEBUG, "rdma_disconnect: " + e.getMessage());
            return false;
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
    }

    byte[] peerPrivateData() {
        synchronized (lock) {
            return peerPrivateData.clone();
        }
    }

    int ird() {
        synchronized (lock) {
            return ird;
        }
    }

    int ord() {
        synchronized (lock) {
            return ord;
        }
    }

    InetSocketAddress localAddress() {
        return localAddress;
    }

    InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    void disconnect() {
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

    /**
     * The consumer closes the endpoint: remote access ends, then the connection (at once, or as
     * soon as an attempt has an outcome). {@code false} when it was closed already.
     */
    boolean close() {
        EndpointState previous;
        boolean disconnect = false;
        boolean silent = false;
        boolean unanswered;
        synchronized (lock) {
            if (state == EndpointState.CLOSED) {
                return false;
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
        endpoint.registrations.revokeAll();
        if (disconnect) {
            issueDisconnect();
        } else if (silent) {
            qpToErrorQuietly();
        }
        if (unanswered) {
            request.endpointClosed(endpoint);
        }
        return true;
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
                endpoint.registrations.bindLater(region);
                return false;
            }
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint is " + state);
        }
    }

    // ------------------------------------------------------------------ rdma_cm events (connection thread)

    void onAddressResolved() {
        if (!stillConnecting()) {
            return;
        }
        endpoint.nativeLock.readLock().lock();
        try {
            if (!endpoint.idReleased) {
                VerbsNative.resolveRoute(endpoint.cmId, provider.settings.resolveTimeoutMillis);
            }
        } catch (NativeException e) {
            attemptFailed(RdmaStatus.UNREACHABLE, "route resolution failed: " + e.getMessage());
        } finally {
            endpoint.nativeLock.readLock().unlock();
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
        endpoint.nativeLock.readLock().lock();
        try {
            if (!endpoint.idReleased) {
                // rnr_retry_count as configured: with 0 a send without a posted receive fails at once
                // (RECEIVER_NOT_READY); 7 means retry indefinitely.
                VerbsNative.connect(endpoint.cmId, data, i, o, provider.settings.retryCount,
                        endpoint.options.rnrRetryCount());
            }
        } catch (NativeException e) {
            // iWARP (siw) refuses at once, in the call, where RoCE's CM rejects with an event
            attemptFailed(e.status(), e.errno() == ECONNREFUSED ? "nobody listens at " + remoteAddress + " ("
                    + e.getMessage() + ")" : e.getMessage());
        } finally {
            endpoint.nativeLock.readLock().unlock();
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
            endpoint.registrations.bindPending();
            synchronized (lock) {
                if (terminalDelivered) {
                    return;
                }
                if (endpoint.registrations.bindsPending()) {
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
            listener.onEstablished(endpoint);
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
        endpoint.sendCq.reap();
        endpoint.recvCq.reap();
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
        endpoint.sends.abandonDeferred();
        if (deliver) {
            try {
                if (status == null) {
                    listener.onDisconnected(endpoint);
                } else {
                    listener.onError(endpoint, status, reason);
                }
            } catch (RuntimeException | Error e) {
                VerbsProvider.LOG.log(Level.WARNING, "ConnectionListener threw", e);
            }
        }
        endpoint.scheduleRelease();
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
        endpoint.nativeLock.readLock().lock();
        try {
            a = endpoint.idReleased ? null : VerbsNative.address(endpoint.cmId, remote);
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
        return VerbsNative.socketAddress(a);
    }

    // ------------------------------------------------------------------ the endpoint's release

    /** Whether the endpoint may be released: closed, and its terminal event delivered. */
    boolean mayRelease() {
        synchronized (lock) {
            return !releaseStarted && closeRequested && terminalDelivered;
        }
    }

    /**
     * The close deadline passed: the connection ends now, its terminal event delivered, unless
     * the release began already ({@code false}).
     */
    boolean endBeforeRelease() {
        boolean terminal;
        synchronized (lock) {
            if (releaseStarted) {
                return false;
            }
            terminal = terminalDelivered;
        }
        if (!terminal) {
            qpToErrorQuietly();
            deliverTerminal();
        }
        return true;
    }

    /** The release begins: no event is delivered from now on. {@code false} when it began already. */
    boolean beginRelease() {
        synchronized (lock) {
            if (releaseStarted) {
                return false;
            }
            releaseStarted = true;
            terminalDelivered = true;
            if (state != EndpointState.CLOSED) {
                state = EndpointState.DISCONNECTED;
            }
            return true;
        }
    }

    /** Whether the endpoint destroys its identifier (else the request it was created for does). */
    boolean ownsCmId() {
        synchronized (lock) {
            return ownsCmId;
        }
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

    /** Whether the endpoint will see no further connection event (it never began, or it ended). */
    boolean isTerminated() {
        synchronized (lock) {
            return terminalDelivered || !began;
        }
    }
}
