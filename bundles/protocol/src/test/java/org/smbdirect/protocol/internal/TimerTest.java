package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/** The Idle Connection Timer and keepalives: MS-SMBD 3.1.5.1, 3.1.5.5, 3.1.6.2, on the virtual clock. */
class TimerTest {
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

    private Established established() throws Exception {
        Established e = Established.passive(fx, fx.transport(SmbDirectConfig.defaults(), engineSide), engineSide,
                peerSide, upper, RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
        e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[] {1}));
        upper.message();
        return e;
    }

    /** 3.1.6.2 and 3.1.5.1: after 120 idle seconds a message with SMB_DIRECT_RESPONSE_REQUESTED goes out. */
    @Test
    void idleTimer_120Seconds_sendsKeepaliveWithResponseRequested() throws Exception {
        try (Established e = established()) {
            fx.clock.advance(Duration.ofSeconds(119));
            assertNull(e.peer.poll(Duration.ofMillis(50)));
            fx.clock.advance(Duration.ofSeconds(1));
            DataTransferHeader h = RawPeer.header(e.peer.receive());
            assertEquals(Wire.SMB_DIRECT_RESPONSE_REQUESTED, h.flags());
            assertEquals(0, h.dataLength());
            assertEquals(DataModel.KeepaliveRequested.SENT,
                    Fixture.get(e.connection.inspect(c -> c.model.keepaliveRequested)));
            assertEquals(1, e.connection.statistics().keepalivesSent());
        }
    }

    /** 3.1.6.2: no answer within the keepalive response timeout (5 s) terminates the connection. */
    @Test
    void keepalive_unanswered_terminatesAfterFiveSeconds() throws Exception {
        try (Established e = established()) {
            fx.clock.advance(Duration.ofSeconds(120));
            e.peer.receive();
            fx.clock.advance(Duration.ofMillis(4900));
            assertFalse(e.peer.isEnded());
            fx.clock.advance(Duration.ofMillis(100));
            ConnectionLoss loss = upper.loss();
            assertEquals(TerminationReason.KEEPALIVE_TIMEOUT, loss.reason());
            e.peer.awaitEnded();
        }
    }

    /** 3.1.5.5: any message resets KeepaliveRequested to NONE and retriggers the timer. */
    @Test
    void keepalive_answered_keepsTheConnection() throws Exception {
        try (Established e = established()) {
            for (int round = 0; round < 3; round++) {
                // 120 s after the last message from the peer (10 s of the next interval already passed).
                fx.clock.advance(Duration.ofSeconds(round == 0 ? 120 : 110));
                assertEquals(Wire.SMB_DIRECT_RESPONSE_REQUESTED, RawPeer.header(e.peer.receive()).flags());
                fx.clock.advance(Duration.ofSeconds(2));
                long answeredAt = fx.clock.nanoTime();
                e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, new byte[0]));
                assertEquals(DataModel.KeepaliveRequested.NONE, Fixture.until(e.connection,
                        c -> c.model.keepaliveRequested, v -> v == DataModel.KeepaliveRequested.NONE));
                assertEquals(round + 1, e.connection.statistics().keepalivesSent());
                assertEquals(round + 1, e.connection.statistics().keepalivesAnswered(), "the answer is counted");
                fx.clock.advance(Duration.ofSeconds(10));
                assertTrue(e.connection.isOpen());
                // The keepalive's 5 s check fell due in that advance; the connection moves it to 120 s
                // after the answer on its own thread. The clock moves on only after it has, or the
                // next advance could pass the new deadline before the check is there to fall due.
                long deadline = answeredAt + Duration.ofSeconds(120).toNanos();
                Fixture.until(e.connection, c -> c.timers.idleCheckAt(), at -> at == deadline);
            }
        }
    }

    /** 3.1.5.5: traffic keeps the Idle Connection Timer from expiring. */
    @Test
    void traffic_retriggersIdleTimer() throws Exception {
        try (Established e = established()) {
            for (int i = 0; i < 5; i++) {
                fx.clock.advance(Duration.ofSeconds(100));
                e.peer.send(RawPeer.dataTransfer(10, 0, 0, 0, new byte[] {2}));
                upper.message();
            }
            // Credit grants may flow back; none of them asks for a response.
            byte[] m;
            while ((m = e.peer.poll(Duration.ofMillis(50))) != null) {
                assertEquals(0, RawPeer.header(m).flags(), "no keepalive while traffic flows");
            }
            assertEquals(0, e.connection.statistics().keepalivesSent());
            assertEquals(0, e.connection.statistics().keepalivesAnswered(), "a message is an answer only to a keepalive");
        }
    }

    /** Keepalives can be disabled with an interval of zero. */
    @Test
    void keepaliveIntervalZero_sendsNoKeepalive() throws Exception {
        try (Established e = Established.passive(fx, fx.transport(
                SmbDirectConfig.builder().keepaliveIntervalSeconds(0).build(), engineSide), engineSide, peerSide,
                upper, RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072))) {
            fx.clock.advance(Duration.ofHours(2));
            assertNull(e.peer.poll(Duration.ofMillis(50)));
            assertTrue(e.connection.isOpen());
        }
    }
}
