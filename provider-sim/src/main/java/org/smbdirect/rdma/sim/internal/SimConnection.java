package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;

/**
 * One reliable connection between two endpoints, and the actor that is its "wire": it runs the
 * connection set-up, both endpoints' send queues (sends, RDMA Reads and Writes, invalidates), the
 * matching of sends with the peer's receives, completions in posted order, failures and tear-down,
 * and it delivers both endpoints' connection events. Everything here runs on a fabric thread of
 * the active side's provider, one step at a time, so the two endpoints' data-path state needs no
 * locking beyond the ring indices shared with posting threads.
 *
 * <p>Faithful RC semantics: a send fills the peer's oldest posted receive or fails
 * RECEIVER_NOT_READY; a longer message fails LOCAL_LENGTH_ERROR at the receiver and
 * REMOTE_INVALID_REQUEST at the sender; RDMA access is checked against the peer endpoint's
 * regions (token, rights, bounds) under the peer's region lock; RDMA Reads are pipelined (the
 * data lands when the response is processed, after requests posted later may already have been
 * transmitted) and limited by ORD; READ_FENCE holds a request until earlier reads completed;
 * completions of a queue come in posted order; the first failure ends the connection and
 * everything still outstanding completes FLUSHED.
 */
final class SimConnection extends Actor {
    /** Slot due time meaning "arrival not computed yet". */
    static final long UNSET = Long.MIN_VALUE;
    /** The receiver-not-ready timer: rdma_cm's default min_rnr_timer (code 12, 0.64 ms). */
    static final long RNR_TIMER_NANOS = 640_000;
    private static final int BATCH = 128;
    /**
     * Bytes one step moves at most before it yields (4 MiB: about 80 us of copying on the CI
     * machine): the completions of what moved are then notified, and new work is posted meanwhile,
     * before more data moves. Under a bulk load that is one notification per few large requests, as
     * a NIC moderates its completion interrupts: each notification costs the thread that moves the
     * data a call of the consumer's handler (about 1 us in the SMB Direct engine) however many
     * completions it finds.
     */
    static final int BYTE_BUDGET = 4 * 1024 * 1024;
    private static final OperationType[] TYPE_OF_OP = {null, OperationType.SEND, OperationType.SEND,
        OperationType.WRITE, OperationType.READ, OperationType.INVALIDATE};
    private static final RdmaStatus[] STATUSES = RdmaStatus.values();

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
    private final FaultInjector.Stream faults;
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
    private SimEndpoint errSide;
    private RdmaStatus errStatus;
    private RdmaStatus errPeerStatus;
    private String errReason;
    private long errSlot;
    /** Bytes moved in this step. */
    private long moved;
    private boolean resetByFault;
    private String resetReason;

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
        this.faults = host.faults.stream(ordinal);
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
        pump();
        if (errSide != null || resetByFault) {
            if (errSide != null) {
                SimEndpoint other = errSide == active ? passive : active;
                finish(errSide, other, 0, true);
                // what the other side already had acknowledged completes normally; the rest flushes
                finish(other, errSide, System.nanoTime(), false);
            }
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
        phase = ESTABLISHED;
        if (capture != null) {
            capture.cmReply(this);
            capture.cmReadyToUse(this);
        }
        active.established = a;
        p.established = b;
        if (a) {
            established(active);
        }
        if (b) {
            established(p);
        }
    }

