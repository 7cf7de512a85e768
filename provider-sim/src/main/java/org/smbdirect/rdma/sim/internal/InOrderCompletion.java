package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;

/**
 * The completions of a connection's requests: those of a queue come in posted order, each when it
 * falls due (an RDMA Read's data is placed then, as its response arrives), and when the connection
 * ends everything still outstanding completes FLUSHED. Runs on the connection's actor.
 */
final class InOrderCompletion {
    private static final OperationType[] TYPE_OF_OP = {null, OperationType.SEND, OperationType.SEND,
        OperationType.WRITE, OperationType.READ, OperationType.INVALIDATE};
    private static final RdmaStatus[] STATUSES = RdmaStatus.values();

    private final FirstFailure failure;
    private final ByteBudget bytes;
    private final RegionAccess access;
    private final Timer timer;
    /** The connection's wake-up, scheduled when the head of a queue is not due yet. */
    private final Timer.Task wake;

    InOrderCompletion(FirstFailure failure, ByteBudget bytes, RegionAccess access, Timer timer, Timer.Task wake) {
        this.failure = failure;
        this.bytes = bytes;
        this.access = access;
        this.timer = timer;
        this.wake = wake;
    }

    /**
     * Completes started requests of {@code x} from the head, in order, when due. With {@code force}
     * (the connection is failing because of {@code x}) it completes those before the failed one and
     * the failed one itself, regardless of due times.
     */
    boolean finish(SimEndpoint x, SimEndpoint y, long now, boolean force) {
        SendQueue q = x.sq;
        boolean progress = false;
        while (q.head < q.next) {
            if (force && q.head > failure.counter) {
                break;
            }
            int s = q.slot(q.head);
            RdmaStatus st;
            if (q.state[s] == SendQueue.STARTED) {
                if (!force && q.op[s] == SendQueue.OP_READ && bytes.spent()) {
                    break; // the response's data moves in the next step
                }
                long due = q.due[s];
                if (!force && due != 0 && due - LatencyModel.clock(now) > 0) {
                    timer.schedule(wake, due);
                    break;
                }
                st = q.op[s] == SendQueue.OP_READ ? access.placeRead(x, y, q, s) : RdmaStatus.SUCCESS;
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
                if (failure.side == null) {
                    failure.latch(x, st, RdmaStatus.CONNECTION_RESET,
                            "RDMA Read response refused: the region was deregistered or invalidated meanwhile", counter);
                }
                break;
            }
        }
        return progress;
    }

    /** Completes everything outstanding on an endpoint with FLUSHED, in posted order. */
    static void flushAll(SimEndpoint x) {
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
                    pinned.unpin();
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
}
