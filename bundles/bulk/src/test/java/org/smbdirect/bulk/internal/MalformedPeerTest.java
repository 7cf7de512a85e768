package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;

/**
 * A peer that breaks the session protocol (a raw SMB Direct connection sending what it likes)
 * ends the connection with a readable reason; nothing is thrown into the engine, nothing leaks,
 * other sessions carry on.
 */
class MalformedPeerTest {
    private static final Hello HELLO = new Hello(true, 2, 1 << 20, 8 << 20, 4);
    private static final BufferDescriptorV1 D = new BufferDescriptorV1(0x1000, 0x1234, 1000);
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    @Test
    void garbageBeforeHello_connectionClosed_noSessionSurfaces() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), BulkFixture.side(), null)) {
            Session pending = peer.bulk.bulk.sessions().iterator().next();
            peer.sendLast(ByteBuffer.wrap(new byte[] {1, 2, 3}));
            assertEquals(TerminationReason.PEER_DISCONNECTED, peer.awaitLoss().reason());
            assertNull(peer.session);
            awaitSessionEnded(peer.bulk.bulk, pending);
        }
    }

    @Test
    void silentPeer_helloTimeout_connectionClosed() throws Exception {
        BulkFixture.Side bulkSide = BulkFixture.side();
        bulkSide.helloTimeout = Duration.ofMillis(200);
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), bulkSide, null)) {
            Session pending = peer.bulk.bulk.sessions().iterator().next();
            assertEquals(TerminationReason.PEER_DISCONNECTED, peer.awaitLoss().reason());
            awaitSessionEnded(peer.bulk.bulk, pending);
        }
    }

    @Test
    void listenerAnswersGarbage_connectFailsWithTheReason() throws Exception {
        BulkFixture.End raw = fx.end(BulkFixture.side());
        BulkFixture.End bulk = fx.end(BulkFixture.side());
        SmbDirectListener l = raw.transport.listen(raw.anyAddress(), c -> {
            c.send(ControlMessage.encode(Type.DATA, 0, 1, 1, List.of(), ByteBuffer.allocate(1)));
            return new RawBulkPeer();
        });
        try {
            CompletionStage<BulkSession> opening = bulk.bulk.connect(l.localAddress(), new BulkFixture.Received());
            ConnectionLostException e = assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(opening));
            assertEquals(TerminationReason.LOCAL_CLOSE, e.loss().reason());
            assertTrue(e.loss().detail().contains("DATA before the peer's HELLO"), e.loss().detail());
            SmbDirectException sync = assertThrows(SmbDirectException.class,
                    () -> bulk.bulk.connect(l.localAddress(), new BulkFixture.Received(), BulkFixture.TIMEOUT));
            assertTrue(sync.getMessage().contains("HELLO"), sync.getMessage());
        } finally {
            l.close();
        }
    }

    /** Each message, sent after a valid HELLO, and the reason the session gives. */
    static List<Object[]> violations() {
        return List.of(
                new Object[] {"garbage", bytes(0x7F, 0, 0, 0), "shorter than the 24-byte header"},
                new Object[] {"unknown type", header(0x7F, 1), "unknown control message type 0x7F"},
                new Object[] {"second HELLO", ControlMessage.hello(HELLO), "a second HELLO"},
                new Object[] {"sequence skips", data(2), "DATA with Sequence 2, expected 1"},
                new Object[] {"sequence zero", data(0), "Sequence 0, must not be 0"},
                new Object[] {"TARGET for nothing", ControlMessage.encode(Type.TARGET, 0, 1, 1000, List.of(D), null),
                        "TARGET for send 1, which is not in transfer"},
                new Object[] {"COMPLETE for nothing", ControlMessage.signal(Type.COMPLETE, 5, false),
                        "COMPLETE for send 5, which is not in transfer"},
                new Object[] {"sender's COMPLETE for nothing", ControlMessage.signal(Type.COMPLETE, 1, true),
                        "COMPLETE from the sender for send 1, for which no transfer is open"},
                new Object[] {"NOBUFS for nothing", ControlMessage.signal(Type.NOBUFS, 3, false),
                        "NOBUFS for send 3, which is not in transfer"},
                new Object[] {"above MaxMessageSize", ControlMessage.encode(Type.WRITE_REQUEST, 0, 1, 5_000_000,
                        List.of(), ByteBuffer.allocate(10)), "exceeds the MaxMessageSize 4000000"},
                new Object[] {"descriptor sum wrong", ControlMessage.encode(Type.READ_REQUEST, 0, 1, 2000, List.of(D),
                        ByteBuffer.allocate(10)), "descriptors cover 1000 bytes, expected 1990"});
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("violations")
    void afterHello_violation_endsTheSessionWithTheReason(String name, ByteBuffer message, String reason)
            throws Exception {
        BulkFixture.Side bulkSide = BulkFixture.side().bulk(BulkConfig.builder().maxMessageSize(4_000_000).build());
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), bulkSide, HELLO)) {
            peer.sendLast(message);
            ConnectionLoss loss = peer.received.loss();
            assertEquals(TerminationReason.LOCAL_CLOSE, loss.reason());
            assertTrue(loss.detail().startsWith("the peer broke the bulk session protocol: "), loss.detail());
            assertTrue(loss.detail().contains(reason), loss.detail());
            assertTrue(loss.message().contains(reason), "readable: " + loss.message());
            assertEquals(TerminationReason.PEER_DISCONNECTED, peer.awaitLoss().reason());
            assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(peer.session.send(ByteBuffer.allocate(1))));
            assertTrue(peer.received.data.isEmpty());
        }
    }

    @Test
    void readRequest_whenThisSideAnnouncedItCannotRead_isAViolation() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), BulkFixture.side().sim("rdmaRead", false),
                HELLO)) {
            peer.sendLast(ControlMessage.encode(Type.READ_REQUEST, 0, 1, 1010, List.of(D), ByteBuffer.allocate(10)));
            assertTrue(peer.received.loss().detail().contains("announced it cannot RDMA Read"));
        }
    }

    @Test
    void moreTransfersThanAnnounced_orBeyondTheWindow_isAViolation() throws Exception {
        // HELLO announced 2 transfers in flight; this side moves one at a time, so two queue.
        BulkFixture.Side bulkSide = BulkFixture.side().bulk(BulkConfig.builder().maxInFlight(1).build());
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side().sim("rdmaRead", false), bulkSide,
                new Hello(false, 2, 1 << 20, 8 << 20, 64))) {
            for (int seq = 1; seq <= 3; seq++) {
                peer.sendLast(ControlMessage.encode(Type.WRITE_REQUEST, 0, seq, 5000, List.of(), ByteBuffer.allocate(10)));
            }
            assertEquals(1, peer.expect(Type.TARGET).sequence);
            String detail = peer.received.loss().detail();
            assertTrue(detail.contains("WRITE_REQUEST 3 while 2 transfers are open, the peer announced at most 2"),
                    detail);
            assertEquals(0, peer.session.connection().statistics().registrationsLive());
        }
        // The window: this side announced maxQueuedSends 2; a send 2 past the oldest incomplete one is too far.
        BulkFixture.Side windowed = BulkFixture.side().bulk(BulkConfig.builder().maxQueuedSends(2).build());
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), windowed,
                new Hello(false, 4, 1 << 20, 8 << 20, 64))) {
            peer.send(ControlMessage.encode(Type.WRITE_REQUEST, 0, 1, 5000, List.of(), ByteBuffer.allocate(10)));
            peer.data(2, ByteBuffer.allocate(1));
            peer.sendLast(ControlMessage.encode(Type.DATA, 0, 3, 1, List.of(), ByteBuffer.allocate(1)));
            String detail = peer.received.loss().detail();
            assertTrue(detail.contains("DATA 3 beyond the receive window of 2 sends past send 1"), detail);
        }
    }

    /** The bulk side sends; the peer answers with a message that does not fit: the send fails with the reason. */
    @Test
    void wrongAnswerToOurTransfer_pendingSendFails_registrationReleased() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.listening(fx, BulkFixture.side(), BulkFixture.side())) {
            CompletionStage<Void> send = peer.session.send(BulkFixture.data(100_000, 1, true));
            ControlMessage request = peer.expect(Type.READ_REQUEST);
            assertEquals(1, peer.session.connection().statistics().registrationsLive());
            // TARGET belongs to the WRITE path
            peer.sendLast(ControlMessage.encode(Type.TARGET, 0, request.sequence, request.rdmaLength(),
                    List.of(new BufferDescriptorV1(0, 1, request.rdmaLength())), null));
            ConnectionLostException e = assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(send));
            assertTrue(e.loss().detail().contains("TARGET for send 1, which awaits none (AWAIT_COMPLETE)"),
                    e.loss().detail());
            assertEquals(0, peer.session.connection().statistics().registrationsLive());
            assertEquals(e.loss(), peer.received.loss());
        }
    }

    /** A misbehaving peer on one connection does not disturb a session on another. */
    @Test
    void otherSessionsCarryOn() throws Exception {
        BulkFixture.Pair good = fx.pair(BulkFixture.side(), BulkFixture.side());
        try (RawBulkPeer peer = RawBulkPeer.connecting(fx, BulkFixture.side(), BulkFixture.side(), HELLO)) {
            // the bad peer talks to a listener of its own; the good pair shares nothing but the fabric
            peer.sendLast(header(0x99, 1));
            peer.received.loss();
        }
        ByteBuffer d = BulkFixture.data(2 * BulkFixture.MIB, 5, true);
        good.client.sendAndWait(d, BulkFixture.TIMEOUT);
        assertEquals(BulkFixture.crc(d), BulkFixture.crc(good.atServer.next()));
    }

    /** The one session the bulk side has (not surfaced: the peer never said HELLO) ends, and is forgotten. */
    private static void awaitSessionEnded(BulkTransferImpl bulk, Session pending) throws Exception {
        BulkFixture.get(pending.ended());
        assertTrue(bulk.sessions().isEmpty(), "sessions left: " + bulk.sessions());
    }

    private static ByteBuffer bytes(int... b) {
        ByteBuffer out = ByteBuffer.allocate(b.length);
        for (int x : b) {
            out.put((byte) x);
        }
        return out.flip();
    }

    private static ByteBuffer header(int type, long sequence) {
        ByteBuffer b = ControlMessage.signal(Type.COMPLETE, sequence, false);
        b.put(0, (byte) type);
        return b;
    }

    private static ByteBuffer data(long sequence) {
        ByteBuffer b = ControlMessage.encode(Type.DATA, 0, Math.max(sequence, 1), 1, List.of(), ByteBuffer.allocate(1));
        b.order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(8, sequence);
        return b;
    }
}
