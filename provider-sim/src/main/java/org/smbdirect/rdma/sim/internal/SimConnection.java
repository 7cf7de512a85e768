package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;

import org.smbdirect.rdma.RdmaStatus;

/**
 * One reliable connection between two endpoints, and the actor that is its "wire": it runs the
 * connection set-up, both endpoints' data path ({@link DataPath}: sends, RDMA Reads and Writes,
 * invalidates, completions in posted order), failures and tear-down, and it delivers both
 * endpoints' connection events ({@link ConnectionEvents}). Everything here runs on a fabric thread
 * of the active side's provider, one step at a time, so the two endpoints' data-path state needs no
 * locking beyond the ring indices shared with posting threads.
 *
 * <p>Faithful RC semantics: a send fills the peer's oldest posted receive ({@link SendDelivery});
 * RDMA access is checked against the peer endpoint's regions ({@link RegionAccess}); completions of
 * a queue come in posted order ({@link InOrderCompletion}); the first failure ({@link FirstFailure})
 * ends the connection and everything still outstanding completes FLUSHED.
 */
final class SimConnection extends Actor {
    /** Slot due time meaning "arrival not computed yet". */
    static final long UNSET = Long.MIN_VALUE;

    private static final int LOOKUP = 0;
    private static final int REQUESTED = 1;
    private static final int ESTABLISHED = 2;
    private static final int DONE = 3;

    final SimProvider host;
    final SimEndpoint active;
    final InetSocketAddress target;
    final byte[] requestPrivateData;
    final int requestIrd;
    final int requestOrd;
    /** Per-provider ordinal of this connection, the identity used by fault injection. */
    final int ordinal;
    private final Timer.Task wake = new Timer.Task() {
        @Override
        void fire() {
            kick();
        }
    };

    SimEndpoint passive;
    SimConnectionRequest request;
    CaptureSet capture;

    // ---- actor-owned
    private int phase = LOOKUP;
    private volatile boolean terminated;
    private final FirstFailure failure = new FirstFailure();
    /** Set when the connection is established. */
    private DataPath path;

    // ---- signals, guarded by this
    private SimEndpoint disconnectBy;
    private SimEndpoint failBy;
    private RdmaStatus failStatus;
    private String failReason;

    SimConnection(SimEndpoint active, InetSocketAddress target, byte[] privateData, int ird, int ord) {
        super(active.provider.scheduler);
        this.host = active.provider;
        this.active = active;
        this.target = target;
        this.requestPrivateData = privateData;
        this.requestIrd = ird;
        this.requestOrd = ord;
        this.ordinal = host.nextConnectionOrdinal();
    }

    boolean isTerminated() {
        return terminated;
    }

    // ================================================================ signals from other threads

    void requestDisconnect(SimEndpoint by) {
        synchronized (this) {
            if (disconnectBy == null) {
                disconnectBy = by;
            }
        }
        kick();
    }

    void requestFailure(SimEndpoint by, RdmaStatus status, String reason) {
        synchronized (this) {
            if (failBy == null) {
                failBy = by;
                failStatus = status;
                failReason = reason;
            }
        }
        kick();
    }

    // ================================================================ the actor

    @Override
    protected void act() {
        if (phase == DONE) {
            return;
        }
        SimEndpoint discBy;
        SimEndpoint fBy;
        synchronized (this) {
            discBy = disconnectBy;
            fBy = failBy;
        }
        boolean ending = discBy != null || fBy != null;
        if (phase == LOOKUP) {
            if (ending) {
                endBeforeEstablished("disconnected before the request was sent");
                return;
            }
            lookup();
            if (phase != REQUESTED) {
                return;
            }
        }
        if (phase == REQUESTED) {
            SimConnectionRequest r = request;
            int rs;
            synchronized (r) {
                if (ending && r.state == SimConnectionRequest.PENDING) {
                    r.state = SimConnectionRequest.CANCELLED;
                }
                rs = r.state;
                if (rs == SimConnectionRequest.ACCEPTED) {
                    passive = r.endpoint;
                }
            }
            if (rs == SimConnectionRequest.CANCELLED) {
                r.releaseEndpoint();
                endBeforeEstablished("disconnected while the request was pending");
                return;
            }
            if (rs == SimConnectionRequest.REJECTED || rs == SimConnectionRequest.TIMED_OUT) {
                refuse(rs == SimConnectionRequest.REJECTED ? RdmaStatus.CONNECTION_REFUSED : RdmaStatus.TIMEOUT,
                        r.rejectPrivateData, r.rejectReason);
                return;
            }
            if (rs == SimConnectionRequest.PENDING) {
                return;
            }
            if (ending) {
                terminate();
                return;
            }
            establish();
            synchronized (this) {
                ending = disconnectBy != null || failBy != null;
            }
            if (ending) {
                terminate();
                return;
            }
        }
        // ESTABLISHED
        if (ending) {
            terminate();
            return;
        }
        path.pump();
        if (failure.latched()) {
            path.finishFailed();
            terminate();
        }
    }

    /** The attempt ends before establishment because the active side disconnected, closed or failed. */
    private void endBeforeEstablished(String why) {
        RdmaStatus fStatus;
        String fReason;
        synchronized (this) {
            fStatus = failBy != null ? failStatus : null;
            fReason = failReason;
        }
        endActive(fStatus, fStatus == null ? why : fReason);
    }

