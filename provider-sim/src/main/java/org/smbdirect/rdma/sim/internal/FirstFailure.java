package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.RdmaStatus;

/**
 * The first failure of a connection, latched: a request that failed (its endpoint, its status, the
 * status its peer is told, why, and where it stands in its send queue), or a reset by an injected
 * fault. The connection ends after it and its tear-down reports it to both endpoints. Owned by the
 * connection's actor: plain fields, read and written on its fabric thread only.
 */
final class FirstFailure {
    /** The endpoint whose request failed, {@code null} while none has. */
    SimEndpoint side;
    RdmaStatus status;
    /** What the other endpoint is told. */
    RdmaStatus peerStatus;
    String reason;
    /** The failed request's send-queue counter: requests up to it complete, later ones flush. */
    long counter;
    boolean resetByFault;
    String resetReason;

    /** Whether the connection is to end: a request failed or a fault reset it. */
    boolean latched() {
        return side != null || resetByFault;
    }

    /** The request at {@code x}'s {@code next} failed when starting; the connection ends after it completes. */
    void failAt(SimEndpoint x, SendQueue q, RdmaStatus status, RdmaStatus peerStatus, String reason) {
        int s = q.slot(q.next);
        q.state[s] = SendQueue.FAILED;
        q.status[s] = (byte) status.ordinal();
        latch(x, status, peerStatus, reason, q.next);
    }

    /**
     * Records the failure of {@code x}'s request at send-queue {@code counter}. The data path stops at
     * the first failure, so only the completions that still follow it check for one first.
     */
    void latch(SimEndpoint x, RdmaStatus status, RdmaStatus peerStatus, String reason, long counter) {
        side = x;
        this.status = status;
        this.peerStatus = peerStatus;
        this.reason = reason;
        this.counter = counter;
    }

    /** An injected fault resets the connection. */
    void reset(String reason) {
        resetByFault = true;
        resetReason = reason;
    }
}