    /** The active side's attempt ended before any passive endpoint took part. */
    private void endActive(RdmaStatus status, String reason) {
        phase = DONE;
        active.markDisconnected();
        host.fabric.release(active.localAddress);
        flushAll(active);
        terminated = true;
        host.timer.cancel(wake);
        if (active.isClosed()) {
            host.forget(active);
        }
        if (!active.terminalDelivered) {
            active.terminalDelivered = true;
            if (status == null) {
                disconnected(active);
            } else {
                error(active, status, reason);
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

    // ================================================================ data path

    private void pump() {
        SimEndpoint a = active;
        SimEndpoint b = passive;
        // The clock is read only where the latency model or a timer needs it (0: not read).
        long now = host.live().latencyEnabled ? System.nanoTime() : 0;
        int budget = BATCH;
        moved = 0;
        boolean progress = true;
        while (progress && budget > 0 && moved < BYTE_BUDGET) {
            int n = start(a, b, now, budget);
            budget -= n;
            if (errSide != null || resetByFault) {
                return;
            }
            int m = start(b, a, now, budget);
            budget -= m;
            if (errSide != null || resetByFault) {
                return;
            }
            boolean f1 = finish(a, b, now, false);
            if (errSide != null) {
                return;
            }
            boolean f2 = finish(b, a, now, false);
            if (errSide != null) {
                return;
            }
            progress = n > 0 || m > 0 || f1 || f2;
        }
        if (budget <= 0 || moved >= BYTE_BUDGET) {
            kick(); // yield the thread; more work may be waiting
        }
    }

    /**
     * Moves {@code x}'s requests along, in order: transmits posted ones as far as READ_FENCE and ORD
     * allow (with the latency model, each gets its arrival time), then starts those that have
     * arrived (their effect at the peer, or a local invalidate). Returns how many it started.
     */
    private int start(SimEndpoint x, SimEndpoint y, long now, int budget) {
        SendQueue q = x.sq;
        long tail;
        synchronized (x) {
            tail = q.tail;
        }
        SimSettings live = host.live();
        if (now == 0 && live.latencyEnabled) {
            now = System.nanoTime(); // the latency model was switched on since the pump began
        }
        while (q.sent < tail) {
            int s = q.slot(q.sent);
            byte op = q.op[s];
            if ((q.flags[s] & RequestFlags.READ_FENCE) != 0 && x.readsOutstanding > 0) {
                break;
            }
            if (op == SendQueue.OP_READ) {
                if (x.readsOutstanding >= readLimit(x, y)) {
                    break;
                }
                if (++x.readsOutstanding > x.peakReadsOutstanding) {
                    x.peakReadsOutstanding = x.readsOutstanding;
                }
            }
            q.due[s] = live.latencyEnabled && op != SendQueue.OP_INVALIDATE
                    ? arrival(x, op == SendQueue.OP_READ ? 0 : q.length[s], now, live) : 0;
            q.sent++;
        }
        int n = 0;
        while (q.next < q.sent && n < budget && moved < BYTE_BUDGET) {
            int s = q.slot(q.next);
            byte op = q.op[s];
            long arrival = q.due[s];
            if (arrival != 0 && arrival - now > 0) {
                host.timer.schedule(wake, arrival);
                break;
            }
            int fault = faults.decide(op, live);
            if ((fault & FaultInjector.DISCONNECT) != 0) {
                resetByFault = true;
                resetReason = "injected fault: connection " + ordinal + " reset at operation " + faults.operations();
                return n;
            }
            switch (op) {
                case SendQueue.OP_SEND:
                case SendQueue.OP_SEND_INVALIDATE:
                    if (!startSend(x, y, q, s, (fault & FaultInjector.RECEIVER_NOT_READY) != 0)) {
                        // RNR NAK with retries left: the request stays first in line and is
                        // transmitted again when the receiver-not-ready timer expires.
                        host.timer.schedule(wake, clock(now) + RNR_TIMER_NANOS);
                        return n;
                    }
                    break;
                case SendQueue.OP_WRITE:
                    startWrite(x, y, q, s);
                    break;
                case SendQueue.OP_READ:
                    startRead(x, y, q, s);
                    break;
                default:
                    startInvalidate(x, q, s);
                    break;
            }
            if (q.state[s] == SendQueue.STARTED) {
                long due = 0;
                if (live.latencyEnabled && op != SendQueue.OP_INVALIDATE) {
                    long oneWay = live.latencyMicros * 1000L;
                    if (op == SendQueue.OP_READ) {
                        long begin = y.linkFreeAt - now > 0 ? y.linkFreeAt : now;
                        y.linkFreeAt = begin + serialization(q.length[s], live);
                        due = y.linkFreeAt + oneWay;
                    } else {
                        due = arrival + oneWay;
                    }
                }
                if ((fault & FaultInjector.DELAY) != 0) {
                    due = (due == 0 ? clock(now) : due) + live.delayMillis * 1_000_000L;
                }
                q.due[s] = due;
            }
            q.next++;
            n++;
            if (errSide != null) {
                break;
            }
        }
        return n;
    }

    /** The time {@code now}, or the clock's when {@code now} was not read (0). */
    private static long clock(long now) {
        return now != 0 ? now : System.nanoTime();
    }

    private static long serialization(int bytes, SimSettings live) {
        // 8 bits per byte at bandwidthMbps megabits per second: 8000 / Mbps nanoseconds per byte
        return bytes * 8000L / live.bandwidthMbps;
    }

    private static long arrival(SimEndpoint x, int bytes, long now, SimSettings live) {
        long begin = x.linkFreeAt - now > 0 ? x.linkFreeAt : now;
        x.linkFreeAt = begin + serialization(bytes, live);
        return x.linkFreeAt + live.latencyMicros * 1000L;
    }

    /**
     * RDMA Reads towards the peer that may be outstanding: this side's ORD, and the peer's IRD
     * (a peer with IRD 0 refuses reads when they arrive).
     */
    private static int readLimit(SimEndpoint x, SimEndpoint y) {
        return y.ird == 0 ? x.ord : Math.min(x.ord, y.ird);
    }

    /**
     * Starts a send at the peer. Returns {@code false} only when the peer had no receive posted and
     * the sender's RNR retry count allows another try (7: always), without any effect yet.
     */
    private boolean startSend(SimEndpoint x, SimEndpoint y, SendQueue q, int s, boolean forcedRnr) {
        int len = q.length[s];
        if (!localValid(q, s)) {
            failAt(x, q, RdmaStatus.LOCAL_PROTECTION_ERROR, RdmaStatus.CONNECTION_RESET,
                    "a send names a region that was deregistered or invalidated after posting");
            return true;
        }
        boolean solicited = (q.flags[s] & RequestFlags.SOLICIT_EVENT) != 0;
        boolean inv = q.op[s] == SendQueue.OP_SEND_INVALIDATE;
        RecvQueue r = y.rq;
        boolean ready = r.head != r.tail;
        if (!ready || forcedRnr) {
            if (capture != null) {
                capture.send(x, y, q, s, solicited, inv);
                capture.nak(y, x, CaptureSet.SYNDROME_RNR);
            }
            int retries = x.options.rnrRetryCount();
            if (!forcedRnr && (retries == 7 || q.rnrTries[s] < retries)) {
                q.rnrTries[s]++;
                return false;
            }
            failAt(x, q, RdmaStatus.RECEIVER_NOT_READY, RdmaStatus.CONNECTION_RESET,
                    forcedRnr ? "injected fault: receiver not ready" : "receiver not ready: no receive posted at the peer"
                            + (retries > 0 ? " after " + retries + " retries" : ""));
            return true;
        }
        int rs = r.slot(r.head);
        if (len > r.capacity[rs]) {
            if (capture != null) {
                capture.send(x, y, q, s, solicited, inv);
                capture.nak(y, x, CaptureSet.SYNDROME_INVALID_REQUEST);
            }
            completeReceive(y, rs, RdmaStatus.LOCAL_LENGTH_ERROR, 0, false, false, 0);
            failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.LOCAL_LENGTH_ERROR, "a message of " + len
                    + " bytes arrived for a receive of " + r.capacity[rs] + " bytes");
            return true;
        }
        if (!receiveValid(r, rs)) {
            if (capture != null) {
                capture.send(x, y, q, s, solicited, inv);
                capture.nak(y, x, CaptureSet.SYNDROME_REMOTE_OPERATION);
            }
            completeReceive(y, rs, RdmaStatus.LOCAL_PROTECTION_ERROR, 0, false, false, 0);
            failAt(x, q, RdmaStatus.REMOTE_OPERATION_ERROR, RdmaStatus.LOCAL_PROTECTION_ERROR,
                    "the peer's receive names a region that was deregistered or invalidated after posting");
            return true;
        }
        int base = s * q.maxSge;
        Copy.scatter(q.sgeRegion, q.sgeOffset, q.sgeLength, base, q.sgeCount[s],
                (q.flags[s] & RequestFlags.INLINE) != 0 ? q.inline[s] : null, len,
                r.sgeRegion, r.sgeOffset, r.sgeLength, rs * r.maxSge, r.sgeCount[rs]);
        moved += len;
        int token = 0;
        if (inv) {
            token = q.remoteToken[s];
            SimRegion t = y.provider.regions.get(token);
            if (t == null || t.endpoint != y || !y.invalidate(t)) {
                if (capture != null) {
                    capture.send(x, y, q, s, solicited, true);
                    capture.nak(y, x, CaptureSet.SYNDROME_INVALID_REQUEST);
                }
                completeReceive(y, rs, RdmaStatus.INVALID_TOKEN, 0, false, false, 0);
                // NdkSendAndInvalidate: an invalid token makes the receiving provider abort the connection.
                failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.INVALID_TOKEN, "send-and-invalidate named token 0x"
                        + Integer.toHexString(token) + ", which is not a valid remote token of the peer's endpoint");
                return true;
            }
        }
        if (capture != null) {
            capture.send(x, y, q, s, solicited, inv);
            capture.ack(y, x);
        }
        completeReceive(y, rs, RdmaStatus.SUCCESS, len, solicited, inv, token);
        q.state[s] = SendQueue.STARTED;
        return true;
    }

    private void startWrite(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        if (!localValid(q, s)) {
            failAt(x, q, RdmaStatus.LOCAL_PROTECTION_ERROR, RdmaStatus.CONNECTION_RESET,
                    "an RDMA Write names a region that was deregistered or invalidated after posting");
            return;
        }
        long offset = q.remoteOffset[s];
        int token = q.remoteToken[s];
        SimRegion t = y.provider.regions.get(token);
        String refusal;
        synchronized (y.regionLock) {
            refusal = checkRemote(t, y, Access.REMOTE_WRITE, offset, len);
            if (refusal == null) {
                Copy.gatherInto(q.sgeRegion, q.sgeOffset, q.sgeLength, s * q.maxSge, q.sgeCount[s],
                        (q.flags[s] & RequestFlags.INLINE) != 0 ? q.inline[s] : null, len, t.mem,
                        (int) (offset - t.remoteOffset));
                moved += len;
            }
        }
        if (capture != null) {
            capture.write(x, y, q, s);
            if (refusal == null) {
                capture.ack(y, x);
            } else {
                capture.nak(y, x, CaptureSet.SYNDROME_REMOTE_ACCESS);
            }
        }
        if (refusal != null) {
            failAt(x, q, RdmaStatus.REMOTE_ACCESS_ERROR, RdmaStatus.CONNECTION_RESET, "RDMA Write of " + len
                    + " bytes at 0x" + Long.toHexString(offset) + " with token 0x" + Integer.toHexString(token) + " refused: "
                    + refusal);
            return;
        }
        q.state[s] = SendQueue.STARTED;
    }

    private void startRead(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        if (y.ird == 0) {
            if (capture != null) {
                capture.readRequest(x, y, q, s);
                capture.nak(y, x, CaptureSet.SYNDROME_INVALID_REQUEST);
            }
            failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.CONNECTION_RESET,
                    "RDMA Read towards a peer whose IRD is 0");
            return;
        }
        long offset = q.remoteOffset[s];
        int token = q.remoteToken[s];
        SimRegion t = y.provider.regions.get(token);
        String refusal;
        synchronized (y.regionLock) {
            refusal = checkRemote(t, y, Access.REMOTE_READ, offset, len);
            if (refusal == null) {
                // the responder serves the read now; its data is placed when the response arrives
                t.pins++;
                q.subject[s] = t;
            }
        }
        if (capture != null) {
            capture.readRequest(x, y, q, s);
            if (refusal != null) {
                capture.nak(y, x, CaptureSet.SYNDROME_REMOTE_ACCESS);
            }
        }
        if (refusal != null) {
            failAt(x, q, RdmaStatus.REMOTE_ACCESS_ERROR, RdmaStatus.CONNECTION_RESET, "RDMA Read of " + len
                    + " bytes at 0x" + Long.toHexString(offset) + " with token 0x" + Integer.toHexString(token) + " refused: "
                    + refusal);
            return;
        }
        q.state[s] = SendQueue.STARTED;
    }

