package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;

/**
 * The delivery of sends (and send-and-invalidates) into the peer's receive queue, with faithful RC
 * semantics: a send fills the peer's oldest posted receive or, with none posted, is answered
 * receiver-not-ready until the sender's RNR retries run out (then RECEIVER_NOT_READY); a longer
 * message fails LOCAL_LENGTH_ERROR at the receiver and REMOTE_INVALID_REQUEST at the sender. Runs on
 * the connection's actor, the one consumer of the peer's receive ring, which reads and frees a posted
 * receive without the peer endpoint's lock ({@link RecvQueue}).
 */
final class SendDelivery {
    private final FirstFailure failure;
    private final ByteBudget bytes;
    /** The connection's capture, or {@code null}. */
    private final CaptureSet capture;

    SendDelivery(FirstFailure failure, ByteBudget bytes, CaptureSet capture) {
        this.failure = failure;
        this.bytes = bytes;
        this.capture = capture;
    }

    /**
     * Starts a send at the peer. Returns {@code false} only when the peer had no receive posted and
     * the sender's RNR retry count allows another try (7: always), without any effect yet.
     */
    boolean startSend(SimEndpoint x, SimEndpoint y, SendQueue q, int s, boolean forcedRnr) {
        int len = q.length[s];
        if (!q.regionsValid(s)) {
            failure.failAt(x, q, RdmaStatus.LOCAL_PROTECTION_ERROR, RdmaStatus.CONNECTION_RESET,
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
            failure.failAt(x, q, RdmaStatus.RECEIVER_NOT_READY, RdmaStatus.CONNECTION_RESET,
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
            failure.failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.LOCAL_LENGTH_ERROR, "a message of " + len
                    + " bytes arrived for a receive of " + r.capacity[rs] + " bytes");
            return true;
        }
        if (!r.regionsValid(rs)) {
            if (capture != null) {
                capture.send(x, y, q, s, solicited, inv);
                capture.nak(y, x, CaptureSet.SYNDROME_REMOTE_OPERATION);
            }
            completeReceive(y, rs, RdmaStatus.LOCAL_PROTECTION_ERROR, 0, false, false, 0);
            failure.failAt(x, q, RdmaStatus.REMOTE_OPERATION_ERROR, RdmaStatus.LOCAL_PROTECTION_ERROR,
                    "the peer's receive names a region that was deregistered or invalidated after posting");
            return true;
        }
        int base = s * q.maxSge;
        Copy.scatter(q.sgeRegion, q.sgeOffset, q.sgeLength, base, q.sgeCount[s],
                (q.flags[s] & RequestFlags.INLINE) != 0 ? q.inline[s] : null, len,
                r.sgeRegion, r.sgeOffset, r.sgeLength, rs * r.maxSge, r.sgeCount[rs]);
        bytes.spend(len);
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
                failure.failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.INVALID_TOKEN,
                        "send-and-invalidate named token 0x" + Integer.toHexString(token)
                                + ", which is not a valid remote token of the peer's endpoint");
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

    private static void completeReceive(SimEndpoint y, int rs, RdmaStatus status, int len, boolean solicited,
            boolean invalidated, int token) {
        RecvQueue r = y.rq;
        Object ctx = r.context[rs];
        r.clear(rs);
        r.head++; // this actor is the only one that moves head (RecvQueue)
        y.recvCq.push(ctx, y, OperationType.RECEIVE, status, status == RdmaStatus.SUCCESS ? len : 0, solicited,
                invalidated, token);
    }
}
