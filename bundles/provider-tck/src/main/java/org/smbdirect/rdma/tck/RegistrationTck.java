package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * The registration service: what a region covers, tokens, rights, deregistration, and the
 * post-time checks of scatter/gather elements.
 */
public abstract class RegistrationTck extends ProviderTck {

    /** For subclasses. */
    protected RegistrationTck() {
    }

    private Side idle() throws Exception {
        return side("idle", client(), new LinkSpec(), b -> b, null);
    }

    /**
     * A region covers the buffer's bytes from position to limit, shares them, and leaves the
     * buffer's position and limit alone.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_coversPositionToLimit_sharesMemory_leavesBufferUnchanged() throws Exception {
        Side s = idle();
        ByteBuffer b = ByteBuffer.allocateDirect(100);
        b.position(10).limit(60);
        MemoryRegion r = s.endpoint().register(b, Access.LOCAL_WRITE);
        assertEquals(10, b.position());
        assertEquals(60, b.limit());
        assertEquals(50, r.length());
        assertEquals(Access.LOCAL_WRITE, r.access());
        assertSame(s.endpoint(), r.endpoint());
        assertTrue(r.isValid());
        ByteBuffer view = r.buffer();
        assertEquals(0, view.position());
        assertEquals(50, view.limit());
        assertEquals(50, view.capacity());
        view.put(0, (byte) 42);
        assertEquals(42, b.get(10), "the view shares the registered memory");
        assertNotSame(view, r.buffer());
    }

    private static void assertNotSame(Object a, Object b) {
        org.junit.jupiter.api.Assertions.assertNotSame(a, b, "each call returns a new view");
    }

    /**
     * Tokens of live regions are distinct.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_tokensOfLiveRegionsAreDistinct() throws Exception {
        Side s = idle();
        Set<Integer> tokens = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            MemoryRegion r = s.endpoint().register(ByteBuffer.allocateDirect(8), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            assertTrue(tokens.add(r.token()), "token 0x" + Integer.toHexString(r.token()) + " handed out twice");
        }
    }

    /**
     * Bad registrations fail with INVALID_PARAMETER: heap buffer, no bytes, unknown access bits,
     * remote write without local write, write access to a read-only buffer, a flag other than
     * DEFER.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_badArguments_invalidParameter() throws Exception {
        Endpoint e = idle().endpoint();
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocate(64), Access.LOCAL_WRITE));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocateDirect(0), Access.LOCAL_WRITE));
        ByteBuffer empty = ByteBuffer.allocateDirect(16).position(16);
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(empty, Access.LOCAL_WRITE));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocateDirect(16), 0x40));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocateDirect(16), Access.REMOTE_WRITE));
        ByteBuffer ro = ByteBuffer.allocateDirect(16).asReadOnlyBuffer();
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ro, Access.LOCAL_WRITE));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ro, Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocateDirect(16), Access.LOCAL_WRITE,
                RequestFlags.SILENT_SUCCESS));
        MemoryRegion readable = e.register(ro, caps().rdmaRead() ? Access.REMOTE_READ : 0);
        assertTrue(readable.isValid(), "a read-only buffer can be registered for reading");
        assertEquals(EndpointState.IDLE, e.state());
    }

    /**
     * A region larger than maxRegionSize is refused.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_largerThanMaxRegionSize_invalidParameter() throws Exception {
        long max = caps().maxRegionSize();
        Assumptions.assumeTrue(max < 64L << 20, "maxRegionSize " + max + " is too large to allocate a buffer beyond it in a test");
        Endpoint e = idle().endpoint();
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.register(ByteBuffer.allocateDirect((int) max + 1), Access.LOCAL_WRITE));
        assertTrue(e.register(ByteBuffer.allocateDirect((int) max), Access.LOCAL_WRITE).isValid());
    }

    /**
     * Deregistering twice fails INVALID_TOKEN; a region of another endpoint is an invalid parameter.
     *
     * @throws Exception on failure
     */
    @Test
    public void deregister_twice_invalidToken_foreignRegion_invalidParameter() throws Exception {
        Side a = idle();
        Side b = side("other", client(), new LinkSpec(), x -> x, null);
        MemoryRegion r = a.register(64, Access.LOCAL_WRITE);
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> b.endpoint().deregister(r));
        assertTrue(r.isValid());
        a.endpoint().deregister(r);
        assertFalse(r.isValid());
        assertFails(RdmaStatus.INVALID_TOKEN, () -> a.endpoint().deregister(r));
    }

    /**
     * Deregistration revokes remote access at once.
     *
     * @throws Exception on failure
     */
    @Test
    public void deregister_revokesRemoteAccessAtOnce() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion src = l.client().register(64, 0);
        Sge[] sgl = {Sge.of(src)};
        l.client().endpoint().postWrite("ok", sgl, 1, target.remoteOffset(), target.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        l.server().endpoint().deregister(target);
        l.client().endpoint().postWrite("late", sgl, 1, target.remoteOffset(), target.token(), 0);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, l.client().sendCq().next().status());
    }

    /**
     * Regions can be registered while idle; not once disconnected or closed; closing deregisters all.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_idleAllowed_disconnectedOrClosedRefused_closeDeregistersAll() throws Exception {
        Link l = link();
        MemoryRegion kept = l.client().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.client().endpoint().disconnect();
        l.client().events().awaitTerminal();
        assertFails(RdmaStatus.INVALID_STATE, () -> l.client().register(64, Access.LOCAL_WRITE));
        l.client().endpoint().close();
        assertFalse(kept.isValid(), "close deregisters every region");
        assertFails(RdmaStatus.INVALID_STATE, () -> l.client().register(64, Access.LOCAL_WRITE));
    }

    /**
     * Post-time checks of elements: outside the region is LOCAL_PROTECTION_ERROR, a region of
     * another endpoint is LOCAL_PROTECTION_ERROR, a deregistered region is INVALID_TOKEN, a receive
     * into a region without LOCAL_WRITE is LOCAL_PROTECTION_ERROR; nothing is queued.
     *
     * @throws Exception on failure
     */
    @Test
    public void elements_postTimeChecks_nothingQueued() throws Exception {
        Link l = link();
        Endpoint c = l.client().endpoint();
        MemoryRegion r = l.client().register(64, Access.LOCAL_WRITE);
        MemoryRegion ro = l.client().register(64, 0);
        MemoryRegion foreign = l.server().register(64, Access.LOCAL_WRITE);
        MemoryRegion gone = l.client().register(64, Access.LOCAL_WRITE);
        c.deregister(gone);
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postSend("x", new Sge[] {Sge.of(r, 60, 8)}, 1, 0));
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postSend("x", new Sge[] {Sge.of(r, -1, 8)}, 1, 0));
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postSend("x", new Sge[] {Sge.of(r, 0, -1)}, 1, 0));
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postSend("x", new Sge[] {Sge.of(foreign)}, 1, 0));
        assertFails(RdmaStatus.INVALID_TOKEN, () -> c.postSend("x", new Sge[] {Sge.of(gone)}, 1, 0));
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postReceive("x", new Sge[] {Sge.of(ro)}, 1));
        assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> c.postReceive("x", new Sge[] {Sge.of(foreign)}, 1));
        assertFails(RdmaStatus.INVALID_TOKEN, () -> c.postReceive("x", new Sge[] {Sge.of(gone)}, 1));
        assertEquals(java.util.List.of(), l.client().sendCq().drain());
        assertEquals(EndpointState.CONNECTED, c.state());
        assertRoundTrip(l);
    }

    /**
     * Deregistering a region an outstanding receive names makes that receive fail
     * LOCAL_PROTECTION_ERROR when a message arrives, which ends the connection.
     *
     * @throws Exception on failure
     */
    @Test
    public void deregister_regionOfOutstandingReceive_receiveFailsLocalProtectionError() throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        l.server().endpoint().deregister(in);
        MemoryRegion out = l.client().register(64, 0);
        l.client().send("s", out, 0, 8, 0);
        Completion r = l.server().recvCq().next();
        assertEquals(RdmaStatus.LOCAL_PROTECTION_ERROR, r.status());
        assertNotEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        assertEquals(EventRecorder.Kind.ERROR, l.server().events().awaitTerminal().kind());
        l.client().events().awaitTerminal();
    }
}