    private void startInvalidate(SimEndpoint x, SendQueue q, int s) {
        SimRegion r = q.subject[s];
        if (!x.invalidate(r)) {
            failAt(x, q, RdmaStatus.INVALID_TOKEN, RdmaStatus.CONNECTION_RESET, "local invalidate of token 0x"
                    + Integer.toHexString(r.token) + ", which is already invalid");
            return;
        }
        q.state[s] = SendQueue.STARTED;
    }

    /** Why the peer refuses a remote access, or {@code null}; called under the peer's region lock. */
    private static String checkRemote(SimRegion t, SimEndpoint y, int right, long offset, int len) {
        if (t == null) {
            return "unknown token";
        }
        if (t.endpoint != y) {
            return "the token belongs to another connection";
        }
        if (t.state != SimRegion.VALID) {
            return t.state == SimRegion.INVALIDATED ? "the token was invalidated" : "the region was deregistered";
        }
        if (t.bindPending) {
            return "the token was registered with DEFER and no request of its endpoint has been posted since";
        }
        if ((t.access & right) == 0) {
            return "the region does not grant " + Access.toString(right);
        }
        if (!t.containsRemote(offset, len)) {
            return "the range lies outside the region (0x" + Long.toHexString(t.remoteOffset) + ", " + t.length + " bytes)";
        }
        return null;
    }

