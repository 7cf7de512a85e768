package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.verbs.internal.CompletionQueueProbe;
import org.smbdirect.rdma.verbs.internal.EndpointProbe;

/** The RDMA service over a device: sends into receives, RDMA Read and Write with rights and bounds. */
class DataTransferDeviceTest {
    private Fixture f;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
    }

    @AfterEach
    void close() {
        f.close();
    }

    private static void put(MemoryRegion r, int offset, String text) {
        r.buffer().put(offset, text.getBytes(StandardCharsets.US_ASCII));
    }

    private static String get(MemoryRegion r, int offset, int length) {
        byte[] b = new byte[length];
        r.buffer().get(offset, b);
        return new String(b, StandardCharsets.US_ASCII);
    }

    @Test
    void send_gatheredIntoScatteredReceive_bytesAndContextsInPostingOrder() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.server.postReceive("first", new Sge[] {Sge.of(rx, 0, 4), Sge.of(rx, 10, 16)}, 2);
        p.server.postReceive("second", new Sge[] {Sge.of(rx, 32, 32)}, 1);
        MemoryRegion tx = p.client.register(Fixture.direct(64), 0);
        put(tx, 0, "abcdefgh");
        put(tx, 40, "XYZ");
        p.client.postSend("s1", new Sge[] {Sge.of(tx, 0, 8), Sge.of(tx, 40, 3)}, 2, RequestFlags.NONE);
        p.client.postSend("s2", new Sge[0], 0, RequestFlags.NONE);
        List<CompletionResult> sent = p.clientCq.take(2, Fixture.TIMEOUT);
        assertEquals("s1", sent.get(0).requestContext());
        assertEquals(OperationType.SEND, sent.get(0).type());
        assertEquals(RdmaStatus.SUCCESS, sent.get(0).status());
        assertEquals(11, sent.get(0).bytesTransferred());
        assertSame(p.client, sent.get(0).endpoint());
        assertEquals("s2", sent.get(1).requestContext());
        assertEquals(0, sent.get(1).bytesTransferred());
        List<CompletionResult> received = p.serverCq.take(2, Fixture.TIMEOUT);
        assertEquals("first", received.get(0).requestContext());
        assertEquals(OperationType.RECEIVE, received.get(0).type());
        assertEquals(11, received.get(0).bytesTransferred());
        assertEquals("abcd", get(rx, 0, 4));
        assertEquals("efghXYZ", get(rx, 10, 7));
        assertEquals("second", received.get(1).requestContext());
        assertEquals(0, received.get(1).bytesTransferred(), "an empty message fills a receive with nothing");
        assertFalse(received.get(0).solicited());
    }

    @Test
    void send_longerThanReceive_receiveLengthErrorSendRemoteInvalidRequestConnectionEnds() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        p.server.postReceive("small", new Sge[] {Sge.of(rx, 0, 8)}, 1);
        p.server.postReceive("flushed", new Sge[] {Sge.of(rx, 8, 8)}, 1);
        MemoryRegion tx = p.client.register(Fixture.direct(64), 0);
        p.client.postSend("big", new Sge[] {Sge.of(tx, 0, 64)}, 1, RequestFlags.NONE);
        CompletionResult send = p.clientCq.one(Fixture.TIMEOUT);
        List<CompletionResult> recv = p.serverCq.take(2, Fixture.TIMEOUT);
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, send.status());
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR, recv.get(0).status());
        assertEquals(RdmaStatus.FLUSHED, recv.get(1).status());
        RecordingListener.Event c = p.clientEvents.next(Fixture.TIMEOUT);
        RecordingListener.Event s = p.serverEvents.next(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, c.status, c.toString());
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR, s.status, s.toString());
    }

    @Test
    void send_withoutPostedReceive_receiverNotReady() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        p.client.postSend("nobody", new Sge[] {Sge.of(tx)}, 1, RequestFlags.NONE);
        CompletionResult c = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, c.status());
        RecordingListener.Event e = p.clientEvents.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, e.status);
        p.serverEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
    }

    @Test
    void rdmaWrite_intoRemoteWritableRegion_atItsRemoteOffset() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion target = p.server.register(Fixture.direct(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion src = p.client.register(Fixture.direct(4096), 0);
        put(src, 100, "written by RDMA");
        p.client.postWrite("w", new Sge[] {Sge.of(src, 100, 15)}, 1, target.remoteOffset() + 2000, target.token(),
                RequestFlags.NONE);
        CompletionResult c = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, c.status());
        assertEquals(OperationType.WRITE, c.type());
        assertEquals(15, c.bytesTransferred());
        assertEquals("written by RDMA", get(target, 2000, 15));
        p.serverCq.expectEmpty(50);
    }

    @Test
    void rdmaRead_fromRemoteReadableRegion_intoScatteredElements() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion source = p.server.register(Fixture.direct(8192), Access.REMOTE_READ);
        put(source, 8000, "0123456789");
        MemoryRegion dst = p.client.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.client.postRead("r", new Sge[] {Sge.of(dst, 0, 4), Sge.of(dst, 32, 6)}, 2, source.remoteOffset() + 8000,
                source.token(), RequestFlags.NONE);
        CompletionResult c = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, c.status());
        assertEquals(OperationType.READ, c.type());
        assertEquals(10, c.bytesTransferred());
        assertEquals("0123", get(dst, 0, 4));
        assertEquals("456789", get(dst, 32, 6));
    }

    @Test
    void rdmaRead_pastTheEndOfTheRemoteRegion_remoteAccessErrorEndsConnection() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion source = p.server.register(Fixture.direct(100), Access.REMOTE_READ);
        MemoryRegion dst = p.client.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.client.postRead("r", new Sge[] {Sge.of(dst, 0, 10)}, 1, source.remoteOffset() + 95, source.token(),
                RequestFlags.NONE);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, p.clientCq.one(Fixture.TIMEOUT).status());
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, p.clientEvents.expect("ERROR", Fixture.TIMEOUT).status);
    }

    @Test
    void rdmaWrite_toReadOnlyRemoteRegion_remoteAccessError() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion readOnly = p.server.register(Fixture.direct(100), Access.REMOTE_READ);
        MemoryRegion src = p.client.register(Fixture.direct(8), 0);
        p.client.postWrite("w", new Sge[] {Sge.of(src)}, 1, readOnly.remoteOffset(), readOnly.token(),
                RequestFlags.NONE);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, p.clientCq.one(Fixture.TIMEOUT).status());
        assertEquals(0, readOnly.buffer().get(0), "nothing was written");
    }

    @Test
    void rdmaRead_withATokenOfAnotherConnection_remoteAccessError() throws Exception {
        Fixture.Pair p = f.connect();
        Fixture.Pair q = f.connect();
        MemoryRegion elsewhere = q.server.register(Fixture.direct(100), Access.REMOTE_READ);
        MemoryRegion dst = p.client.register(Fixture.direct(100), Access.LOCAL_WRITE);
        p.client.postRead("r", new Sge[] {Sge.of(dst)}, 1, elsewhere.remoteOffset(), elsewhere.token(),
                RequestFlags.NONE);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, p.clientCq.one(Fixture.TIMEOUT).status(),
                "RFC 5042: a region is reachable only through its own connection");
        assertEquals(EndpointState.CONNECTED, q.client.state(), "the other connection is unaffected");
    }

    @Test
    void inlineSend_fromHeapMemory_copiedAtPostTime() throws Exception {
        int inline = Math.min(64, f.provider.capabilities().inlineLimit());
        Fixture.Pair p = f.connect(b -> b.inlineThreshold(inline));
        MemoryRegion rx = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.server.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        ByteBuffer heap = ByteBuffer.wrap("inline!".getBytes(StandardCharsets.US_ASCII));
        p.client.postSend("tx", new Sge[] {Sge.inline(heap)}, 1, RequestFlags.INLINE);
        heap.put(0, (byte) 'X'); // the provider copied at post time
        CompletionResult r = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertEquals(7, r.bytesTransferred());
        assertEquals("inline!", get(rx, 0, 7));
    }

    @Test
    void inlineSend_longerThanThreshold_invalidParameter() throws Exception {
        Fixture.Pair p = f.connect(b -> b.inlineThreshold(16));
        RdmaException e = assertThrows(RdmaException.class, () -> p.client.postSend("tx",
                new Sge[] {Sge.inline(ByteBuffer.allocate(17))}, 1, RequestFlags.INLINE));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        RdmaException e2 = assertThrows(RdmaException.class, () -> p.client.postSend("tx",
                new Sge[] {Sge.inline(ByteBuffer.allocate(4))}, 1, RequestFlags.NONE));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e2.status(), "unregistered memory needs INLINE");
    }

    @Test
    void silentSuccess_noCompletionButTheSlotIsReleased() throws Exception {
        Fixture.Pair p = f.connect(b -> b.sendQueueDepth(2));
        MemoryRegion rx = p.server.register(Fixture.direct(16 * 8), Access.LOCAL_WRITE);
        for (int i = 0; i < 8; i++) {
            p.server.postReceive(i, new Sge[] {Sge.of(rx, i * 8, 8)}, 1);
        }
        MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
        for (int i = 0; i < 6; i++) {
            // a send queue of depth 2 takes 6 silent sends only if finished ones free their slots
            postWithRetry(p, tx);
        }
        List<CompletionResult> received = p.serverCq.take(6, Fixture.TIMEOUT);
        for (int i = 0; i < 6; i++) {
            assertEquals(i, received.get(i).requestContext());
            assertEquals(RdmaStatus.SUCCESS, received.get(i).status());
        }
        p.clientCq.expectEmpty(100);
    }

    /**
     * Silent RDMA Writes reach the device unsignaled but one in half the send queue's depth (as
     * perftest's {@code --cq-mod}): of eight writes the device reports two work completions, the
     * consumer sees only the one it asked for, every byte arrived, and that completion frees the
     * slots of the silent writes before it.
     */
    @Test
    void silentWrites_onlyOneInHalfTheDepthSignaled_theReportedOneFreesTheSlotsBeforeIt() throws Exception {
        Fixture.Pair p = f.connect(b -> b.sendQueueDepth(8));
        MemoryRegion target = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion src = p.client.register(Fixture.direct(16), 0);
        for (int i = 0; i < 16; i++) {
            src.buffer().put(i, (byte) (i + 1));
        }
        long before = CompletionQueueProbe.workCompletions(p.clientCq.queue);
        for (int i = 0; i < 7; i++) {
            p.client.postWrite("silent" + i, new Sge[] {Sge.of(src, i, 1)}, 1, target.remoteOffset() + i,
                    target.token(), RequestFlags.SILENT_SUCCESS);
        }
        p.client.postWrite("loud", new Sge[] {Sge.of(src, 7, 1)}, 1, target.remoteOffset() + 7, target.token(),
                RequestFlags.NONE);
        CompletionResult c = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals("loud", c.requestContext());
        assertEquals(RdmaStatus.SUCCESS, c.status());
        assertEquals(2, CompletionQueueProbe.workCompletions(p.clientCq.queue) - before,
                "work completions: the fourth silent write's (the depth is 8) and the loud one's");
        for (int i = 0; i < 8; i++) {
            assertEquals(i + 1, target.buffer().get(i), "byte " + i);
        }
        // every slot is free again: eight more silent writes are taken at once
        for (int i = 0; i < 8; i++) {
            p.client.postWrite("again" + i, new Sge[] {Sge.of(src, 8 + i, 1)}, 1, target.remoteOffset() + 8 + i,
                    target.token(), RequestFlags.SILENT_SUCCESS);
        }
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(Fixture.TIMEOUT);
        while (target.buffer().get(15) != 16 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        for (int i = 8; i < 16; i++) {
            assertEquals(i + 1, target.buffer().get(i), "byte " + i);
        }
        p.clientCq.expectEmpty(100);
    }

    /**
     * A failed silent request is reported even when it went to the device unsignaled (a request
     * that fails always reports itself), with its own context; the connection ends.
     */
    @Test
    void silentWrite_unsignaledAndFailing_reportedWithItsContext() throws Exception {
        Fixture.Pair p = f.connect(b -> b.sendQueueDepth(8));
        MemoryRegion readOnly = p.server.register(Fixture.direct(16), Access.REMOTE_READ);
        MemoryRegion src = p.client.register(Fixture.direct(8), 0);
        long before = CompletionQueueProbe.workCompletions(p.clientCq.queue);
        p.client.postWrite("silent", new Sge[] {Sge.of(src)}, 1, readOnly.remoteOffset(), readOnly.token(),
                RequestFlags.SILENT_SUCCESS);
        CompletionResult c = p.clientCq.one(Fixture.TIMEOUT);
        assertEquals("silent", c.requestContext());
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, c.status());
        assertEquals(1, CompletionQueueProbe.workCompletions(p.clientCq.queue) - before);
        assertEquals(0, readOnly.buffer().get(0), "nothing was written");
    }

    /**
     * An endpoint closed with silent requests that reported nothing is released at once: it does
     * not wait for completions that will never be reported (the forced release would come after
     * 60 s).
     */
    @Test
    void close_afterSilentWritesThatReportNothing_endpointReleasedAtOnce() throws Exception {
        try (Fixture patient = new Fixture(java.util.Map.of("closeTimeoutMillis", 60_000))) {
            Fixture.Pair p = patient.connect(b -> b.sendQueueDepth(8));
            MemoryRegion target = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            MemoryRegion src = p.client.register(Fixture.direct(8), 0);
            for (int i = 0; i < 3; i++) {
                p.client.postWrite(null, new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(),
                        RequestFlags.SILENT_SUCCESS);
            }
            p.client.close();
            Fixture.awaitReleased(p.clientCq);
        }
    }

    /**
     * {@link RequestFlags#DEFER}: deferred sends wait for the next send posted without the flag and
     * reach the device with it in one {@code ibv_post_send}; a longer burst goes in chains of
     * {@code WorkRequestRecords.MAX_CHAIN}. Each inline send keeps its own copy of its bytes while
     * it waits, and the peer receives them all, in order.
     */
    @Test
    void deferredSends_postedWithTheNextSendWithoutTheFlag_inOneCall() throws Exception {
        int inline = Math.min(64, f.provider.capabilities().inlineLimit());
        Fixture.Pair p = f.connect(b -> b.inlineThreshold(inline).sendQueueDepth(32), b -> b.receiveQueueDepth(32),
                null);
        int n = 23;
        MemoryRegion rx = p.server.register(Fixture.direct(8 * n), Access.LOCAL_WRITE);
        for (int i = 0; i < n; i++) {
            p.server.postReceive(i, new Sge[] {Sge.of(rx, 8 * i, 8)}, 1);
        }
        long before = EndpointProbe.postSendCalls(p.client);
        for (int i = 0; i < 5; i++) {
            ByteBuffer heap = ByteBuffer.wrap(String.format("send%03d", i).getBytes(StandardCharsets.US_ASCII));
            p.client.postSend("d" + i, new Sge[] {Sge.inline(heap)}, 1, RequestFlags.INLINE
                    | (i < 4 ? RequestFlags.DEFER : 0));
            heap.put(0, (byte) 'X'); // copied when posted, although it waits
        }
        assertEquals(1, EndpointProbe.postSendCalls(p.client) - before, "five sends, one post");
        for (int i = 5; i < n; i++) {
            ByteBuffer heap = ByteBuffer.wrap(String.format("send%03d", i).getBytes(StandardCharsets.US_ASCII));
            p.client.postSend("d" + i, new Sge[] {Sge.inline(heap)}, 1, RequestFlags.INLINE
                    | (i < n - 1 ? RequestFlags.DEFER : 0));
        }
        assertEquals(3, EndpointProbe.postSendCalls(p.client) - before, "eighteen more: a full chain of 16 "
                + "went at once, the last two with the send without the flag");
        List<CompletionResult> sent = p.clientCq.take(n, Fixture.TIMEOUT);
        List<CompletionResult> received = p.serverCq.take(n, Fixture.TIMEOUT);
        for (int i = 0; i < n; i++) {
            assertEquals("d" + i, sent.get(i).requestContext());
            assertEquals(RdmaStatus.SUCCESS, sent.get(i).status());
            assertEquals(i, received.get(i).requestContext());
            assertEquals(String.format("send%03d", i), get(rx, 8 * i, 7), "receive " + i);
        }
    }

    /**
     * Deferred sends still waiting when the connection ends never reach the device: they complete
     * {@link RdmaStatus#FLUSHED}, in order, and the endpoint is released at once.
     */
    @Test
    void deferredSends_whenTheConnectionEnds_completeFlushed() throws Exception {
        try (Fixture patient = new Fixture(java.util.Map.of("closeTimeoutMillis", 60_000))) {
            Fixture.Pair p = patient.connect();
            MemoryRegion rx = p.server.register(Fixture.direct(8), Access.LOCAL_WRITE);
            p.server.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
            MemoryRegion tx = p.client.register(Fixture.direct(8), 0);
            long before = EndpointProbe.postSendCalls(p.client);
            for (int i = 0; i < 3; i++) {
                p.client.postSend("waits" + i, new Sge[] {Sge.of(tx)}, 1, RequestFlags.DEFER);
            }
            assertEquals(0, EndpointProbe.postSendCalls(p.client) - before, "they wait");
            p.client.disconnect();
            List<CompletionResult> flushed = p.clientCq.take(3, Fixture.TIMEOUT);
            for (int i = 0; i < 3; i++) {
                assertEquals("waits" + i, flushed.get(i).requestContext());
                assertEquals(RdmaStatus.FLUSHED, flushed.get(i).status());
                assertEquals(OperationType.SEND, flushed.get(i).type());
            }
            assertEquals(0, EndpointProbe.postSendCalls(p.client) - before, "none reached the device");
            p.client.close();
            Fixture.awaitReleased(p.clientCq);
        }
    }

    /**
     * A registration with {@link RequestFlags#DEFER}: the memory window's bind waits for the next
     * request and reaches the device with it in one {@code ibv_post_send} (one system call on
     * Soft-RoCE instead of two), and the peer writes through the token that request carried.
     */
    @Test
    void deferredRegistration_bindGoesWithTheNextSend_inOneCall_peerWritesThroughIt() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.client.register(Fixture.direct(16), Access.LOCAL_WRITE);
        p.client.postReceive("rx", new Sge[] {Sge.of(rx)}, 1);
        long before = EndpointProbe.postSendCalls(p.server);
        MemoryRegion target = p.server.register(Fixture.direct(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE,
                RequestFlags.DEFER);
        assertEquals(0, EndpointProbe.postSendCalls(p.server) - before, "the bind waits for the next request");
        MemoryRegion tx = p.server.register(Fixture.direct(12), 0);
        tx.buffer().putInt(0, target.token()).putLong(4, target.remoteOffset());
        p.server.postSend("token", new Sge[] {Sge.of(tx)}, 1, 0);
        assertEquals(1, EndpointProbe.postSendCalls(p.server) - before, "bind and send, one post");
        assertEquals(RdmaStatus.SUCCESS, p.serverCq.take(1, Fixture.TIMEOUT).get(0).status());
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.take(1, Fixture.TIMEOUT).get(0).status());
        MemoryRegion src = p.client.register(Fixture.direct(4096), 0);
        for (int i = 0; i < 4096; i++) {
            src.buffer().put(i, (byte) (i * 7));
        }
        p.client.postWrite("w", new Sge[] {Sge.of(src)}, 1, rx.buffer().getLong(4), rx.buffer().getInt(0), 0);
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.take(1, Fixture.TIMEOUT).get(0).status());
        for (int i = 0; i < 4096; i++) {
            assertEquals((byte) (i * 7), target.buffer().get(i), "byte " + i);
        }
        p.server.deregister(target);
        assertEquals(EndpointState.CONNECTED, p.server.state());
    }

    /**
     * A deferred registration whose bind never reached the device when the connection ended, and
     * one deregistered before any request: neither fails the queue pair, and the endpoint is
     * released at once.
     */
    @Test
    void deferredRegistration_unposted_deregisteredOrAtTheEnd_nothingLeft() throws Exception {
        try (Fixture patient = new Fixture(java.util.Map.of("closeTimeoutMillis", 60_000))) {
            Fixture.Pair p = patient.connect();
            MemoryRegion gone = p.client.register(Fixture.direct(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE,
                    RequestFlags.DEFER);
            p.client.deregister(gone);
            assertEquals(EndpointState.CONNECTED, p.client.state(), "the bind posted for the deregistration worked");
            long before = EndpointProbe.postSendCalls(p.client);
            p.client.register(Fixture.direct(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE, RequestFlags.DEFER);
            assertEquals(0, EndpointProbe.postSendCalls(p.client) - before, "the bind waits");
            p.client.disconnect();
            p.client.close();
            Fixture.awaitReleased(p.clientCq);
        }
    }

    private static void postWithRetry(Fixture.Pair p, MemoryRegion tx) throws Exception {
        long deadline = System.nanoTime() + Fixture.TIMEOUT * 1_000_000L;
        while (true) {
            try {
                p.client.postSend(null, new Sge[] {Sge.of(tx)}, 1, RequestFlags.SILENT_SUCCESS);
                return;
            } catch (RdmaException e) {
                assertEquals(RdmaStatus.INSUFFICIENT_RESOURCES, e.status());
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(1);
            }
        }
    }

    /** A solicited, fenced and deferred send goes with the send after it, and both are delivered in order. */
    @Test
    void solicitedAndFencedSends_areDelivered() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion rx = p.server.register(Fixture.direct(32), Access.LOCAL_WRITE);
        p.server.postReceive("rx1", new Sge[] {Sge.of(rx, 0, 16)}, 1);
        p.server.postReceive("rx2", new Sge[] {Sge.of(rx, 16, 16)}, 1);
        MemoryRegion tx = p.client.register(Fixture.direct(16), 0);
        p.client.postSend("tx", new Sge[] {Sge.of(tx)}, 1, RequestFlags.SOLICIT_EVENT | RequestFlags.READ_FENCE
                | RequestFlags.DEFER);
        p.client.postSend("after", new Sge[] {Sge.of(tx, 0, 8)}, 1, RequestFlags.NONE);
        List<CompletionResult> sent = p.clientCq.take(2, Fixture.TIMEOUT);
        assertEquals("tx", sent.get(0).requestContext());
        assertEquals(RdmaStatus.SUCCESS, sent.get(0).status());
        assertEquals("after", sent.get(1).requestContext());
        List<CompletionResult> received = p.serverCq.take(2, Fixture.TIMEOUT);
        assertEquals(16, received.get(0).bytesTransferred());
        assertEquals(8, received.get(1).bytesTransferred());
    }
}
