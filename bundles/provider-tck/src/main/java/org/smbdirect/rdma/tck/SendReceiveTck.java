package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * Sends and receives: FIFO matching, message lengths, scatter/gather, inline data, silent success,
 * solicited receives, queue depths, and the failures that end a connection (receiver not ready,
 * message too long) or flush it (disconnect).
 *
 * <p>What "both sides" observe when a request fails: the failed request completes with its status
 * (the status the contract names); every other outstanding request of both endpoints completes
 * FLUSHED (or, where the contract names one, with the peer's own failure status); the endpoint whose
 * request failed gets exactly one terminal event and it is {@code onError}; its peer gets exactly one
 * terminal event ({@code onDisconnected} or {@code onError}); both end DISCONNECTED.
 */
public abstract class SendReceiveTck extends ProviderTck {

    /** For subclasses. */
    protected SendReceiveTck() {
    }

    /**
     * Sends fill the peer's posted receives in posted order; each receive reports the length of
     * the message it got; both queues complete in posted order.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_fillsPostedReceivesInFifoOrder() throws Exception {
        Link l = link();
        int n = 4;
        MemoryRegion[] in = new MemoryRegion[n];
        for (int i = 0; i < n; i++) {
            in[i] = l.server().register(64, Access.LOCAL_WRITE);
            l.server().postReceive("r" + i, in[i]);
        }
        MemoryRegion out = l.client().register(256, 0);
        fill(out, 3);
        for (int i = 0; i < n; i++) {
            l.client().send("s" + i, out, i * 64, 10 * (i + 1), 0);
        }
        List<Completion> sends = l.client().sendCq().poll(n);
        List<Completion> recvs = l.server().recvCq().poll(n);
        for (int i = 0; i < n; i++) {
            Completion s = sends.get(i);
            assertEquals("s" + i, s.context());
            assertEquals(OperationType.SEND, s.type());
            assertEquals(RdmaStatus.SUCCESS, s.status());
            assertEquals(10 * (i + 1), s.bytes());
            assertSame(l.client().endpoint(), s.endpoint());
            Completion r = recvs.get(i);
            assertEquals("r" + i, r.context());
            assertEquals(OperationType.RECEIVE, r.type());
            assertEquals(RdmaStatus.SUCCESS, r.status());
            assertEquals(10 * (i + 1), r.bytes());
            assertSame(l.server().endpoint(), r.endpoint());
            assertFalse(r.solicited());
            assertBytes(bytes(out, i * 64, 10 * (i + 1)), bytes(in[i], 0, 10 * (i + 1)), "message " + i);
        }
    }

    /**
     * An attached object is found again through the completion's endpoint.
     *
     * @throws Exception on failure
     */
    @Test
    public void attachment_foundThroughTheCompletionsEndpoint() throws Exception {
        Link l = link();
        Object mine = new Object();
        l.server().endpoint().attach(mine);
        assertSame(mine, l.server().endpoint().attachment());
        l.server().postReceive("r", l.server().register(16, Access.LOCAL_WRITE));
        l.client().send("s", l.client().register(16, 0), 0, 4, 0);
        assertSame(mine, l.server().recvCq().next().endpoint().attachment());
        l.server().endpoint().attach(null);
        assertEquals(null, l.server().endpoint().attachment());
    }

    /**
     * A send gathers its elements in order and the receive scatters the message over its elements.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_gathersElements_receiveScattersThem() throws Exception {
        int k = Math.min(3, caps().maxSge());
        Link l = link(new LinkSpec().options(b -> b.maxSendSge(k).maxReceiveSge(k)));
        MemoryRegion out = l.client().register(300, 0);
        fill(out, 7);
        MemoryRegion in = l.server().register(300, Access.LOCAL_WRITE);
        Sge[] recv = new Sge[k];
        Sge[] send = new Sge[k];
        int total = 0;
        for (int i = 0; i < k; i++) {
            recv[i] = Sge.of(in, i * 100, 40 + i);        // 40, 41, 42 bytes
            send[i] = Sge.of(out, 250 - i * 100, 30 + i); // 30, 31, 32 bytes, in reverse places
            total += 30 + i;
        }
        l.server().endpoint().postReceive("r", recv, k);
        l.client().endpoint().postSend("s", send, k, 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertEquals(total, r.bytes());
        byte[] message = new byte[total];
        int at = 0;
        for (int i = 0; i < k; i++) {
            System.arraycopy(bytes(out, 250 - i * 100, 30 + i), 0, message, at, 30 + i);
            at += 30 + i;
        }
        byte[] placed = new byte[total];
        at = 0;
        for (int i = 0; i < k && at < total; i++) {
            int n = Math.min(40 + i, total - at);
            System.arraycopy(bytes(in, i * 100, n), 0, placed, at, n);
            at += n;
        }
        assertBytes(message, placed, "scattered message");
    }

    /**
     * An empty send (no elements) completes a receive with zero bytes.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_emptyMessage_completesReceiveWithZeroBytes() throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        l.client().endpoint().postSend("s", new Sge[0], 0, 0);
        Completion s = l.client().sendCq().next();
        assertEquals(RdmaStatus.SUCCESS, s.status());
        assertEquals(0, s.bytes());
        Completion r = l.server().recvCq().next();
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertEquals(0, r.bytes());
    }

    /**
     * A large message arrives intact.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_largeMessage_arrivesIntact() throws Exception {
        int size = (int) Math.min(1 << 20, caps().maxRegionSize());
        Link l = link();
        MemoryRegion out = l.client().register(size, 0);
        fill(out, 11);
        MemoryRegion in = l.server().register(size, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        l.client().send("s", out, 0, size, 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals(size, r.bytes());
        assertBytes(bytes(out, 0, size), bytes(in, 0, size), "large message");
    }

    /**
     * A send with no receive posted at the peer fails RECEIVER_NOT_READY and ends the connection:
     * the sender's other work flushes and it gets onError; the receiver gets its terminal event.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_withoutPostedReceive_receiverNotReady_endsConnectionOnBothSides() throws Exception {
        Link l = link();
        MemoryRegion mine = l.client().register(64, Access.LOCAL_WRITE);
        MemoryRegion later = l.server().register(8, Access.LOCAL_WRITE);
        l.client().postReceive("client-recv", mine);
        MemoryRegion out = l.client().register(64, 0);
        l.client().send("s", out, 0, 32, 0);
        Completion s = l.client().sendCq().next();
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, s.status());
        assertEquals("s", s.context());
        assertEquals(0, s.bytes());
        Completion flushed = l.client().recvCq().next();
        assertEquals(RdmaStatus.FLUSHED, flushed.status());
        assertEquals("client-recv", flushed.context());
        assertEquals(EventRecorder.Kind.ERROR, l.client().events().awaitTerminal().kind());
        l.server().events().awaitTerminal();
        assertEquals(EndpointState.DISCONNECTED, l.client().endpoint().state());
        assertEquals(EndpointState.DISCONNECTED, l.server().endpoint().state());
        assertFails(RdmaStatus.NOT_CONNECTED, () -> l.server().postReceive("late", later));
    }

    /**
     * A message longer than the receive it lands in fails LOCAL_LENGTH_ERROR there and
     * REMOTE_INVALID_REQUEST at the sender; the receiver's next receive flushes; both sides end.
     *
     * @throws Exception on failure
     */
    @Test
    public void send_longerThanReceive_lengthErrorAtReceiver_invalidRequestAtSender() throws Exception {
        Link l = link();
        MemoryRegion small = l.server().register(16, Access.LOCAL_WRITE);
        MemoryRegion next = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("small", small);
        l.server().postReceive("next", next);
        MemoryRegion out = l.client().register(64, 0);
        l.client().send("s", out, 0, 32, 0);
        Completion s = l.client().sendCq().next();
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, s.status());
        List<Completion> r = l.server().recvCq().poll(2);
        assertEquals("small", r.get(0).context());
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR, r.get(0).status());
        assertEquals("next", r.get(1).context());
        assertEquals(RdmaStatus.FLUSHED, r.get(1).status());
        assertEquals(EventRecorder.Kind.ERROR, l.server().events().awaitTerminal().kind());
        assertEquals(EventRecorder.Kind.ERROR, l.client().events().awaitTerminal().kind());
        assertEquals(EndpointState.DISCONNECTED, l.server().endpoint().state());
    }

    /**
     * On disconnect every outstanding request of both endpoints completes FLUSHED, in posted order,
     * with zero bytes.
     *
     * @throws Exception on failure
     */
    @Test
    public void disconnect_flushesEveryOutstandingRequest_inOrder() throws Exception {
        Link l = link();
        for (Side s : new Side[] {l.client(), l.server()}) {
            MemoryRegion r = s.register(64, Access.LOCAL_WRITE);
            for (int i = 0; i < 3; i++) {
                s.postReceive(s.name() + i, r);
            }
        }
        l.client().endpoint().disconnect();
        for (Side s : new Side[] {l.client(), l.server()}) {
            List<Completion> got = s.recvCq().poll(3);
            for (int i = 0; i < 3; i++) {
                assertEquals(s.name() + i, got.get(i).context());
                assertEquals(RdmaStatus.FLUSHED, got.get(i).status());
                assertEquals(0, got.get(i).bytes());
                assertEquals(OperationType.RECEIVE, got.get(i).type());
            }
            assertEquals(EventRecorder.Kind.DISCONNECTED, s.events().awaitTerminal().kind());
        }
    }

    /**
     * A send with SOLICIT_EVENT makes a solicited receive; others are not solicited.
     *
     * @throws Exception on failure
     */
    @Test
    public void solicitEvent_reportedOnTheReceive() throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("plain", in);
        l.server().postReceive("solicited", in);
        MemoryRegion out = l.client().register(64, 0);
        l.client().send("a", out, 0, 8, 0);
        l.client().send("b", out, 0, 8, RequestFlags.SOLICIT_EVENT);
        l.client().sendCq().poll(2);
        List<Completion> r = l.server().recvCq().poll(2);
        assertFalse(r.get(0).solicited());
        assertTrue(r.get(1).solicited());
    }

    /**
     * An INLINE send copies its data at post time, from unregistered memory, beyond the element
     * limit; the caller may overwrite the memory at once.
     *
     * @throws Exception on failure
     */
    @Test
    public void inlineSend_copiesDataAtPost_fromUnregisteredMemory() throws Exception {
        Assumptions.assumeTrue(caps().inlineLimit() > 0, "the provider has no inline support (inlineLimit 0)");
        int threshold = Math.min(64, caps().inlineLimit());
        Link l = link(new LinkSpec().options(b -> b.inlineThreshold(threshold)));
        MemoryRegion in = l.server().register(threshold, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        int k = l.client().endpoint().options().maxSendSge() + 1;
        int each = threshold / k;
        ByteBuffer heap = ByteBuffer.allocate(each * k);
        byte[] expected = Bytes.pattern(each * k, 21);
        heap.put(0, expected);
        Sge[] sgl = new Sge[k];
        for (int i = 0; i < k; i++) {
            ByteBuffer part = heap.duplicate().position(i * each).limit((i + 1) * each);
            sgl[i] = Sge.inline(part);
        }
        l.client().endpoint().postSend("inline", sgl, k, RequestFlags.INLINE);
        heap.put(0, new byte[each * k]); // overwrite at once: the provider copied at post time
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals(each * k, r.bytes());
        assertBytes(expected, bytes(in, 0, each * k), "inline data");
    }

    /**
     * An INLINE send of one element of registered memory carries the element's bytes as they were
     * at the post (from its offset, not the region's start); the caller may overwrite them at once.
     *
     * @throws Exception on failure
     */
    @Test
    public void inlineSend_fromRegisteredMemory_bytesTakenAtPost() throws Exception {
        Assumptions.assumeTrue(caps().inlineLimit() > 0, "the provider has no inline support (inlineLimit 0)");
        int threshold = Math.min(64, caps().inlineLimit());
        Link l = link(new LinkSpec().options(b -> b.inlineThreshold(threshold)));
        MemoryRegion in = l.server().register(threshold, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion out = l.client().register(threshold + 8, 0);
        byte[] expected = Bytes.pattern(threshold, 33);
        out.buffer().put(8, expected);
        l.client().endpoint().postSend("inline", new Sge[] {Sge.of(out, 8, threshold)}, 1, RequestFlags.INLINE);
        out.buffer().put(8, new byte[threshold]); // overwrite at once: the bytes went with the post
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals(threshold, r.bytes());
        assertBytes(expected, bytes(in, 0, threshold), "inline data from registered memory");
    }

    /**
     * Inline data beyond the threshold, and unregistered memory without INLINE, are invalid
     * parameters; the endpoint is unchanged.
     *
     * @throws Exception on failure
     */
    @Test
    public void inline_beyondThreshold_orWithoutFlag_invalidParameter() throws Exception {
        Assumptions.assumeTrue(caps().inlineLimit() > 0, "the provider has no inline support (inlineLimit 0)");
        int threshold = Math.min(32, caps().inlineLimit());
        Link l = link(new LinkSpec().options(b -> b.inlineThreshold(threshold)));
        Sge[] big = {Sge.inline(ByteBuffer.allocate(threshold + 1))};
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> l.client().endpoint().postSend("x", big, 1, RequestFlags.INLINE));
        Sge[] small = {Sge.inline(ByteBuffer.allocate(4))};
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> l.client().endpoint().postSend("x", small, 1, 0));
        assertEquals(EndpointState.CONNECTED, l.client().endpoint().state());
        assertRoundTrip(l);
    }

    /**
     * SILENT_SUCCESS: a successful request queues no completion but frees its slot; later
     * completions still come in order.
     *
     * @throws Exception on failure
     */
    @Test
    public void silentSuccess_noCompletion_slotReleased() throws Exception {
        Link l = link(new LinkSpec().options(b -> b.sendQueueDepth(4).receiveQueueDepth(16)));
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        for (int i = 0; i < 12; i++) {
            l.server().postReceive("r" + i, in);
        }
        MemoryRegion out = l.client().register(16, 0);
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 3; i++) {
                l.client().send("silent", out, 0, 8, RequestFlags.SILENT_SUCCESS);
            }
            l.client().send("loud" + round, out, 0, 8, 0);
            Completion c = l.client().sendCq().next();
            assertEquals("loud" + round, c.context(), "only the request without SILENT_SUCCESS completes");
            assertEquals(RdmaStatus.SUCCESS, c.status());
            // completions come in order, so nothing from the silent ones can follow
            assertEquals(List.of(), l.client().sendCq().drain());
        }
        assertEquals(12, l.server().recvCq().poll(12).size());
    }

    /**
     * A failing request with SILENT_SUCCESS is still reported.
     *
     * @throws Exception on failure
     */
    @Test
    public void silentSuccess_failureStillReported() throws Exception {
        Link l = link();
        MemoryRegion out = l.client().register(16, 0);
        l.client().send("silent", out, 0, 8, RequestFlags.SILENT_SUCCESS);
        Completion c = l.client().sendCq().next();
        assertEquals("silent", c.context());
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, c.status());
    }

    /**
     * Posting more receives than the queue depth fails INSUFFICIENT_RESOURCES without harm.
     *
     * @throws Exception on failure
     */
    @Test
    public void receiveQueueFull_insufficientResources_endpointUnchanged() throws Exception {
        Link l = link(new LinkSpec().serverOptions(b -> b.receiveQueueDepth(2)));
        MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
        l.server().postReceive("r0", in);
        l.server().postReceive("r1", in);
        assertFails(RdmaStatus.INSUFFICIENT_RESOURCES, () -> l.server().postReceive("r2", in));
        MemoryRegion out = l.client().register(16, 0);
        l.client().send("s0", out, 0, 4, 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        assertEquals("r0", l.server().recvCq().next().context());
        l.server().postReceive("r2", in); // room again
        l.client().send("s1", out, 0, 4, 0);
        l.client().send("s2", out, 0, 4, 0);
        assertEquals(2, l.client().sendCq().poll(2).size());
        List<Completion> r = l.server().recvCq().poll(2);
        assertEquals("r1", r.get(0).context());
        assertEquals("r2", r.get(1).context());
    }

    /**
     * Receives may be posted before the connection exists and are used once it does; sends may not.
     *
     * @throws Exception on failure
     */
    @Test
    public void receivesPostedBeforeEstablishment_areUsed_sendsAreNotConnected() throws Exception {
        MemoryRegion[] held = new MemoryRegion[2];
        Link l = link(new LinkSpec()
                .beforeConnect(s -> {
                    held[0] = s.register(32, Access.LOCAL_WRITE);
                    s.postReceive("early-client", held[0]);
                    MemoryRegion out = s.register(8, 0);
                    assertFails(RdmaStatus.NOT_CONNECTED, () -> s.send("x", out, 0, 8, 0));
                })
                .beforeAccept(s -> {
                    held[1] = s.register(32, Access.LOCAL_WRITE);
                    s.postReceive("early-server", held[1]);
                }));
        MemoryRegion c = l.client().register(32, 0);
        MemoryRegion s = l.server().register(32, 0);
        l.client().send("c", c, 0, 20, 0);
        l.server().send("s", s, 0, 24, 0);
        Completion atServer = l.server().recvCq().next();
        Completion atClient = l.client().recvCq().next();
        assertEquals("early-server", atServer.context());
        assertEquals(20, atServer.bytes());
        assertEquals("early-client", atClient.context());
        assertEquals(24, atClient.bytes());
    }
}