    private static boolean localValid(SendQueue q, int s) {
        int base = s * q.maxSge;
        for (int i = 0; i < q.sgeCount[s]; i++) {
            if (q.sgeRegion[base + i].state != SimRegion.VALID) {
                return false;
            }
        }
        return true;
    }

    private static boolean receiveValid(RecvQueue r, int rs) {
        int base = rs * r.maxSge;
        for (int i = 0; i < r.sgeCount[rs]; i++) {
            if (r.sgeRegion[base + i].state != SimRegion.VALID) {
                return false;
            }
        }
        return true;
    }

    private static void completeReceive(SimEndpoint y, int rs, RdmaStatus status, int len, boolean solicited,
            boolean invalidated, int token) {
        RecvQueue r = y.rq;
        Object ctx = r.context[rs];
        r.clear(rs);
        r.head++; // this actor is the only one that moves head (RecvQueue)
        y.recvCq.push(ctx, y, OperationType.RECEIVE, status, status == RdmaStatus.SUCCESS ? len : 0, solicited,
                invalidated, token);
    }

    /** The request at {@code x}'s {@code next} failed when starting; the connection ends after it completes. */
    private void failAt(SimEndpoint x, SendQueue q, RdmaStatus status, RdmaStatus peerStatus, String reason) {
        int s = q.slot(q.next);
        q.state[s] = SendQueue.FAILED;
        q.status[s] = (byte) status.ordinal();
        errSide = x;
        errStatus = status;
        errPeerStatus = peerStatus;
        errReason = reason;
        errSlot = q.next;
    }

