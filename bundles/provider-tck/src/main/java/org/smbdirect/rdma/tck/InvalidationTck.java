package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * Invalidation: send-and-invalidate (NdkSendAndInvalidate) and local invalidate (NdkInvalidate).
 * A token invalidated by the peer is unusable at once, reported by {@code getResultsEx} and not by
 * {@code getResults}, and a later local invalidate of it fails; an invalid token named by the peer
 * aborts the receiver's connection.
 */
public abstract class InvalidationTck extends ProviderTck {

    /** For subclasses. */
    protected InvalidationTck() {
    }

    /** Skips the area on providers that cannot invalidate (CapabilityTck checks they say so). */
    @BeforeEach
    protected final void requireInvalidation() {
        Assumptions.assumeTrue(caps().remoteInvalidate() && server().capabilities().remoteInvalidate(),
                "the provider cannot invalidate; CapabilityTck checks that it says so and refuses");
    }

    private static void write(Link l, MemoryRegion target, Object ctx) throws Exception {
        MemoryRegion src = l.client().register(16, 0);
        l.client().endpoint().postWrite(ctx, new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(), 0);
    }

    /**
     * Send-and-invalidate invalidates the peer's token when the receive completes; getResultsEx
     * reports the token; the token is unusable afterwards.
     *
     * @throws Exception on failure
     */
    @Test
    public void sendAndInvalidate_invalidatesPeerToken_reportedByGetResultsEx() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        write(l, target, "before");
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status(), "the token works before");
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion out = l.client().register(64, 0);
        l.client().endpoint().postSendAndInvalidate("si", new Sge[] {Sge.of(out, 0, 12)}, 1, 0, target.token());
        Completion s = l.client().sendCq().next();
        assertEquals(OperationType.SEND, s.type());
        assertEquals(RdmaStatus.SUCCESS, s.status());
        Completion r = l.server().recvCq().pollEx(1).get(0);
        assertEquals(OperationType.RECEIVE, r.type());
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertEquals(12, r.bytes());
        assertTrue(r.tokenInvalidated(), "getResultsEx reports the invalidation");
        assertEquals(target.token(), r.invalidatedToken());
        assertFalse(target.isValid());
        write(l, target, "after");
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, l.client().sendCq().next().status(), "the token is unusable afterwards");
    }

    /**
     * The plain getResults reports the receive but not the invalidation; the token is invalid all
     * the same, and a later local invalidate of it fails INVALID_TOKEN (ending the connection).
     *
     * @throws Exception on failure
     */
    @Test
    public void sendAndInvalidate_plainGetResultsOmitsToken_laterLocalInvalidateFails() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion out = l.client().register(64, 0);
        l.client().endpoint().postSendAndInvalidate("si", new Sge[] {Sge.of(out, 0, 8)}, 1, 0, target.token());
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertFalse(r.tokenInvalidated(), "getResults does not report the invalidation");
        assertEquals(0, r.invalidatedToken());
        assertFalse(target.isValid(), "the token is invalidated all the same");
        l.server().endpoint().postInvalidate("inv", target, 0);
        Completion inv = l.server().sendCq().next();
        assertEquals(OperationType.INVALIDATE, inv.type());
        assertEquals(RdmaStatus.INVALID_TOKEN, inv.status());
        assertEquals(EventRecorder.Kind.ERROR, l.server().events().awaitTerminal().kind());
        l.client().events().awaitTerminal();
    }

    /** Why a token named by send-and-invalidate is not valid at the receiver. */
    private enum BadToken { UNKNOWN, NO_REMOTE_ACCESS, OTHER_CONNECTION }

    private void badToken(BadToken kind) throws Exception {
        Link l = link();
        int token;
        if (kind == BadToken.UNKNOWN) {
            MemoryRegion real = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            token = real.token() ^ 0x3C3C3C3C;
        } else if (kind == BadToken.NO_REMOTE_ACCESS) {
            token = l.server().register(64, Access.LOCAL_WRITE).token();
        } else {
            Link other = link();
            token = other.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE).token();
        }
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r1", in);
        l.server().postReceive("r2", in);
        MemoryRegion out = l.client().register(64, 0);
        l.client().endpoint().postSendAndInvalidate("si", new Sge[] {Sge.of(out, 0, 8)}, 1, 0, token);
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, l.client().sendCq().next().status());
        List<Completion> r = l.server().recvCq().poll(2);
        assertEquals(RdmaStatus.INVALID_TOKEN, r.get(0).status(), "the receiver's provider aborts the connection");
        assertEquals(RdmaStatus.FLUSHED, r.get(1).status());
        assertEquals(EventRecorder.Kind.ERROR, l.server().events().awaitTerminal().kind());
        assertEquals(EventRecorder.Kind.ERROR, l.client().events().awaitTerminal().kind());
    }

    /**
     * Send-and-invalidate naming an unknown token aborts the receiver's connection.
     *
     * @throws Exception on failure
     */
    @Test
    public void sendAndInvalidate_unknownToken_abortsReceiverConnection() throws Exception {
        badToken(BadToken.UNKNOWN);
    }

    /**
     * Send-and-invalidate naming a token without remote access aborts the receiver's connection.
     *
     * @throws Exception on failure
     */
    @Test
    public void sendAndInvalidate_tokenWithoutRemoteAccess_abortsReceiverConnection() throws Exception {
        badToken(BadToken.NO_REMOTE_ACCESS);
    }

    /**
     * Send-and-invalidate naming a token of another connection aborts the receiver's connection.
     *
     * @throws Exception on failure
     */
    @Test
    public void sendAndInvalidate_tokenOfAnotherConnection_abortsReceiverConnection() throws Exception {
        badToken(BadToken.OTHER_CONNECTION);
    }

    /**
     * A local invalidate completes INVALIDATE and revokes remote access; the region stays
     * registered until deregistered.
     *
     * @throws Exception on failure
     */
    @Test
    public void localInvalidate_revokesRemoteAccess_regionStaysRegistered() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.server().endpoint().postInvalidate("inv", target, 0);
        Completion c = l.server().sendCq().next();
        assertEquals(OperationType.INVALIDATE, c.type());
        assertEquals(RdmaStatus.SUCCESS, c.status());
        assertEquals("inv", c.context());
        assertFalse(target.isValid());
        write(l, target, "w");
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, l.client().sendCq().next().status());
        l.server().endpoint().deregister(target); // still registered: deregistering works
    }

    /**
     * Invalidating an already invalid token (twice, or after deregistration) completes INVALID_TOKEN.
     *
     * @throws Exception on failure
     */
    @Test
    public void localInvalidate_ofInvalidToken_completesInvalidToken() throws Exception {
        Link l = link();
        MemoryRegion a = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.server().endpoint().postInvalidate("first", a, 0);
        l.server().endpoint().postInvalidate("second", a, 0);
        List<Completion> c = l.server().sendCq().poll(2);
        assertEquals(RdmaStatus.SUCCESS, c.get(0).status());
        assertEquals(RdmaStatus.INVALID_TOKEN, c.get(1).status());
        l.server().events().awaitTerminal();

        Link m = link();
        MemoryRegion b = m.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        m.server().endpoint().deregister(b);
        m.server().endpoint().postInvalidate("deregistered", b, 0);
        assertEquals(RdmaStatus.INVALID_TOKEN, m.server().sendCq().next().status());
    }

    /**
     * A local invalidate with SILENT_SUCCESS queues no completion.
     *
     * @throws Exception on failure
     */
    @Test
    public void localInvalidate_silentSuccess_noCompletion() throws Exception {
        Link l = link();
        MemoryRegion a = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion b = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.server().endpoint().postInvalidate("silent", a, RequestFlags.SILENT_SUCCESS);
        l.server().endpoint().postInvalidate("loud", b, 0);
        assertEquals("loud", l.server().sendCq().next().context());
        assertEquals(List.of(), l.server().sendCq().drain());
        assertFalse(a.isValid());
    }

    /**
     * Invalidating a region without remote access, or of another endpoint, is an invalid parameter.
     *
     * @throws Exception on failure
     */
    @Test
    public void localInvalidate_regionWithoutRemoteAccessOrForeign_invalidParameter() throws Exception {
        Link l = link();
        MemoryRegion local = l.server().register(64, Access.LOCAL_WRITE);
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> l.server().endpoint().postInvalidate("x", local, 0));
        MemoryRegion foreign = l.client().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> l.server().endpoint().postInvalidate("x", foreign, 0));
        assertRoundTrip(l);
    }

    /**
     * A local element naming an invalidated region is refused at post time with INVALID_TOKEN.
     *
     * @throws Exception on failure
     */
    @Test
    public void element_namingInvalidatedRegion_invalidToken() throws Exception {
        Link l = link();
        MemoryRegion a = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.server().endpoint().postInvalidate("inv", a, 0);
        assertEquals(RdmaStatus.SUCCESS, l.server().sendCq().next().status());
        assertFails(RdmaStatus.INVALID_TOKEN, () -> l.server().postReceive("r", a));
        assertRoundTrip(l);
    }
}
