package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/** Credits: MS-SMBD 3.1.5.1 (current text) and 3.1.5.9, and the absence of deadlock. */
class CreditManagementTest {
    private Fixture fx;
    private RdmaProvider engineSide;
    private RdmaProvider peerSide;
    private final Recorder upper = new Recorder();

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        engineSide = fx.provider();
        peerSide = fx.provider();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /**
     * 3.1.5.1: with one send credit left and nothing to grant (every receive already posted and
     * granted), the message waits; it goes once a received message frees a receive to grant.
     */
    @Test
    void send_lastCredit_notSpentWithoutGrantingOne() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().receiveCreditMax(4).build(), engineSide);
        // 2 credits for the engine: its first message (granting 4) uses one.
        try (Established e = Established.active(fx, t, peerSide, upper,
                RawPeer.negotiateResponse(0x0100, 4, 2, 0, 1048576, 1024, 1024, 131072))) {
            assertEquals(1, (int) Fixture.get(e.connection.inspect(c -> c.model.credits.sendCredits)));
            e.connection.send(ByteBuffer.wrap(new byte[] {1}));
            assertNull(e.peer.poll(Duration.ofMillis(100)), "the last credit is not spent without a grant");
            assertEquals(1, (int) Fixture.until(e.connection, c -> c.model.sendQueue.size(), v -> v == 1));
            // The peer's message uses one of the engine's receives: now there is a credit to grant.
            e.peer.send(RawPeer.dataTransfer(4, 0, 0, 0, new byte[0]));
            DataTransferHeader h = RawPeer.header(e.peer.receive());
            assertEquals(1, h.creditsGranted());
            assertEquals(1, h.dataLength());
            assertEquals(0, (int) Fixture.get(e.connection.inspect(c -> c.model.credits.sendCredits)));
            assertTrue(e.connection.statistics().creditStalls() > 0);
        }
    }

    /** 3.1.5.8 and 3.1.5.9: ReceiveCreditTarget follows the peer's CreditsRequested, capped by ReceiveCreditMax. */
    @Test
    void receive_creditsRequested_setsReceiveCreditTarget() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().receiveCreditMax(20).build(), engineSide);
        try (Established e = Established.passive(fx, t, engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 4, 1024, 1024, 131072))) {
            assertEquals(4, e.response.creditsGranted(), "initial receives: min(CreditsRequested 4, max 20)");
            e.peer.send(RawPeer.dataTransfer(30, 4, 0, 0, new byte[] {1}));
            upper.message();
            // 3 receives left, below half of min(target 30, max 20): refilled to 20 and the 17 new
            // credits granted at once in a message of their own (3.1.5.8, 3.1.5.9).
            DataTransferHeader h = RawPeer.header(e.peer.receive());
            assertEquals(17, h.creditsGranted());
            assertEquals(0, h.dataLength());
            assertEquals(30, (int) Fixture.get(e.connection.inspect(c -> c.model.credits.receiveCreditTarget)));
            assertEquals(20, (int) Fixture.get(e.connection.inspect(c -> c.model.credits.receiveCredits)));
        }
    }

    /**
     * 3.1.5.9 with ReceiveCreditMax as a ceiling rather than a reservation: the engine starts with
     * {@link Connection#INITIAL_RECEIVE_BUFFERS} receives; a busy peer (the virtual clock stands
     * still) asking for 255 makes it double its receive buffers until it grants the full 255.
     */
    @Test
    void receiveBuffers_growWithThePeersUse_upToReceiveCreditMax() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (Established e = Established.passive(fx, t, engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 255, 1024, 1024, 131072))) {
            int credits = e.response.creditsGranted();
            assertEquals(Receiver.INITIAL_RECEIVE_BUFFERS, credits);
            int peak = credits;
            int sent = 0;
            int grant = 8; // credits for the engine's messages: the raw peer reposts each receive it uses
            while (sent < 2000 && Fixture.get(e.connection.inspect(Connection::receiveBufferCapacity)) < 255) {
                for (; credits > 0; credits--, sent++) {
                    e.peer.send(RawPeer.dataTransfer(255, grant, 0, 0, new byte[] {(byte) sent}));
                    grant = 0;
                }
                credits += RawPeer.header(e.peer.receive()).creditsGranted(); // the engine's grant
                grant = 1;
                peak = Math.max(peak, credits);
            }
            assertEquals(255, (int) Fixture.get(e.connection.inspect(Connection::receiveBufferCapacity)),
                    "receive buffers after " + sent + " messages");
            assertTrue(sent < 1000, "the full window took " + sent + " messages");
            assertTrue(peak > 128, "the peer held at most " + peak + " credits");
        }
    }

    /**
     * The transport's receive buffer budget on the wire: with a budget of 128 and two connections,
     * a busy peer asking for 255 credits is never granted more than 64 (the connection's share,
     * 3.1.5.9 leaving the count to the implementation); once the other connection ends, the share
     * is 128 and the busy connection grows to it.
     */
    @Test
    void receiveBuffers_budgetSharedAmongConnections_peerHoldsNoMoreThanTheShare() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().receiveBufferBudget(128).build(), engineSide);
        byte[] request = RawPeer.negotiateRequest(0x0100, 0x0100, 255, 1024, 1024, 131072);
        try (Established e = Established.passive(fx, t, engineSide, peerSide, upper, request)) {
            int[] credits = {e.response.creditsGranted()};
            Established other = Established.passive(fx, t, engineSide, peerSide, new Recorder(), request);
            try {
                assertEquals(2, t.connectionCount());
                int peak = keepBusy(e, credits);
                assertTrue(peak > 32 && peak <= 64, "the peer held at most " + peak + " credits with two connections");
                assertEquals(64, (int) Fixture.get(e.connection.inspect(Connection::receiveBufferCapacity)));
            } finally {
                other.close();
            }
            Fixture.await(() -> t.connectionCount() == 1 ? Boolean.TRUE : null);
            int peak = keepBusy(e, credits);
            assertTrue(peak > 64 && peak <= 128, "the peer held at most " + peak + " credits once alone");
            assertEquals(128, (int) Fixture.get(e.connection.inspect(Connection::receiveBufferCapacity)));
        }
    }

    /**
     * A busy peer (the virtual clock stands still) asking for 255 credits sends 600 messages, all
     * its credits each round; returns the most credits it held.
     */
    private static int keepBusy(Established e, int[] credits) throws Exception {
        int peak = credits[0];
        int grant = 8; // credits for the engine's messages: the raw peer reposts each receive it uses
        for (int sent = 0; sent < 600; ) {
            for (; credits[0] > 0; credits[0]--, sent++) {
                e.peer.send(RawPeer.dataTransfer(255, grant, 0, 0, new byte[] {(byte) sent}));
                grant = 0;
            }
            credits[0] += RawPeer.header(e.peer.receive()).creditsGranted(); // the engine's grant
            grant = 1;
            peak = Math.max(peak, credits[0]);
        }
        return peak;
    }

    /**
     * The same peer asking for 255 credits, but sending a message every millisecond: the
     * connection keeps its first receive buffers.
     */
    @Test
    void peerWithinReplenishment_connectionKeepsItsInitialReceiveBuffers() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (Established e = Established.passive(fx, t, engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 255, 1024, 1024, 131072))) {
            int credits = e.response.creditsGranted();
            int grant = 8; // credits for the engine's messages, as in the test above
            for (int i = 0; i < 500; i++) {
                e.peer.send(RawPeer.dataTransfer(255, grant, 0, 0, new byte[] {(byte) i}));
                grant = 0;
                credits--;
                upper.message();
                fx.clock.advance(Duration.ofMillis(1));
                if (credits <= Receiver.INITIAL_RECEIVE_BUFFERS / 2) {
                    credits += RawPeer.header(e.peer.receive()).creditsGranted();
                    grant = 1;
                }
            }
            assertEquals(Receiver.INITIAL_RECEIVE_BUFFERS,
                    (int) Fixture.get(e.connection.inspect(Connection::receiveBufferCapacity)));
        }
    }

    /** 3.1.5.8: CreditsGranted adds to SendCredits and restarts a stalled send. */
    @Test
    void receive_creditsGranted_restartsQueuedSends() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (Established e = Established.active(fx, t, peerSide, upper,
                RawPeer.negotiateResponse(0x0100, 10, 1, 0, 1048576, 1024, 1024, 131072))) {
            for (int i = 0; i < 3; i++) {
                e.connection.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            assertNull(e.peer.poll(Duration.ofMillis(50)));
            e.peer.send(RawPeer.dataTransfer(10, 5, 0, 0, new byte[0]));
            for (int i = 0; i < 3; i++) {
                byte[] m = e.peer.receive();
                assertEquals(i, m[24]);
            }
            assertEquals(2, (int) Fixture.until(e.connection, c -> c.model.credits.sendCredits, v -> v == 2));
        }
    }

    /** 3.1.5.9: after consuming receives, the receiver replenishes them; idle peers do not trade credits forever. */
    @Test
    void idlePeers_stopExchangingCreditMessages() throws Exception {
        SmbDirectTransport server = fx.transport(SmbDirectConfig.defaults(), engineSide);
        SmbDirectTransport client = fx.transport(SmbDirectConfig.defaults(), peerSide);
        Recorder serverUpper = new Recorder();
        SmbDirectListener l = server.listen(fx.anyAddress(engineSide), serverUpper);
        SmbDirectConnection c = client.connect(l.localAddress(), upper, Fixture.TIMEOUT);
        SmbDirectConnection s = serverUpper.connection();
        for (int i = 0; i < 300; i++) {
            c.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            s.send(ByteBuffer.wrap(new byte[] {(byte) i}));
        }
        for (int i = 0; i < 300; i++) {
            assertEquals((byte) i, serverUpper.message().data[0]);
            assertEquals((byte) i, upper.message().data[0]);
        }
        long before;
        long after = c.statistics().fragmentsSent() + s.statistics().fragmentsSent();
        do {
            before = after;
            Thread.sleep(50);
            after = c.statistics().fragmentsSent() + s.statistics().fragmentsSent();
        } while (after != before);
        Thread.sleep(200);
        assertEquals(before, c.statistics().fragmentsSent() + s.statistics().fragmentsSent(),
                "no credit-only messages once both sides are idle");
    }

    /**
     * Both engines send as fast as they can, mixed sizes including fragmented messages, long enough
     * to cycle the credits many thousands of times: everything arrives, in order, intact. With one
     * send buffer, the senders wait for a send completion as often as for credits: the messages
     * queued meanwhile behind the waiting ones ({@link Sender#QUEUED_BEHIND}) still all go.
     */
    @ParameterizedTest(name = "{0} send buffers")
    @ValueSource(ints = {32, 1})
    void bidirectional_fullSpeed_neverStalls(int sendBuffers) throws Exception {
        SmbDirectConfig cfg = SmbDirectConfig.builder().receiveCreditMax(32).sendCreditTarget(32)
                .sendBuffers(sendBuffers).build();
        SmbDirectTransport server = fx.transport(cfg, engineSide);
        SmbDirectTransport client = fx.transport(cfg, peerSide);
        ChecksumRecorder atServer = new ChecksumRecorder();
        ChecksumRecorder atClient = new ChecksumRecorder();
        SmbDirectListener l = server.listen(fx.anyAddress(engineSide), atServer);
        SmbDirectConnection c = client.connect(l.localAddress(), atClient, Fixture.TIMEOUT);
        SmbDirectConnection s = atServer.connections.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        int messages = 3000;
        CompletableFuture<long[]> fromClient = CompletableFuture.supplyAsync(() -> pump(c, messages, 1));
        CompletableFuture<long[]> fromServer = CompletableFuture.supplyAsync(() -> pump(s, messages, 2));
        long[] sentByClient = fromClient.get(60, TimeUnit.SECONDS);
        long[] sentByServer = fromServer.get(60, TimeUnit.SECONDS);
        assertArrayEquals(sentByClient, atServer.awaitChecksums(messages));
        assertArrayEquals(sentByServer, atClient.awaitChecksums(messages));
        ConnectionStatistics cs = c.statistics();
        assertTrue(cs.creditsGranted() > 5000, "credits cycled: " + cs.creditsGranted());
        assertTrue(cs.fragmentsSent() > messages, "fragments: " + cs.fragmentsSent());
    }

    /** Sends {@code n} messages of mixed sizes, returning their checksums. */
    private static long[] pump(SmbDirectConnection c, int n, long seed) {
        Random r = new Random(seed);
        long[] sums = new long[n];
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        int max = c.parameters().maxSendSize() - 24;
        for (int i = 0; i < n; i++) {
            int kind = r.nextInt(10);
            int len = kind < 5 ? r.nextInt(64) + 1 : kind < 8 ? max : r.nextInt(65536) + max;
            byte[] data = new byte[len];
            r.nextBytes(data);
            CRC32 crc = new CRC32();
            crc.update(data);
            sums[i] = crc.getValue() ^ ((long) len << 32);
            for (;;) {
                try {
                    pending.add(c.send(ByteBuffer.wrap(data)).toCompletableFuture());
                    break;
                } catch (IllegalStateException full) {
                    pending.get(pending.size() - 1).join();
                }
            }
        }
        CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).join();
        return sums;
    }

    /** Records checksums of delivered messages. */
    private static final class ChecksumRecorder extends RecorderBase {
        private final List<Long> sums = new ArrayList<>();

        @Override
        void record(byte[] data) {
            CRC32 crc = new CRC32();
            crc.update(data);
            synchronized (sums) {
                sums.add(crc.getValue() ^ ((long) data.length << 32));
                sums.notifyAll();
            }
        }

        long[] awaitChecksums(int n) throws InterruptedException {
            long deadline = System.currentTimeMillis() + 60_000;
            synchronized (sums) {
                while (sums.size() < n && System.currentTimeMillis() < deadline) {
                    sums.wait(1000);
                }
                return sums.stream().mapToLong(Long::longValue).toArray();
            }
        }
    }
}