    /**
     * Completes started requests of {@code x} from the head, in order, when due. With {@code force}
     * (the connection is failing because of {@code x}) it completes those before the failed one and
     * the failed one itself, regardless of due times.
     */
    private boolean finish(SimEndpoint x, SimEndpoint y, long now, boolean force) {
        SendQueue q = x.sq;
        boolean progress = false;
        while (q.head < q.next) {
            if (force && q.head > errSlot) {
                break;
            }
            int s = q.slot(q.head);
            RdmaStatus st;
            if (q.state[s] == SendQueue.STARTED) {
                if (!force && q.op[s] == SendQueue.OP_READ && moved >= BYTE_BUDGET) {
                    break; // the response's data moves in the next step
                }
                long due = q.due[s];
                if (!force && due != 0 && due - clock(now) > 0) {
                    host.timer.schedule(wake, due);
                    break;
                }
                st = q.op[s] == SendQueue.OP_READ ? placeRead(x, y, q, s) : RdmaStatus.SUCCESS;
            } else {
                st = STATUSES[q.status[s]];
            }
            Object ctx = q.context[s];
            byte op = q.op[s];
            int flags = q.flags[s];
            int len = q.length[s];
            long counter = q.head;
            synchronized (x) {
                q.clear(s);
                q.head++;
            }
            if (st != RdmaStatus.SUCCESS || (flags & RequestFlags.SILENT_SUCCESS) == 0) {
                x.sendCq.push(ctx, x, TYPE_OF_OP[op], st, st == RdmaStatus.SUCCESS ? len : 0, false, false, 0);
            }
            progress = true;
            if (st != RdmaStatus.SUCCESS) {
                if (errSide == null) {
                    errSide = x;
                    errStatus = st;
                    errPeerStatus = RdmaStatus.CONNECTION_RESET;
                    errReason = "RDMA Read response refused: the region was deregistered or invalidated meanwhile";
                    errSlot = counter;
                }
                break;
            }
        }
        return progress;
    }

