package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.RequestFlags;

/**
 * The data path of an established connection, one step at a time on its actor: it moves both
 * endpoints' send queues along in posted order, hands each request that arrives to what executes it
 * ({@link SendDelivery}, {@link RegionAccess}) and has {@link InOrderCompletion} complete what is
 * due. RDMA Reads outstanding are limited by ORD (and the peer's IRD); READ_FENCE holds a request
 * until earlier reads completed; with the latency model each request gets its arrival time
 * ({@link LatencyModel}); the connection's fault stream decides on every request started. A step
 * is bounded in requests and in bytes ({@link ByteBudget}), then yields; the first failure
 * ({@link FirstFailure}) stops it.
 */
final class DataPath {
    /** The receiver-not-ready timer: rdma_cm's default min_rnr_timer (code 12, 0.64 ms). */
    static final long RNR_TIMER_NANOS = 640_000;
    private static final int BATCH = 128;

    /** The connection, kicked to run another step. */
    private final Actor actor;
    private final SimProvider host;
    /** The connection's wake-up, scheduled for an arrival or a receiver-not-ready retry. */
    private final Timer.Task wake;
    private final int ordinal;
    private final SimEndpoint active;
    private final SimEndpoint passive;
    private final FaultInjector.Stream faults;
    private final FirstFailure failure;
    private final ByteBudget bytes = new ByteBudget();
    private final SendDelivery delivery;
    private final RegionAccess access;
    private final InOrderCompletion completion;

    /**
     * @param actor the connection, kicked when a step yields with work left
     * @param ordinal the connection's per-provider ordinal, its identity for fault injection
     * @param capture the connection's capture, or {@code null}
     */
    DataPath(Actor actor, SimProvider host, Timer.Task wake, int ordinal, SimEndpoint active, SimEndpoint passive,
            CaptureSet capture, FirstFailure failure) {
        this.actor = actor;
        this.host = host;
        this.wake = wake;
        this.ordinal = ordinal;
        this.active = active;
        this.passive = passive;
        this.faults = host.faults.stream(ordinal);
        this.failure = failure;
        this.delivery = new SendDelivery(failure, bytes, capture);
        this.access = new RegionAccess(failure, bytes, capture);
        this.completion = new InOrderCompletion(failure, bytes, access, host.timer, wake);
    }

    void pump() {
        SimEndpoint a = active;
        SimEndpoint b = passive;
        // The clock is read only where the latency model or a timer needs it (0: not read).
        long now = host.live().latencyEnabled ? System.nanoTime() : 0;
        int budget = BATCH;
        bytes.begin();
        boolean progress = true;
        while (progress && budget > 0 && !bytes.spent()) {
            int n = start(a, b, now, budget);
            budget -= n;
            if (failure.latched()) {
                return;
            }
            int m = start(b, a, now, budget);
            budget -= m;
            if (failure.latched()) {
                return;
            }
            boolean f1 = completion.finish(a, b, now, false);
            if (failure.side != null) {
                return;
            }
            boolean f2 = completion.finish(b, a, now, false);
            if (failure.side != null) {
                return;
            }
            progress = n > 0 || m > 0 || f1 || f2;
        }
        if (budget <= 0 || bytes.spent()) {
            actor.kick(); // yield the thread; more work may be waiting
        }
    }

    /**
     * After a request failed: its endpoint's requests complete up to the failed one, that one
     * included, and the other endpoint's as far as they are due.
     */
    void finishFailed() {
        SimEndpoint errSide = failure.side;
        if (errSide != null) {
            SimEndpoint other = errSide == active ? passive : active;
            completion.finish(errSide, other, 0, true);
            // what the other side already had acknowledged completes normally; the rest flushes
            completion.finish(other, errSide, System.nanoTime(), false);
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
                    ? LatencyModel.arrival(x, op == SendQueue.OP_READ ? 0 : q.length[s], now, live) : 0;
            q.sent++;
        }
        int n = 0;
        while (q.next < q.sent && n < budget && !bytes.spent()) {
            int s = q.slot(q.next);
            byte op = q.op[s];
            long arrival = q.due[s];
            if (arrival != 0 && arrival - now > 0) {
                host.timer.schedule(wake, arrival);
                break;
            }
            int fault = faults.decide(op, live);
            if ((fault & FaultInjector.DISCONNECT) != 0) {
                failure.reset("injected fault: connection " + ordinal + " reset at operation " + faults.operations());
                return n;
            }
            switch (op) {
                case SendQueue.OP_SEND:
                case SendQueue.OP_SEND_INVALIDATE:
                    if (!delivery.startSend(x, y, q, s, (fault & FaultInjector.RECEIVER_NOT_READY) != 0)) {
                        // RNR NAK with retries left: the request stays first in line and is
                        // transmitted again when the receiver-not-ready timer expires.
                        host.timer.schedule(wake, LatencyModel.clock(now) + RNR_TIMER_NANOS);
                        return n;
                    }
                    break;
                case SendQueue.OP_WRITE:
                    access.startWrite(x, y, q, s);
                    break;
                case SendQueue.OP_READ:
                    access.startRead(x, y, q, s);
                    break;
                default:
                    access.startInvalidate(x, q, s);
                    break;
            }
            if (q.state[s] == SendQueue.STARTED) {
                long due = 0;
                if (live.latencyEnabled && op != SendQueue.OP_INVALIDATE) {
                    long oneWay = live.latencyMicros * 1000L;
                    if (op == SendQueue.OP_READ) {
                        long begin = y.linkFreeAt - now > 0 ? y.linkFreeAt : now;
                        y.linkFreeAt = begin + LatencyModel.serialization(q.length[s], live);
                        due = y.linkFreeAt + oneWay;
                    } else {
                        due = arrival + oneWay;
                    }
                }
                if ((fault & FaultInjector.DELAY) != 0) {
                    due = (due == 0 ? LatencyModel.clock(now) : due) + live.delayMillis * 1_000_000L;
                }
                q.due[s] = due;
            }
            q.next++;
            n++;
            if (failure.side != null) {
                break;
            }
        }
        return n;
    }

    /**
     * RDMA Reads towards the peer that may be outstanding: this side's ORD, and the peer's IRD
     * (a peer with IRD 0 refuses reads when they arrive).
     */
    private static int readLimit(SimEndpoint x, SimEndpoint y) {
        return y.ird == 0 ? x.ord : Math.min(x.ord, y.ird);
    }
}
