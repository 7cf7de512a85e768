package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.internal.BulkFixture.Pair;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/** The session protocol end to end on the simulated fabric: the three paths, limits, closing. */
class BulkSessionTest {
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    @Test
    void helloExchanged_capabilitiesKnownToBothSides() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side());
        assertTrue(p.client.peerCanRdmaRead());
        assertTrue(p.server.peerCanRdmaRead());
        assertTrue(p.client.connection().isOpen());
        assertEquals(BulkConfig.defaults(), p.clientEnd.bulk.configuration());
    }

    @Test
    void inline_smallSendsBothWays_deliveredInOrderOnTheEngineThread() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side());
        List<CompletionStage<Void>> sends = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            sends.add(p.client.send(BulkFixture.data(i * 100, i, i % 2 == 0)));
        }
        p.server.sendAndWait(ByteBuffer.wrap(new byte[] {42}), BulkFixture.TIMEOUT);
        for (CompletionStage<Void> s : sends) {
            BulkFixture.get(s);
        }
        for (int i = 0; i < 50; i++) {
            ByteBuffer got = p.atServer.next();
            assertEquals(i * 100, got.remaining());
            assertEquals(BulkFixture.crc(BulkFixture.data(i * 100, i, false)), BulkFixture.crc(got), "send " + i);
        }
        assertEquals(42, p.atClient.next().get(0));
        Thread handlerThread = p.atServer.threads.take();
        assertFalse(handlerThread == Thread.currentThread());
        BulkStatistics st = p.client.statistics();
        assertEquals(50, st.inlineSends());
        assertEquals(0, st.readTransfers() + st.writeTransfers());
        assertEquals(49 * 50 / 2 * 100, st.bytesSent());
        assertEquals(49 * 50 / 2 * 100, p.server.statistics().bytesReceived());
        assertEquals(0, st.transfersInFlight());
    }

    @Test
    void readPath_largeSend_receiverReadsAndSenderDeregisters() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side());
        ByteBuffer data = BulkFixture.data(3 * BulkFixture.MIB + 17, 1, true);
        int position = data.position();
        BulkFixture.get(p.client.send(data));
        assertEquals(position, data.position(), "the caller's buffer is left as it was");
        ByteBuffer got = p.atServer.next();
        assertEquals(BulkFixture.crc(data), BulkFixture.crc(got));
        assertEquals(1, p.client.statistics().readTransfers());
        assertEquals(data.remaining(), p.server.statistics().bytesReceived());
        assertTrue(p.server.connection().statistics().rdmaReadBytes() > 3 * BulkFixture.MIB - 10_000);
        assertEquals(0, p.client.connection().statistics().rdmaWrites());
        p.assertNothingRegistered();
    }

    @Test
    void writePath_peerWithoutRdmaRead_senderWritesIntoReceiversBuffer() throws Exception {
        Pair p = fx.pair(BulkFixture.side().sim("rdmaRead", false), BulkFixture.side().sim("rdmaRead", false));
        assertFalse(p.client.peerCanRdmaRead());
        ByteBuffer data = BulkFixture.data(3 * BulkFixture.MIB + 17, 2, false);
        BulkFixture.get(p.client.send(data));
        assertEquals(BulkFixture.crc(data), BulkFixture.crc(p.atServer.next()));
        assertEquals(1, p.client.statistics().writeTransfers());
        assertEquals(0, p.client.statistics().readTransfers());
        assertTrue(p.client.connection().statistics().rdmaWriteBytes() > 3 * BulkFixture.MIB - 10_000);
        assertEquals(0, p.server.connection().statistics().rdmaReads());
        p.assertNothingRegistered();
    }

    /** The receiver can read but this side cannot offer memory for reading: WRITE, both ways. */
    @Test
    void mixedPair_onlyOneSideCanRead_bothDirectionsWrite() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side().sim("rdmaRead", false));
        assertFalse(p.client.peerCanRdmaRead(), "the client cannot register memory for the server to read");
        assertFalse(p.server.peerCanRdmaRead(), "the client cannot read");
        ByteBuffer a = BulkFixture.data(100_000, 3, true);
        ByteBuffer b = BulkFixture.data(200_000, 4, true);
        BulkFixture.get(p.client.send(a));
        BulkFixture.get(p.server.send(b));
        assertEquals(BulkFixture.crc(a), BulkFixture.crc(p.atServer.next()));
        assertEquals(BulkFixture.crc(b), BulkFixture.crc(p.atClient.next()));
        assertEquals(1, p.client.statistics().writeTransfers());
        assertEquals(1, p.server.statistics().writeTransfers());
    }

    @Test
    void inlineThresholdZero_everyNonEmptySendByRdma_emptySendInline() throws Exception {
        BulkConfig allRdma = BulkConfig.builder().inlineThreshold(0).build();
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side().bulk(allRdma));
        BulkFixture.get(p.client.send(ByteBuffer.allocate(0)));
        BulkFixture.get(p.client.send(ByteBuffer.wrap(new byte[] {7})));
        assertEquals(0, p.atServer.next().remaining());
        assertEquals(7, p.atServer.next().get(0));
        assertEquals(1, p.client.statistics().inlineSends());
        assertEquals(1, p.client.statistics().readTransfers());
    }

    @Test
    void sendLimits_aboveOwnOrPeersMaxMessageSize_refused() throws Exception {
        Pair p = fx.pair(BulkFixture.side().bulk(BulkConfig.builder().maxMessageSize(5000).build()),
                BulkFixture.side().bulk(BulkConfig.builder().maxMessageSize(9000).build()));
        IllegalArgumentException own = assertThrows(IllegalArgumentException.class,
                () -> p.client.send(ByteBuffer.allocate(9001)));
        assertTrue(own.getMessage().contains("maxMessageSize 9000"), own.getMessage());
        IllegalArgumentException peers = assertThrows(IllegalArgumentException.class,
                () -> p.client.send(ByteBuffer.allocate(5001)));
        assertTrue(peers.getMessage().contains("the 5000 bytes the peer accepts"), peers.getMessage());
        BulkFixture.get(p.client.send(ByteBuffer.allocate(5000)));
        assertEquals(5000, p.atServer.next().remaining());
    }

    @Test
    void sendAndWait_fromTheHandler_isRefusedRatherThanDeadlocking() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side());
        BlockingQueue<Throwable> outcome = new LinkedBlockingQueue<>();
        p.atServer.reaction = (session, d) -> {
            try {
                session.sendAndWait(d, Duration.ofSeconds(1));
                outcome.add(new AssertionError("sendAndWait returned"));
            } catch (Exception | Error e) {
                outcome.add(e);
            }
            session.send(d); // the asynchronous form works from here
        };
        p.client.send(ByteBuffer.wrap(new byte[] {5}));
        assertInstanceOf(IllegalStateException.class, outcome.take());
        assertEquals(5, p.atClient.next().get(0));
        // Blocking on another session or connecting from an engine thread is refused as well.
        p.atServer.reaction = (session, d) -> {
            try {
                p.client.sendAndWait(d, Duration.ofSeconds(1));
                outcome.add(new AssertionError("sendAndWait returned"));
            } catch (Exception | Error e) {
                outcome.add(e);
            }
            try {
                p.serverEnd.bulk.connect(p.client.connection().localAddress(), new BulkFixture.Received(),
                        Duration.ofSeconds(1));
                outcome.add(new AssertionError("connect returned"));
            } catch (Exception | Error e) {
                outcome.add(e);
            }
        };
        p.client.send(ByteBuffer.wrap(new byte[] {6}));
        IllegalStateException other = assertInstanceOf(IllegalStateException.class, outcome.take());
        assertTrue(other.getMessage().contains("engine thread"), other.getMessage());
        assertInstanceOf(IllegalStateException.class, outcome.take());
    }

    @Test
    void maxQueuedSends_moreWaitingSendsAreRefused() throws Exception {
        // One transfer in flight; the peer never answers it (a raw peer), so later sends wait.
        try (RawBulkPeer peer = RawBulkPeer.listening(fx, BulkFixture.side(), BulkFixture.side().bulk(
                BulkConfig.builder().maxInFlight(1).maxQueuedSends(2).inlineThreshold(100).build()))) {
            Session s = peer.session;
            s.send(BulkFixture.data(1000, 1, true));
            peer.expect(ControlMessage.Type.READ_REQUEST);
            // An inline send behind a transfer already moving goes at once ...
            CompletionStage<Void> inline = s.send(ByteBuffer.allocate(1));
            peer.expect(ControlMessage.Type.DATA);
            BulkFixture.get(inline);
            // ... but not behind one that waits for its turn: both wait.
            s.send(BulkFixture.data(1000, 2, true));
            CompletionStage<Void> behind = s.send(ByteBuffer.allocate(1));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.send(ByteBuffer.allocate(1)));
            assertTrue(e.getMessage().contains("maxQueuedSends 2"), e.getMessage());
            assertEquals(1, s.statistics().transfersInFlight());
            assertFalse(behind.toCompletableFuture().isDone());
            assertTrue(peer.messages.isEmpty(), "nothing sent for the waiting sends");
        }
    }

    @Test
    void closeAsync_completesSendsAlreadyMadeThenEndsTheConnection() throws Exception {
        Pair p = fx.pair(BulkFixture.side(), BulkFixture.side().bulk(BulkConfig.builder().maxInFlight(1).build()));
        List<CompletionStage<Void>> sends = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            sends.add(p.client.send(BulkFixture.data(BulkFixture.MIB, i, true)));
            sends.add(p.client.send(BulkFixture.data(10, i, true)));
        }
        CompletionStage<Void> closed = p.client.closeAsync();
        CompletionStage<Void> late = p.client.send(ByteBuffer.allocate(1));
        assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(late));
        BulkFixture.get(closed);
        for (CompletionStage<Void> s : sends) {
            BulkFixture.get(s);
        }
        for (int i = 0; i < 8; i++) {
            p.atServer.next();
        }
        ConnectionLoss atClient = p.atClient.loss();
        assertEquals(TerminationReason.LOCAL_CLOSE, atClient.reason());
        assertEquals(TerminationReason.PEER_DISCONNECTED, p.atServer.loss().reason());
        SmbDirectConnection c = p.client.connection();
        assertFalse(c.isOpen());
        assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(p.client.send(ByteBuffer.allocate(1))));
        assertThrows(SmbDirectException.class, () -> p.client.sendAndWait(ByteBuffer.allocate(1), Duration.ofSeconds(5)));
        p.assertNothingRegistered();
        assertTrue(p.clientEnd.bulk.sessions().isEmpty());
    }

    /**
     * Found by the soak (SoakTest): every session stayed reachable for the 30 s HELLO timeout after
     * it ended (the timer task held it in the JDK's delay queue), with its connection, endpoints and
     * buffers: hundreds of megabytes at a few hundred sessions a second. Both ends of a closed
     * session must become garbage long before the timeout.
     */
    @Test
    void closedSession_notKeptReachableByTheHelloTimeout() throws Exception {
        SmbDirectConfig oneLoop = SmbDirectConfig.builder().engineThreads(1).build();
        BulkFixture.End serverEnd = fx.end(BulkFixture.side().smb(oneLoop));
        BulkFixture.End clientEnd = fx.end(BulkFixture.side().smb(oneLoop));
        BlockingQueue<BulkSession> accepted = new LinkedBlockingQueue<>();
        BlockingQueue<BulkFixture.Received> atServer = new LinkedBlockingQueue<>();
        BulkListener l = serverEnd.bulk.listen(serverEnd.anyAddress(), s -> {
            BulkFixture.Received r = new BulkFixture.Received();
            atServer.add(r);
            accepted.add(s);
            return r;
        });
        try {
            List<java.lang.ref.WeakReference<Object>> ended = closedSession(clientEnd, l, accepted, atServer);
            // An engine loop keeps a reference to the last connection it ran until it runs another.
            closedSession(clientEnd, l, accepted, atServer);
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos(); // a third of the HELLO timeout
            while (ended.stream().anyMatch(r -> r.get() != null)) {
                assertTrue(System.nanoTime() < deadline, "a closed session is still reachable");
                System.gc();
                Thread.sleep(50); // lets the collector and reference processing run; no protocol wait
            }
        } finally {
            l.close();
        }
    }

    /** A session that exchanged a message and closed; only weak references to it escape. */
    private static List<java.lang.ref.WeakReference<Object>> closedSession(BulkFixture.End clientEnd, BulkListener l,
            BlockingQueue<BulkSession> accepted, BlockingQueue<BulkFixture.Received> atServer) throws Exception {
        BulkFixture.Received atClient = new BulkFixture.Received();
        BulkSession client = clientEnd.bulk.connect(l.localAddress(), atClient, BulkFixture.TIMEOUT);
        BulkSession server = accepted.poll(BulkFixture.TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        BulkFixture.Received received = atServer.poll();
        client.sendAndWait(ByteBuffer.allocate(10), BulkFixture.TIMEOUT);
        received.next();
        client.close();
        atClient.loss();
        received.loss();
        return List.of(new java.lang.ref.WeakReference<>(client), new java.lang.ref.WeakReference<>(server),
                new java.lang.ref.WeakReference<>(client.connection()),
                new java.lang.ref.WeakReference<>(server.connection()));
    }
}
