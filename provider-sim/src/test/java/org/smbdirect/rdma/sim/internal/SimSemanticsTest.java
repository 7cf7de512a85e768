package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.Completion;
import org.smbdirect.rdma.tck.CqProbe;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;

/**
 * What the simulator does where the contract leaves room: the exact terminal events of failures,
 * DEFER, pipelined RDMA Reads, and the contract's literal IRD/ORD rule.
 */
class SimSemanticsTest extends ProviderTck {
    private final ProviderFixture fixture = new SimFixture(false);

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    private static EventRecorder.Event terminal(org.smbdirect.rdma.tck.Side s) {
        return s.events().awaitTerminal();
    }

    @Test
    void receiverNotReady_senderErrorRnr_peerConnectionReset() throws Exception {
        Link l = link();
        l.client().send("s", l.client().register(8, 0), 0, 8, 0);
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, l.client().sendCq().next().status());
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, terminal(l.client()).status());
        assertEquals(RdmaStatus.CONNECTION_RESET, terminal(l.server()).status());
    }

    @Test
    void lengthError_eachSideReportsItsOwnStatus() throws Exception {
        Link l = link();
        l.server().postReceive("r", l.server().register(4, Access.LOCAL_WRITE));
        l.client().send("s", l.client().register(8, 0), 0, 8, 0);
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, terminal(l.client()).status());
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR, terminal(l.server()).status());
    }

    @Test
    void remoteAccessError_initiatorRemoteAccessError_targetConnectionReset() throws Exception {
        Link l = link();
        MemoryRegion src = l.client().register(8, 0);
        l.client().endpoint().postWrite("w", new Sge[] {Sge.of(src)}, 1, 0, 42, 0);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, terminal(l.client()).status());
        assertEquals(RdmaStatus.CONNECTION_RESET, terminal(l.server()).status());
    }

    @Test
    void invalidTokenInSendAndInvalidate_receiverInvalidToken_senderRemoteInvalidRequest() throws Exception {
        Link l = link();
        l.server().postReceive("r", l.server().register(8, Access.LOCAL_WRITE));
        l.client().endpoint().postSendAndInvalidate("s", new Sge[0], 0, 0, 42);
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, terminal(l.client()).status());
        assertEquals(RdmaStatus.INVALID_TOKEN, terminal(l.server()).status());
    }

    /**
     * As a verbs device with the window's bind waiting for the next post: a token registered with
     * DEFER that reaches the peer before its endpoint posted anything (here: by hand) is refused;
     * once the endpoint posts a request, the same token works.
     */
    @Test
    void deferredRegistration_tokenUsedBeforeTheNextPost_remoteAccessError_afterItWorks() throws Exception {
        Link early = link();
        MemoryRegion target = early.server().endpoint().register(java.nio.ByteBuffer.allocateDirect(64),
                Access.LOCAL_WRITE | Access.REMOTE_WRITE, RequestFlags.DEFER);
        MemoryRegion src = early.client().register(8, 0);
        early.client().endpoint().postWrite("w", new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(), 0);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, terminal(early.client()).status());

        Link late = link();
        MemoryRegion bound = late.server().endpoint().register(java.nio.ByteBuffer.allocateDirect(64),
                Access.LOCAL_WRITE | Access.REMOTE_WRITE, RequestFlags.DEFER);
        late.client().postReceive("r", late.client().register(8, Access.LOCAL_WRITE));
        late.server().send("s", late.server().register(8, 0), 0, 8, 0);
        assertEquals(RdmaStatus.SUCCESS, late.server().sendCq().next().status());
        MemoryRegion data = late.client().register(8, 0);
        data.buffer().putLong(0, 0x1122334455667788L);
        late.client().endpoint().postWrite("w", new Sge[] {Sge.of(data)}, 1, bound.remoteOffset(), bound.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, late.client().sendCq().next().status());
        assertEquals(0x1122334455667788L, bound.buffer().getLong(0));
    }

    /** Deferred requests occupy their slots until handed over: a full send queue refuses more. */
    @Test
    void sendQueueFull_insufficientResources_untilCompletionsFreeSlots() throws Exception {
        Link l = link(new LinkSpec().clientOptions(b -> b.sendQueueDepth(2)));
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        for (int i = 0; i < 3; i++) {
            l.server().postReceive("r" + i, in);
        }
        // The receives kicked the connection: that run ends first, or it would take the deferred
        // requests along (a run for any reason moves whatever is queued).
        SimConnection connection = ((SimEndpoint) l.client().endpoint()).connection;
        assertTrue(connection.host.scheduler.awaitQuiet(TimeUnit.SECONDS.toNanos(10)), "the fabric went quiet");
        MemoryRegion out = l.client().register(16, 0);
        l.client().send("a", out, 0, 4, RequestFlags.DEFER);
        l.client().send("b", out, 0, 4, RequestFlags.DEFER);
        assertFails(RdmaStatus.INSUFFICIENT_RESOURCES, () -> l.client().send("c", out, 0, 4, 0));
        connection.kick(); // what a later post would do
        List<Completion> c = l.client().sendCq().poll(2);
        assertEquals("a", c.get(0).context());
        assertEquals("b", c.get(1).context());
        l.client().send("c", out, 0, 4, 0);
        assertEquals("c", l.client().sendCq().next().context());
    }

    /**
     * Queues whose depth is not a power of two (their rings are four slots long) hold exactly
     * three entries, in order, lap after lap: a fourth receive is refused, and a completion queue
     * of depth 3 overflows at its fourth completion.
     */
    @Test
    void queuesOfDepthThree_holdThree_inOrder_lapAfterLap() throws Exception {
        CqProbe recvCq = probe(server(), 3, "server.recvCq3");
        Link l = link(new LinkSpec().serverRecvCq(recvCq).serverOptions(b -> b.receiveQueueDepth(3))
                .clientOptions(b -> b.sendQueueDepth(3)));
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        MemoryRegion out = l.client().register(16, 0);
        for (int lap = 0; lap < 5; lap++) {
            for (int i = 0; i < 3; i++) {
                l.server().postReceive("r" + lap + i, in);
            }
            assertFails(RdmaStatus.INSUFFICIENT_RESOURCES, () -> l.server().postReceive("fourth", in));
            for (int i = 0; i < 3; i++) {
                l.client().send("s" + lap + i, out, 0, 4, 0);
            }
            List<Completion> sent = l.client().sendCq().poll(3);
            List<Completion> received = recvCq.poll(3);
            for (int i = 0; i < 3; i++) {
                assertEquals("s" + lap + i, sent.get(i).context());
                assertEquals("r" + lap + i, received.get(i).context());
            }
        }
        // three completions held, none taken: the fourth overflows the queue
        for (int i = 0; i < 3; i++) {
            l.server().postReceive("o" + i, in);
            l.client().send("t" + i, out, 0, 4, 0);
        }
        assertEquals(List.of("t0", "t1", "t2"), l.client().sendCq().poll(3).stream().map(Completion::context).toList());
        l.server().postReceive("o3", in);
        l.client().send("t3", out, 0, 4, 0);
        assertEquals(RdmaStatus.COMPLETION_QUEUE_OVERFLOW, terminal(l.server()).status());
        assertEquals(List.of("o0", "o1", "o2"), recvCq.poll(3).stream().map(Completion::context).toList());
    }

    /** DEFER: the sim hands a deferred request over only with the next request without DEFER. */
    @Test
    void deferredSend_heldUntilNextNonDeferredPost() throws Exception {
        Link l = link();
        Link other = link();
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        l.server().postReceive("r0", in);
        l.server().postReceive("r1", in);
        MemoryRegion out = l.client().register(16, 0);
        l.client().send("deferred", out, 0, 4, RequestFlags.DEFER);
        assertRoundTrip(other); // the fabric has done other work meanwhile
        assertEquals(List.of(), l.server().recvCq().drain(), "the deferred send is still held");
        l.client().send("now", out, 0, 4, 0);
        List<Completion> c = l.client().sendCq().poll(2);
        assertEquals("deferred", c.get(0).context());
        assertEquals("now", c.get(1).context());
        assertEquals(2, l.server().recvCq().poll(2).size());
    }

    /**
     * Bulk data is notified per step of the fabric, not per request: eight 1 MiB RDMA Writes handed
     * over at once (DEFER until the last) complete four to a step (a step moves up to 4 MiB, {@link
     * ByteBudget#PER_STEP}), so the first notification finds four completions or more, as a
     * NIC moderates its completion interrupts under a bulk load.
     */
    @Test
    void bulkRdmaWrites_firstNotificationFindsAStepOfCompletions() throws Exception {
        int mib = 1 << 20;
        int writes = 8;
        Link l = link();
        MemoryRegion target = l.server().register(mib, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion source = l.client().register(mib, 0);
        CqProbe cq = l.client().sendCq();
        cq.collectOnNotification();
        cq.arm(ArmType.ANY);
        for (int i = 0; i < writes; i++) {
            l.client().endpoint().postWrite("w" + i, new Sge[] {Sge.of(source)}, 1, target.remoteOffset(),
                    target.token(), i < writes - 1 ? RequestFlags.DEFER : 0);
        }
        cq.awaitNotifications(1);
        List<Completion> all = new ArrayList<>(cq.awaitCollected(1));
        int first = all.size();
        assertTrue(first >= 4, "the first notification found " + first + " completion(s), not a step's four");
        all.addAll(cq.poll(writes - first)); // the handler re-armed nothing: the rest is polled
        assertEquals(List.of("w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"),
                all.stream().map(Completion::context).toList());
    }

    /**
     * RDMA Reads are pipelined as on a real link: without READ_FENCE a send posted after a read is
     * transmitted before the read's response lands, so it carries the old bytes.
     */
    @Test
    void readWithoutFence_laterSendOvertakesTheResponse() throws Exception {
        Link l = link();
        MemoryRegion source = l.server().register(64, Access.REMOTE_READ);
        fill(source, 3);
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion staging = l.client().register(64, Access.LOCAL_WRITE);
        l.client().endpoint().postRead("rd", new Sge[] {Sge.of(staging)}, 1, source.remoteOffset(), source.token(),
                RequestFlags.DEFER);
        l.client().send("unfenced", staging, 0, 64, 0);
        l.client().sendCq().poll(2);
        l.server().recvCq().next();
        assertBytes(new byte[64], bytes(in, 0, 64), "the unfenced send left before the read data arrived");
        assertBytes(bytes(source, 0, 64), bytes(staging, 0, 64), "the read itself completed");
    }

    @Test
    void providerClose_queuedCompletionsStayRetrievable() throws Exception {
        Link l = link();
        l.server().postReceive("r", l.server().register(8, Access.LOCAL_WRITE));
        server().close();
        assertEquals(RdmaStatus.FLUSHED, l.server().recvCq().next().status());
        assertEquals(List.of(), l.server().recvCq().drain());
    }

    /**
     * A peer that serves no reads (accepted with IRD 0) leaves the active side with ORD 0, so its
     * reads are refused when posted rather than failing on the wire.
     */
    @Test
    void peerAcceptedWithIrdZero_readRefusedAtPost() throws Exception {
        Link l = link(new LinkSpec().acceptDepths(0, 2));
        MemoryRegion source = l.server().register(64, Access.REMOTE_READ);
        MemoryRegion dst = l.client().register(64, Access.LOCAL_WRITE);
        assertEquals(0, l.client().endpoint().ord());
        RdmaException e = assertThrows(RdmaException.class, () -> l.client().endpoint().postRead("r",
                new Sge[] {Sge.of(dst)}, 1, source.remoteOffset(), source.token(), 0));
        assertEquals(RdmaStatus.INVALID_STATE, e.status());
        assertEquals(EndpointState.CONNECTED, l.client().endpoint().state());
    }

    /** The active side mirrors the accepted depths, as RDMA connection management sets them. */
    @Test
    void activeSide_mirrorsAcceptedIrdAndOrd() throws Exception {
        Link l = link(new LinkSpec().connectDepths(8, 2).acceptDepths(3, 5));
        assertEquals(5, l.client().endpoint().ird(), "IRD = the accepted ORD");
        assertEquals(3, l.client().endpoint().ord(), "ORD = the accepted IRD");
    }
}
