package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.verbs.internal.CompletionQueueProbe;

/**
 * Tokens and their invalidation: send with invalidate (NdkSendAndInvalidate), local invalidate,
 * deregistration. Needs a device with type 2 memory windows (Soft-RoCE has them).
 */
class InvalidationDeviceTest {
    private Fixture f;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
        assumeTrue(f.provider.capabilities().remoteInvalidate(), f.provider.name() + " has no memory windows");
    }

    @AfterEach
    void close() {
        f.close();
    }

    private static CompletionResult read(Fixture.Pair p, MemoryRegion dst, MemoryRegion remote) throws Exception {
        p.client.postRead("read", new Sge[] {Sge.of(dst, 0, 8)}, 1, remote.remoteOffset(), remote.token(),
                RequestFlags.NONE);
        return p.clientCq.one(Fixture.TIMEOUT);
    }

    /** NDKPI: the receive is reported by both forms; only the extended form names the token. */
    @Test
    void sendAndInvalidate_peersTokenInvalidated_reportedByTheExtendedResultsOnly() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_READ);
        MemoryRegion rx = p.server.register(Fixture.direct(32), Access.LOCAL_WRITE);
        p.server.postReceive("plain", new Sge[] {Sge.of(rx, 0, 16)}, 1);
        p.server.postReceive("extended", new Sge[] {Sge.of(rx, 16, 16)}, 1);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, exposed).status(), "the token works before");

        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        p.client.postSendAndInvalidate("inv", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE, exposed.token());
        CompletionResult sent = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, sent.status());
        assertEquals(OperationType.SEND, sent.type());
        CompletionResult plain = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, plain.status());
        assertFalse(plain.tokenInvalidated(), "GetCqResults does not report the token");
        assertFalse(exposed.isValid(), "the token is invalidated all the same");

        MemoryRegion second = p.server.register(Fixture.direct(64), Access.REMOTE_READ);
        p.client.postSendAndInvalidate("inv2", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE, second.token());
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.one(Fixture.TIMEOUT).status());
        CompletionResult ex = p.serverCq.take(1, Fixture.TIMEOUT, true).get(0);
        assertTrue(ex.tokenInvalidated());
        assertEquals(second.token(), ex.invalidatedToken());

        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, read(p, dst, exposed).status(), "the peer can no longer read");
    }

    /**
     * Registrations in a burst, each deregistered at once, some while their window's bind is
     * still in flight: register() never waits (a full bind reserve is refused at once with
     * INSUFFICIENT_RESOURCES), deregister() never frees a window under its bind, and the
     * connection stays usable: every token that was handed out still reads until deregistered.
     */
    @Test
    void registerDeregisterBurst_noWaiting_noWindowFreedUnderItsBind_connectionUsable() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        int refused = 0;
        int done = 0;
        for (int i = 0; i < 2000; i++) {
            MemoryRegion r;
            try {
                r = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_READ);
            } catch (RdmaException e) {
                assertEquals(RdmaStatus.INSUFFICIENT_RESOURCES, e.status(), e.getMessage());
                refused++;
                continue;
            }
            if (i % 100 == 0) {
                assertEquals(RdmaStatus.SUCCESS, read(p, dst, r).status(), "a fresh token reads");
            }
            p.server.deregister(r);
            done++;
        }
        assertTrue(done > 0, "registered " + done + ", refused " + refused);
        MemoryRegion last = p.server.register(Fixture.direct(64), Access.REMOTE_READ);
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, last).status(), "the connection is still usable");
    }

    @Test
    void sendAndInvalidate_tokenThePeerDoesNotHave_receiverInvalidTokenSenderRemoteInvalidRequest() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        p.server.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        MemoryRegion exposed = p.server.register(Fixture.direct(8), Access.REMOTE_READ);
        int wrongKey = exposed.token() ^ 0x5a; // the window's index, another key: no token of the server's
        p.client.postSendAndInvalidate("bad", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE, wrongKey);
        assertEquals(RdmaStatus.INVALID_TOKEN, p.serverCq.one(Fixture.TIMEOUT).status());
        RecordingListener.Event s = p.serverEvents.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.INVALID_TOKEN, s.status);
        // The sender's status is the device's: a NAK gives REMOTE_INVALID_REQUEST; Soft-RoCE
        // acknowledges the send and only the receiver fails (then disconnects).
        CompletionResult send = p.clientCq.one(Fixture.TIMEOUT);
        assertTrue(send.status() == RdmaStatus.REMOTE_INVALID_REQUEST || send.status() == RdmaStatus.SUCCESS,
                send.toString());
        RecordingListener.Event c = p.clientEvents.next(Fixture.TIMEOUT);
        assertTrue(c.kind.equals("DISCONNECTED") || c.status == RdmaStatus.REMOTE_INVALID_REQUEST, c.toString());
        assertTrue(exposed.isValid(), "a wrong key invalidates nothing");
    }

    @Test
    void localInvalidate_tokenNoLongerUsableByThePeer_regionStaysRegistered() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        p.client.postWrite("w", new Sge[] {Sge.of(dst)}, 1, exposed.remoteOffset(), exposed.token(),
                RequestFlags.NONE);
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.one(Fixture.TIMEOUT).status());
        p.server.postInvalidate("inv", exposed, RequestFlags.NONE);
        CompletionResult inv = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, inv.status());
        assertEquals(OperationType.INVALIDATE, inv.type());
        assertEquals("inv", inv.requestContext());
        assertFalse(exposed.isValid());
        p.client.postWrite("w2", new Sge[] {Sge.of(dst)}, 1, exposed.remoteOffset(), exposed.token(),
                RequestFlags.NONE);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, p.clientCq.one(Fixture.TIMEOUT).status());
        p.server.deregister(exposed); // still registered until now
    }

    @Test
    void localInvalidate_ofAnInvalidToken_completesInvalidTokenAndEndsTheConnection() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.REMOTE_READ);
        p.server.postInvalidate("first", exposed, RequestFlags.SILENT_SUCCESS);
        p.server.postInvalidate("second", exposed, RequestFlags.NONE);
        CompletionResult second = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals("second", second.requestContext(), "the silent success is not reported");
        assertEquals(RdmaStatus.INVALID_TOKEN, second.status());
        RecordingListener.Event e = p.serverEvents.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.INVALID_TOKEN, e.status);
        p.clientEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
    }

    @Test
    void localInvalidate_afterThePeerInvalidated_invalidToken() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.REMOTE_READ);
        MemoryRegion rx = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        p.server.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        p.client.postSendAndInvalidate("inv", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE, exposed.token());
        assertEquals(RdmaStatus.SUCCESS, p.serverCq.one(Fixture.TIMEOUT).status());
        p.server.postInvalidate("again", exposed, RequestFlags.NONE);
        assertEquals(RdmaStatus.INVALID_TOKEN, p.serverCq.one(Fixture.TIMEOUT).status());
    }

    /**
     * A window's bind reports no work completion (on Soft-RoCE each costs the completion thread a
     * wake-up and two system calls): the send that hands the token over completes it, and the
     * token works, and ends with its deregistration, as before.
     */
    @Test
    void bind_reportsNoWorkCompletion_theSendAfterItCompletesIt_tokenWorksUntilDeregistered() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.client.register(Fixture.direct(16), Access.LOCAL_WRITE);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        MemoryRegion tx = p.server.register(Fixture.direct(8), 0);
        p.client.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        long before = CompletionQueueProbe.workCompletions(p.serverCq.queue);
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_READ);
        exposed.buffer().put(0, (byte) 9);
        p.server.postSend("token", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE);
        assertEquals(RdmaStatus.SUCCESS, p.serverCq.one(Fixture.TIMEOUT).status());
        assertEquals(1, CompletionQueueProbe.workCompletions(p.serverCq.queue) - before,
                "work completions of the bind and the send: the send's only");
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.one(Fixture.TIMEOUT).status(), "the send arrived");
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, exposed).status(), "the token reads");
        assertEquals(9, dst.buffer().get(0));
        p.server.deregister(exposed);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, read(p, dst, exposed).status(), "and is dead once deregistered");
    }

    /**
     * Registrations with no other request between them: more than the binds' reserve of the send
     * queue, none refused, because one bind in {@code SendQueueLedger.SIGNALED_BIND_EVERY} reports its completion
     * and with it those before it. The first and the last token both read.
     */
    @Test
    void manyRegistrationsWithNothingPostedBetween_noneRefused_firstAndLastTokenRead() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        MemoryRegion[] regions = new MemoryRegion[200];
        for (int i = 0; i < regions.length; i++) {
            regions[i] = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_READ);
            regions[i].buffer().put(0, (byte) (i + 1));
        }
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, regions[0]).status(), "the first token");
        assertEquals(1, dst.buffer().get(0));
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, regions[199]).status(), "the last token");
        assertEquals((byte) 200, dst.buffer().get(0));
    }

    /**
     * An endpoint closed right after a registration whose bind reported nothing is released at
     * once: it does not wait for a completion that will never be reported (here the forced
     * release would come after 60 s).
     */
    @Test
    void close_afterABindThatReportsNothing_endpointReleasedAtOnce() throws Exception {
        try (Fixture patient = new Fixture(java.util.Map.of("closeTimeoutMillis", 60_000))) {
            Fixture.Pair p = patient.connect();
            p.server.register(Fixture.direct(64), Access.LOCAL_WRITE | Access.REMOTE_READ);
            assertEquals(1, CompletionQueueProbe.endpoints(p.serverCq.queue));
            p.server.close();
            Fixture.awaitReleased(p.serverCq);
        }
    }

    @Test
    void deregister_revokesRemoteAccessAtOnce_andTwiceIsInvalidToken() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion exposed = p.server.register(Fixture.direct(64), Access.REMOTE_READ);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        p.server.deregister(exposed);
        assertFalse(exposed.isValid());
        RdmaException twice = assertThrows(RdmaException.class, () -> p.server.deregister(exposed));
        assertEquals(RdmaStatus.INVALID_TOKEN, twice.status());
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, read(p, dst, exposed).status());
    }

    /**
     * The registration cache: a window the peer invalidated is bound again for the next
     * registration, under another key (the same window index in the token's upper 24 bits), on
     * the region kept from the first registration of the same bytes. The old token stays dead,
     * the new one reaches the bytes.
     */
    @Test
    void registerAgain_afterThePeerInvalidated_sameWindowNewKey_oldTokenDead() throws Exception {
        Fixture.Pair p = f.connect();
        java.nio.ByteBuffer memory = Fixture.direct(64);
        MemoryRegion rx = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        MemoryRegion first = p.server.register(memory, Access.LOCAL_WRITE | Access.REMOTE_READ);
        p.server.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        p.client.postSendAndInvalidate("inv", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE, first.token());
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.one(Fixture.TIMEOUT).status());
        assertEquals(RdmaStatus.SUCCESS, p.serverCq.one(Fixture.TIMEOUT).status());
        p.server.deregister(first);

        memory.put(0, (byte) 42);
        MemoryRegion second = p.server.register(memory, Access.LOCAL_WRITE | Access.REMOTE_READ);
        assertEquals(first.token() >>> 8, second.token() >>> 8, "the freed window serves again");
        assertTrue(first.token() != second.token(), "under another key");
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, second).status(), "the new token reads");
        assertEquals(42, dst.buffer().get(0));
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, read(p, dst, first).status(), "the old token stays dead");
    }

    /**
     * A deregistration that no invalidation preceded revokes the token at once, although the
     * region behind the window is kept for the next registration of the same bytes, which works.
     */
    @Test
    void deregister_ofARegionKeptForLater_revokesAtOnce_nextRegistrationOfTheBytesWorks() throws Exception {
        Fixture.Pair p = f.connect();
        java.nio.ByteBuffer memory = Fixture.direct(64);
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        MemoryRegion exposed = null;
        for (int round = 1; round <= 3; round++) {
            memory.put(0, (byte) round);
            exposed = p.server.register(memory, Access.LOCAL_WRITE | Access.REMOTE_READ);
            assertEquals(RdmaStatus.SUCCESS, read(p, dst, exposed).status(), "round " + round);
            assertEquals(round, dst.buffer().get(0));
            p.server.deregister(exposed);
        }
        // a failed RDMA Read ends the connection: one check, of the last token
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, read(p, dst, exposed).status());
    }

    @Test
    void regionsRegisteredBeforeConnecting_areUsableOnceConnected() throws Exception {
        MemoryRegion[] early = new MemoryRegion[1];
        Fixture.Pair p = f.connect(b -> b, b -> b, new Fixture.Setup() {
            @Override
            public void client(Fixture.Pair pair) {
            }

            @Override
            public void server(Fixture.Pair pair) throws Exception {
                early[0] = pair.server.register(Fixture.direct(32), Access.REMOTE_READ);
                early[0].buffer().put(0, (byte) 77);
            }
        });
        MemoryRegion dst = p.client.register(Fixture.direct(8), Access.LOCAL_WRITE);
        assertEquals(RdmaStatus.SUCCESS, read(p, dst, early[0]).status());
        assertEquals(77, dst.buffer().get(0));
    }

    @Test
    void tokens_ofRegionsRegisteredAtOnce_areDistinct() throws Exception {
        Fixture.Pair p = f.connect();
        Set<Integer> tokens = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            MemoryRegion r = p.server.register(Fixture.direct(16), Access.REMOTE_READ);
            assertTrue(tokens.add(r.token()), "token reused: 0x" + Integer.toHexString(r.token()));
        }
    }

    @Test
    void invalidate_regionWithoutRemoteAccessOrOfAnotherEndpoint_invalidParameter() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion local = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        MemoryRegion others = p.client.register(Fixture.direct(16), Access.REMOTE_READ);
        assertEquals(RdmaStatus.INVALID_PARAMETER, assertThrows(RdmaException.class,
                () -> p.server.postInvalidate(null, local, 0)).status());
        assertEquals(RdmaStatus.INVALID_PARAMETER, assertThrows(RdmaException.class,
                () -> p.server.postInvalidate(null, others, 0)).status());
        p.serverCq.expectEmpty(50);
    }
}
