package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;

/**
 * The requests that act on registered regions: RDMA Writes and Reads against the peer endpoint's
 * regions, and local invalidates. Remote access is checked against the peer's regions (token,
 * rights, bounds) under the peer's region lock. RDMA Reads are pipelined: the responder grants a
 * read when its request arrives (the region stays pinned), and the data lands when the response is
 * processed, after requests posted later may already have been transmitted. Runs on the
 * connection's actor.
 */
final class RegionAccess {
    private final FirstFailure failure;
    private final ByteBudget bytes;
    /** The connection's capture, or {@code null}. */
    private final CaptureSet capture;

    RegionAccess(FirstFailure failure, ByteBudget bytes, CaptureSet capture) {
        this.failure = failure;
        this.bytes = bytes;
        this.capture = capture;
    }

    void startWrite(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        if (!q.regionsValid(s)) {
            failure.failAt(x, q, RdmaStatus.LOCAL_PROTECTION_ERROR, RdmaStatus.CONNECTION_RESET,
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
                bytes.spend(len);
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
            failure.failAt(x, q, RdmaStatus.REMOTE_ACCESS_ERROR, RdmaStatus.CONNECTION_RESET, "RDMA Write of " + len
                    + " bytes at 0x" + Long.toHexString(offset) + " with token 0x" + Integer.toHexString(token) + " refused: "
                    + refusal);
            return;
        }
        q.state[s] = SendQueue.STARTED;
    }

    void startRead(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        if (y.ird == 0) {
            if (capture != null) {
                capture.readRequest(x, y, q, s);
                capture.nak(y, x, CaptureSet.SYNDROME_INVALID_REQUEST);
            }
            failure.failAt(x, q, RdmaStatus.REMOTE_INVALID_REQUEST, RdmaStatus.CONNECTION_RESET,
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
            failure.failAt(x, q, RdmaStatus.REMOTE_ACCESS_ERROR, RdmaStatus.CONNECTION_RESET, "RDMA Read of " + len
                    + " bytes at 0x" + Long.toHexString(offset) + " with token 0x" + Integer.toHexString(token) + " refused: "
                    + refusal);
            return;
        }
        q.state[s] = SendQueue.STARTED;
    }

    void startInvalidate(SimEndpoint x, SendQueue q, int s) {
        SimRegion r = q.subject[s];
        if (!x.invalidate(r)) {
            failure.failAt(x, q, RdmaStatus.INVALID_TOKEN, RdmaStatus.CONNECTION_RESET, "local invalidate of token 0x"
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

    /**
     * Places an RDMA Read's data: the response arrives. The responder granted the read when the
     * request arrived; a later invalidation does not undo that, a deregistration since then (only
     * possible from a callback, which cannot wait) does.
     */
    RdmaStatus placeRead(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        x.readsOutstanding--;
        SimRegion t = q.subject[s];
        int len = q.length[s];
        int at = (int) (q.remoteOffset[s] - t.remoteOffset);
        boolean placed;
        synchronized (y.regionLock) {
            placed = t.state != SimRegion.DEREGISTERED && q.regionsValid(s);
            if (placed) {
                Copy.scatterFrom(t.mem, at, len, q.sgeRegion, q.sgeOffset, q.sgeLength, s * q.maxSge, q.sgeCount[s]);
                bytes.spend(len);
            }
            t.unpin();
        }
        if (!placed) {
            return t.state == SimRegion.DEREGISTERED ? RdmaStatus.REMOTE_ACCESS_ERROR : RdmaStatus.LOCAL_PROTECTION_ERROR;
        }
        if (capture != null) {
            capture.readResponse(y, x, t, at, len, q.psn[s]);
        }
        return RdmaStatus.SUCCESS;
    }
}
