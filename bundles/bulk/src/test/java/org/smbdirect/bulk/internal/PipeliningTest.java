package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.internal.BulkFixture.Pair;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;

/** Several transfers at once ({@link BulkConfig#maxInFlight()}), delivery in send order regardless. */
class PipeliningTest {
    private static final BulkConfig SMALL_INLINE = BulkConfig.builder().inlineThreshold(100).maxInFlight(3).build();
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    /**
     * Exactly maxInFlight transfers move; the rest, and inline sends behind a waiting one, wait in
     * order; completions in any order free slots.
     */
    @Test
    void sender_exactlyMaxInFlightMove_completionsInAnyOrderFreeSlots() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.listening(fx, BulkFixture.side(), BulkFixture.side().bulk(SMALL_INLINE))) {
            Session s = peer.session;
            List<ByteBuffer> data = new ArrayList<>();
            List<CompletionStage<Void>> sends = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                data.add(BulkFixture.data(5000 + i, i, true));
                sends.add(s.send(data.get(i)));
            }
            sends.add(s.send(ByteBuffer.wrap(new byte[] {66}))); // inline, behind waiting send 4
            List<ControlMessage> requests = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                ControlMessage m = peer.expect(Type.READ_REQUEST);
                assertEquals(i, m.sequence);
                requests.add(m);
            }
            assertEquals(3, s.statistics().transfersInFlight());
            assertTrue(peer.messages.isEmpty(), "send 4 and the inline send 6 wait: " + peer.messages.size());
            // The receiver reads transfer 2 first and reports it complete: send 2 completes, send 4 starts.
            readAndCheck(peer, requests.get(1), data.get(1));
            peer.signal(Type.COMPLETE, 2, false);
            BulkFixture.get(sends.get(1));
            assertFalse(sends.get(0).toCompletableFuture().isDone());
            assertEquals(4, peer.expect(Type.READ_REQUEST).sequence);
            peer.signal(Type.COMPLETE, 3, false);
            assertEquals(5, peer.expect(Type.READ_REQUEST).sequence);
            ControlMessage inline = peer.expect(Type.DATA);
            assertEquals(6, inline.sequence);
            assertEquals(66, inline.inline.get(0));
            for (long seq : new long[] {5, 1, 4}) {
                peer.signal(Type.COMPLETE, seq, false);
            }
            for (CompletionStage<Void> f : sends) {
                BulkFixture.get(f);
            }
            assertEquals(3, s.inFlightHighWater());
            assertEquals(5, s.statistics().readTransfers());
            assertEquals(0, s.statistics().transfersInFlight());
            assertEquals(0, s.connection().statistics().registrationsLive());
        }
    }

    /** A peer's sends arrive complete out of order (RDMA Write path): delivered in send order. */
    @Test
    void receiver_writesCompletedOutOfOrder_deliveredInSendOrder() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), BulkFixture.side(),
                new Hello(false, 4, 1 << 30, 8 << 20, 64))) {
            ByteBuffer one = BulkFixture.data(300_000, 11, true);
            ByteBuffer two = BulkFixture.data(200_000, 12, true);
            peer.send(ControlMessage.encode(Type.WRITE_REQUEST, 0, 1, one.remaining(), List.of(), one.slice(0, 10)));
            peer.send(ControlMessage.encode(Type.WRITE_REQUEST, 0, 2, two.remaining(), List.of(), two.slice(0, 20)));
            peer.data(3, ByteBuffer.wrap(new byte[] {3}));
            ControlMessage t1 = peer.expect(Type.TARGET);
            ControlMessage t2 = peer.expect(Type.TARGET);
            assertEquals(1, t1.sequence);
            assertEquals(one.remaining() - 10, t1.totalLength);
            assertEquals(2, t2.sequence);
            // Transfer 2 first, then 1.
            BulkFixture.get(peer.connection.rdmaWrite(two.slice(20, two.remaining() - 20), t2.descriptors, 0));
            peer.signal(Type.COMPLETE, 2, true);
            BulkFixture.get(peer.connection.rdmaWrite(one.slice(10, one.remaining() - 10), t1.descriptors, 0));
            peer.signal(Type.COMPLETE, 1, true);
            assertEquals(BulkFixture.crc(one), BulkFixture.crc(peer.received.next()));
            assertEquals(BulkFixture.crc(two), BulkFixture.crc(peer.received.next()));
            assertEquals(3, peer.received.next().get(0));
            assertEquals(0, peer.session.connection().statistics().registrationsLive());
        }
    }

    /**
     * Receiver memory is bounded by its maxInFlight: a transfer that completes before an earlier
     * one keeps its slot until delivered, so the third transfer's buffer is allocated only once the
     * first two were delivered.
     */
    @Test
    void receiver_transferCompleteButHeldForOrder_keepsItsSlot() throws Exception {
        AtomicReference<Session> receiver = new AtomicReference<>();
        AtomicLong deliveredWhenThirdAllocated = new AtomicLong(-1);
        Allocator watching = n -> {
            if (n == 3000) {
                // on the engine thread, under the session's (reentrant) lock: what was delivered so far
                deliveredWhenThirdAllocated.set(receiver.get().statistics().bytesReceived());
            }
            return ByteBuffer.allocateDirect(n);
        };
        BulkFixture.Side bulkSide = BulkFixture.side().allocator(watching)
                .bulk(BulkConfig.builder().maxInFlight(2).build());
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), bulkSide,
                new Hello(false, 4, 1 << 30, 8 << 20, 64))) {
            receiver.set(peer.session);
            int[] sizes = {1000, 2000, 3000};
            for (int i = 0; i < 3; i++) {
                peer.send(ControlMessage.encode(Type.WRITE_REQUEST, 0, i + 1, sizes[i], List.of(), ByteBuffer.allocate(1)));
            }
            ControlMessage t1 = peer.expect(Type.TARGET);
            ControlMessage t2 = peer.expect(Type.TARGET);
            BulkFixture.get(peer.connection.rdmaWrite(BulkFixture.data(1999, 2, true), t2.descriptors, 0));
            peer.signal(Type.COMPLETE, 2, true);
            BulkFixture.get(peer.connection.rdmaWrite(BulkFixture.data(999, 1, true), t1.descriptors, 0));
            peer.signal(Type.COMPLETE, 1, true);
            ControlMessage t3 = peer.expect(Type.TARGET);
            assertEquals(3, t3.sequence);
            assertEquals(3000, peer.received.next().remaining() + peer.received.next().remaining());
            assertEquals(3000, deliveredWhenThirdAllocated.get(), "sends 1 and 2 were delivered first");
            BulkFixture.get(peer.connection.rdmaWrite(BulkFixture.data(2999, 3, true), t3.descriptors, 0));
            peer.signal(Type.COMPLETE, 3, true);
            assertEquals(3000, peer.received.next().remaining());
        }
    }

    /** RDMA Read path: inline data behind a transfer being read waits for it. */
    @Test
    void receiver_inlineBehindATransferBeingRead_waitsForIt() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), BulkFixture.side(),
                new Hello(true, 4, 1 << 30, 8 << 20, 64))) {
            ByteBuffer big = BulkFixture.data(20 * BulkFixture.MIB, 21, true);
            try (RegisteredBuffer rb = peer.connection.register(big.slice(100, big.remaining() - 100),
                    RemoteAccess.READ)) {
                peer.readRequest(1, big, 100, rb.descriptors());
                peer.data(2, ByteBuffer.wrap(new byte[] {2}));
                ByteBuffer small = BulkFixture.data(5000, 22, true);
                try (RegisteredBuffer rb3 = peer.connection.register(small.slice(1, 4999), RemoteAccess.READ)) {
                    peer.readRequest(3, small, 1, rb3.descriptors());
                    assertEquals(BulkFixture.crc(big), BulkFixture.crc(peer.received.next()));
                    assertEquals(2, peer.received.next().get(0));
                    assertEquals(BulkFixture.crc(small), BulkFixture.crc(peer.received.next()));
                    List<Long> completed = List.of(peer.expect(Type.COMPLETE).sequence, peer.expect(Type.COMPLETE).sequence);
                    assertTrue(completed.containsAll(List.of(1L, 3L)), completed.toString());
                }
            }
        }
    }

    /**
     * End to end over a slow link (20 ms each way): many sends of mixed sizes, four transfers in
     * flight at the sender, one at a time at the receiver (the rest queue there); content and
     * order preserved.
     */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void slowReceiver_mixedSizes_orderAndContentPreserved(boolean rdmaRead) throws Exception {
        BulkFixture.Side receiver = BulkFixture.side().sim("rdmaRead", rdmaRead).sim("latency.enabled", true)
                .sim("latency.microseconds", 20_000).bulk(BulkConfig.builder().maxInFlight(1).build());
        BulkFixture.Side sender = BulkFixture.side().sim("rdmaRead", rdmaRead).sim("latency.enabled", true)
                .sim("latency.microseconds", 20_000).bulk(BulkConfig.builder().maxInFlight(4).build());
        Pair p = fx.pair(receiver, sender);
        int[] sizes = new int[24];
        List<CompletionStage<Void>> sends = new ArrayList<>();
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = i % 3 == 0 ? 100 + i : 64 * 1024 * (i % 5 + 1) + i;
            sends.add(p.client.send(BulkFixture.data(sizes[i], i, i % 2 == 0)));
        }
        for (int i = 0; i < sizes.length; i++) {
            ByteBuffer got = p.atServer.next();
            assertEquals(sizes[i], got.remaining(), "send " + i);
            assertEquals(BulkFixture.crc(BulkFixture.data(sizes[i], i, false)), BulkFixture.crc(got), "send " + i);
        }
        for (CompletionStage<Void> f : sends) {
            BulkFixture.get(f);
        }
        int highWater = p.client.inFlightHighWater();
        assertTrue(highWater >= 2 && highWater <= 4, "transfers in flight at once: " + highWater);
        assertEquals(16, rdmaRead ? p.client.statistics().readTransfers() : p.client.statistics().writeTransfers());
        assertEquals(8, p.client.statistics().inlineSends());
        p.assertNothingRegistered();
    }

    private static void readAndCheck(RawBulkPeer peer, ControlMessage request, ByteBuffer expected) throws Exception {
        ByteBuffer into = ByteBuffer.allocateDirect(request.totalLength);
        into.put(request.inline.duplicate());
        BulkFixture.get(peer.connection.rdmaRead(into.slice(request.inline.remaining(), request.rdmaLength()),
                request.descriptors, 0));
        assertEquals(BulkFixture.crc(expected), BulkFixture.crc(into.clear()));
    }
}