    // ================================================================ set-up

    private void lookup() {
        Fabric fabric = host.fabric;
        SimProvider targetProvider = fabric.providerAt(target.getAddress());
        SimListener listener = fabric.listenerAt(target);
        capture = CaptureSet.create(host, targetProvider);
        if (capture != null) {
            capture.cmRequest(this);
        }
        if (listener == null) {
            if (targetProvider == null) {
                endActive(RdmaStatus.UNREACHABLE, "no provider has address " + target.getAddress().getHostAddress()
                        + " on fabric " + fabric.name);
            } else {
                if (capture != null) {
                    capture.cmReject(this, null, CaptureSet.REJ_INVALID_SERVICE_ID, SimEndpoint.NO_BYTES);
                }
                endActive(RdmaStatus.CONNECTION_REFUSED, "nobody listens at " + target);
            }
            return;
        }
        request = new SimConnectionRequest(this, listener);
        phase = REQUESTED;
        listener.deliver(request);
    }

    private void establish() {
        SimEndpoint p = passive;
        SimConnectionRequest r = request;
        // RDMA connection management mirrors the depths: the active side may have as many reads
        // outstanding as the passive side serves, and serves as many as it issues.
        active.ird = r.acceptOrd;
        active.ord = r.acceptIrd;
        active.peerPrivateData = r.acceptPrivateData;
        p.remoteAddress = active.localAddress;
        boolean a = active.markConnected();
        boolean b = p.markConnected();
        path = new DataPath(this, host, wake, ordinal, active, p, capture, failure);
        phase = ESTABLISHED;
        if (capture != null) {
            capture.cmReply(this);
            capture.cmReadyToUse(this);
        }
        active.established = a;
        p.established = b;
        if (a) {
            ConnectionEvents.established(active);
        }
        if (b) {
            ConnectionEvents.established(p);
        }
    }

    /** The active side's attempt ended before any passive endpoint took part. */
    private void endActive(RdmaStatus status, String reason) {
        phase = DONE;
        active.markDisconnected();
        host.fabric.release(active.localAddress);
        InOrderCompletion.flushAll(active);
        terminated = true;
        host.timer.cancel(wake);
        if (active.isClosed()) {
            host.forget(active);
        }
        if (!active.terminalDelivered) {
            active.terminalDelivered = true;
            if (status == null) {
                ConnectionEvents.disconnected(active);
            } else {
                ConnectionEvents.error(active, status, reason);
            }
        }
    }

    private void refuse(RdmaStatus status, byte[] privateData, String reason) {
        if (capture != null) {
            capture.cmReject(this, request.endpoint,
                    status == RdmaStatus.TIMEOUT ? CaptureSet.REJ_TIMEOUT : CaptureSet.REJ_CONSUMER, privateData);
        }
        active.peerPrivateData = privateData == null ? SimEndpoint.NO_BYTES : privateData;
        endActive(status, reason);
    }

    // ================================================================ tear-down

    private void terminate() {
        SimEndpoint discBy;
        SimEndpoint fBy;
        RdmaStatus fStatus;
        String fReason;
        synchronized (this) {
            discBy = disconnectBy;
            fBy = failBy;
            fStatus = failStatus;
            fReason = failReason;
        }
        phase = DONE;
        SimEndpoint a = active;
        SimEndpoint b = passive;
        a.markDisconnected();
        if (b != null) {
            b.markDisconnected();
        }
        InOrderCompletion.flushAll(a);
        if (b != null) {
            InOrderCompletion.flushAll(b);
        }
        host.fabric.release(a.localAddress);
        if (capture != null && b != null && (a.established || b.established)) {
            SimEndpoint from = failure.side != null ? failure.side : fBy != null ? fBy : discBy != null ? discBy : a;
            capture.cmDisconnect(from, from == a ? b : a);
        }
        terminated = true;
        host.timer.cancel(wake);
        if (a.isClosed()) {
            host.forget(a);
        }
        if (b != null && b.isClosed()) {
            b.provider.forget(b);
        }
        // events: exactly one terminal event for every endpoint that began connecting
        for (int i = 0; i < 2; i++) {
            SimEndpoint e = i == 0 ? a : b;
            if (e == null || !e.beganConnecting || e.terminalDelivered) {
                continue;
            }
            e.terminalDelivered = true;
            if (failure.side != null) {
                if (e == failure.side) {
                    ConnectionEvents.error(e, failure.status, failure.reason);
                } else {
                    ConnectionEvents.error(e, failure.peerStatus, "the peer's request failed: " + failure.reason);
                }
            } else if (failure.resetByFault) {
                ConnectionEvents.error(e, RdmaStatus.CONNECTION_RESET, failure.resetReason);
            } else if (fBy != null) {
                if (e == fBy) {
                    ConnectionEvents.error(e, fStatus, fReason);
                } else {
                    ConnectionEvents.error(e, RdmaStatus.CONNECTION_RESET, "the peer's connection failed: " + fReason);
                }
            } else if (e.established || e == discBy) {
                ConnectionEvents.disconnected(e);
            } else {
                ConnectionEvents.error(e, RdmaStatus.CONNECTION_RESET,
                        "the peer went away before the connection was established");
            }
        }
    }

    @Override
    public String toString() {
        return "SimConnection#" + ordinal + "[" + active + " -> " + target + "]";
    }
}