    /**
     * Places an RDMA Read's data: the response arrives. The responder granted the read when the
     * request arrived; a later invalidation does not undo that, a deregistration since then (only
     * possible from a callback, which cannot wait) does.
     */
    private RdmaStatus placeRead(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        x.readsOutstanding--;
        SimRegion t = q.subject[s];
        int len = q.length[s];
        int at = (int) (q.remoteOffset[s] - t.remoteOffset);
        boolean placed;
        synchronized (y.regionLock) {
            placed = t.state != SimRegion.DEREGISTERED && localValid(q, s);
            if (placed) {
                Copy.scatterFrom(t.mem, at, len, q.sgeRegion, q.sgeOffset, q.sgeLength, s * q.maxSge, q.sgeCount[s]);
                moved += len;
            }
            unpin(t);
        }
        if (!placed) {
            return t.state == SimRegion.DEREGISTERED ? RdmaStatus.REMOTE_ACCESS_ERROR : RdmaStatus.LOCAL_PROTECTION_ERROR;
        }
        if (capture != null) {
            capture.readResponse(y, x, t, at, len, q.psn[s]);
        }
        return RdmaStatus.SUCCESS;
    }

    /** Releases a read's pin; called with the region's endpoint's region lock held. */
    private static void unpin(SimRegion t) {
        if (--t.pins == 0) {
            t.endpoint.regionLock.notifyAll();
        }
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
        flushAll(a);
        if (b != null) {
            flushAll(b);
        }
        host.fabric.release(a.localAddress);
        if (capture != null && b != null && (a.established || b.established)) {
            SimEndpoint from = errSide != null ? errSide : fBy != null ? fBy : discBy != null ? discBy : a;
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
            if (errSide != null) {
                if (e == errSide) {
                    error(e, errStatus, errReason);
                } else {
                    error(e, errPeerStatus, "the peer's request failed: " + errReason);
                }
            } else if (resetByFault) {
                error(e, RdmaStatus.CONNECTION_RESET, resetReason);
            } else if (fBy != null) {
                if (e == fBy) {
                    error(e, fStatus, fReason);
                } else {
                    error(e, RdmaStatus.CONNECTION_RESET, "the peer's connection failed: " + fReason);
                }
            } else if (e.established || e == discBy) {
                disconnected(e);
            } else {
                error(e, RdmaStatus.CONNECTION_RESET, "the peer went away before the connection was established");
            }
        }
    }

    /** Completes everything outstanding on an endpoint with FLUSHED, in posted order. */
    private static void flushAll(SimEndpoint x) {
        SendQueue q = x.sq;
        for (;;) {
            Object ctx;
            byte op;
            SimRegion pinned;
            synchronized (x) {
                if (q.head == q.tail) {
                    break;
                }
                int s = q.slot(q.head);
                ctx = q.context[s];
                op = q.op[s];
                pinned = op == SendQueue.OP_READ && q.state[s] == SendQueue.STARTED ? q.subject[s] : null;
                q.clear(s);
                q.head++;
                if (q.next < q.head) {
                    q.next = q.head;
                }
                if (q.sent < q.head) {
                    q.sent = q.head;
                }
            }
            if (pinned != null) {
                synchronized (pinned.endpoint.regionLock) {
                    unpin(pinned);
                }
            }
            x.sendCq.push(ctx, x, TYPE_OF_OP[op], RdmaStatus.FLUSHED, 0, false, false, 0);
        }
        x.readsOutstanding = 0;
        RecvQueue r = x.rq;
        for (;;) {
            Object ctx;
            synchronized (x) {
                if (r.head == r.tail) {
                    break;
                }
                int s = r.slot(r.head);
                ctx = r.context[s];
                r.clear(s);
                r.head++;
            }
            x.recvCq.push(ctx, x, OperationType.RECEIVE, RdmaStatus.FLUSHED, 0, false, false, 0);
        }
    }

    // ================================================================ events

    private static void established(SimEndpoint e) {
        ConnectionListener l = e.listener;
        Scheduler.beforeConsumerCall();
        try {
            l.onEstablished(e);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onEstablished", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }

    private static void disconnected(SimEndpoint e) {
        Scheduler.beforeConsumerCall();
        try {
            e.listener.onDisconnected(e);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onDisconnected", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }

    private static void error(SimEndpoint e, RdmaStatus status, String reason) {
        Scheduler.beforeConsumerCall();
        try {
            e.listener.onError(e, status, reason);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onError", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }

    @Override
    public String toString() {
        return "SimConnection#" + ordinal + "[" + active + " -> " + target + "]";
    }
}
