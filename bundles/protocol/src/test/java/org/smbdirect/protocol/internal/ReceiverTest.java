package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.HeldMessage;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.TerminationReason;

/**
 * The receiving rules on a recording endpoint: the receive buffers and the receive queue's depth,
 * 3.1.5.9's posting rule, 3.1.5.8's delivery, and messages the upper layer holds.
 */
class ReceiverTest {
    private final List<ByteBuffer> delivered = new ArrayList<>();
    private final HeldMessage[] lastHeld = new HeldMessage[1];
    private boolean holdAll;
    private RuleFixture f;
    private Receiver receiver;
    private DataModel model;
    private FakeEndpoint ep;
    private List<TerminationReason> ended;

    /** An established receiver whose peer asks for {@code target} credits. */
    private Receiver receiver(int receiveCreditMax, int receiveDepth, int target) throws RdmaException {
        f = new RuleFixture(SmbDirectConfig.builder().receiveCreditMax(receiveCreditMax).maxReceiveSize(256).build(),
                receiveDepth, target, new ConnectionHandler() {
                    @Override
                    public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt token) {
                        delivered.add(message);
                        if (holdAll) {
                            lastHeld[0] = receiver.hold();
                        }
                    }
                });
        receiver = f.receiver;
        model = f.model;
        ep = f.ep;
        ended = f.ended;
        return receiver;
    }

    private boolean arrive(int creditsRequested, byte[] data) {
        return f.arrive(RawPeer.dataTransfer(creditsRequested, 0, 0, 0, data));
    }

    /**
     * The receive buffers never outnumber the receive queue's depth (fixed when the endpoint is
     * created), however busy the peer and whatever ReceiveCreditMax says. Columns: ReceiveCreditMax,
     * receive queue depth, the peer's CreditsRequested, expected buffers after a busy peer.
     */
    @ParameterizedTest(name = "max {0}, depth {1}, requested {2} -> {3} buffers")
    @CsvSource({
        "255, 4096, 255, 255",
        "255, 40, 255, 40",
        "255, 16, 255, 16",
        "100, 255, 255, 100",
        "255, 255, 64, 64",
        "1, 255, 255, 1",
    })
    void receiveBuffers_neverBeyondTheReceiveQueueDepth(int receiveCreditMax, int depth, int requested, int expected)
            throws RdmaException {
        receiver(receiveCreditMax, depth, requested);
        assertEquals(Math.min(Receiver.INITIAL_RECEIVE_BUFFERS, Math.min(receiveCreditMax, depth)), receiver.capacity());
        for (int i = 0; i < 2000 && ended.isEmpty(); i++) {
            assertTrue(arrive(requested, new byte[] {(byte) i}), "a receive is posted for the peer's credit");
            assertTrue(ep.receives.size() <= depth, "posted " + ep.receives.size() + " beyond the depth " + depth);
        }
        assertEquals(List.of(), ended, "no post was refused");
        assertEquals(expected, receiver.capacity());
        assertEquals(Math.min(receiveCreditMax, depth), Receiver.maxReceiveBuffers(receiveCreditMax, depth));
    }

    /**
     * The transport's receive buffer budget, shared among its connections: a busy peer's
     * connection grows to its share (the budget divided by the connections) and no further, never
     * below the first 32, never beyond ReceiveCreditMax; the peer is granted no more credits than
     * that (3.1.5.9 leaves how many receives to post to the implementation). Columns: budget, the
     * transport's connections, ReceiveCreditMax, the connection's share (2147483647: no bound),
     * expected buffers after a busy peer asking for 255.
     */
    @ParameterizedTest(name = "budget {0}, {1} connections, max {2} -> share {3}, {4} buffers")
    @CsvSource({
        "4096, 1, 255, 4096, 255",
        "4096, 16, 255, 256, 255",
        "4096, 64, 255, 64, 64",
        "4096, 100, 255, 40, 40",
        "4096, 1000, 255, 32, 32",
        "4096, 64, 50, 64, 50",
        "0, 1000, 255, 2147483647, 255",
    })
    void receiveBuffers_growToTheirShareOfTheBudget(int budget, int connections, int receiveCreditMax, int share,
            int expected) throws RdmaException {
        f = new RuleFixture(SmbDirectConfig.builder().receiveCreditMax(receiveCreditMax).receiveBufferBudget(budget)
                .maxReceiveSize(256).build(), 4096, 255, ConnectionHandler.nonBlocking((c, m, t) -> { }));
        f.connections = connections;
        int posted = 0;
        for (int i = 0; i < 2000; i++) {
            assertTrue(f.arrive(RawPeer.dataTransfer(255, 0, 0, 0, new byte[] {(byte) i})), "a receive is posted");
            posted = Math.max(posted, f.ep.receives.size());
        }
        assertEquals(List.of(), f.ended);
        assertEquals(expected, f.receiver.capacity());
        assertEquals(expected, posted, "the most receives posted at once (credits the peer could hold)");
        assertEquals(share, Receiver.receiveBufferShare(budget, connections));
    }

    /**
     * MS-SMBD 3.1.5.9's MUST on a connection that mostly sends: its peer sends nothing but credits,
     * a few at a time, so every buffer is posted whenever the last send credit comes with a message
     * queued. Each round (20 ms apart) the peer's credits arrive, the sends before the last credit
     * post what is free, and then the MUST posts at least one receive. Once the buffers reach the
     * budget's share, one is kept back for the MUST instead of a new one each round; below it (or
     * without a budget) the MUST adds one each round. Columns: budget, the transport's
     * connections, expected buffers after 200 rounds.
     */
    @ParameterizedTest(name = "budget {0}, {1} connections -> {2} buffers")
    @CsvSource({
        "160, 4, 41",
        "4096, 64, 65",
        "4096, 1, 232",
        "0, 64, 232",
    })
    void manageCreditsPriorToSending_lastSendCreditEveryBufferPosted_buffersStopOnePastTheShare(int budget,
            int connections, int expected) throws RdmaException {
        f = new RuleFixture(SmbDirectConfig.builder().receiveBufferBudget(budget).maxReceiveSize(256).build(), 4096, 255,
                ConnectionHandler.nonBlocking((c, m, t) -> { }));
        f.connections = connections;
        CreditLedger credits = f.model.credits;
        for (int round = 0; round < 200; round++) {
            f.clock.advance(Duration.ofMillis(20)); // the peer's few messages do not make it a busy one
            assertTrue(f.arrive(RawPeer.dataTransfer(255, 8, 0, 0, new byte[0])), "the peer's credits land in a receive");
            credits.sendCredits = 8;
            f.receiver.manageCreditsPriorToSending(true, true);
            credits.granted(credits.grantable());
            credits.sendCredits = 1;
            int before = credits.receiveCredits;
            assertTrue(f.receiver.manageCreditsPriorToSending(true, true) >= 1, "the MUST posts a receive");
            assertTrue(credits.grantable() >= 1 && credits.receiveCredits > before, "and the last credit grants it");
            credits.granted(credits.grantable());
        }
        assertEquals(expected, f.receiver.capacity());
        assertEquals(List.of(), f.ended);
    }

    /** When connections end, the share grows, and a busy connection grows with it. */
    @Test
    void receiveBuffers_growAgainWhenOtherConnectionsEnd() throws RdmaException {
        f = new RuleFixture(SmbDirectConfig.builder().receiveBufferBudget(4096).maxReceiveSize(256).build(), 4096, 255,
                ConnectionHandler.nonBlocking((c, m, t) -> { }));
        f.connections = 64;
        for (int i = 0; i < 1000; i++) {
            f.arrive(RawPeer.dataTransfer(255, 0, 0, 0, new byte[] {(byte) i}));
        }
        assertEquals(64, f.receiver.capacity());
        f.connections = 16;
        for (int i = 0; i < 1000; i++) {
            f.arrive(RawPeer.dataTransfer(255, 0, 0, 0, new byte[] {(byte) i}));
        }
        assertEquals(255, f.receiver.capacity());
        assertEquals(List.of(), f.ended);
    }

    /**
     * MS-SMBD 3.1.5.9's MUST: with ReceiveCredits zero, or SendCredits one and a message queued,
     * at least one receive is allocated and posted, even when every buffer is held by the upper
     * layer; only ReceiveCreditMax (and the receive depth) stop it. Columns: ReceiveCreditMax, the
     * peer's CreditsRequested, receives posted once every buffer is held (the receive path), and
     * after the send path's rule with SendCredits one.
     */
    @ParameterizedTest(name = "max {0}, requested {1} -> {2}, then {3}")
    @CsvSource({
        "255, 32, 1, 2",
        "33, 32, 1, 1",
        "32, 32, 0, 0",
    })
    void manageCreditsPriorToSending_allBuffersHeld_stillPostsOne(int receiveCreditMax, int requested,
            int afterHolding, int afterSendRule) throws RdmaException {
        receiver(receiveCreditMax, 4096, requested);
        holdAll = true;
        for (int i = 0; i < 32; i++) {
            assertTrue(arrive(requested, new byte[] {1}));
        }
        assertEquals(32, receiver.held());
        assertEquals(0, receiver.free());
        assertEquals(afterHolding, model.credits.receiveCredits, "ReceiveCredits zero: one allocated and posted");
        model.credits.sendCredits = 1;
        receiver.manageCreditsPriorToSending(true, true);
        assertEquals(afterSendRule, model.credits.receiveCredits, "SendCredits one, a message queued");
        assertEquals(32 + afterSendRule, receiver.capacity());
        assertEquals(List.of(), ended);
    }

    /** Held messages keep their bytes; on release their buffers are posted again and the credits return. */
    @Test
    void heldMessages_releasedLater_creditsReturn() throws RdmaException {
        receiver(32, 4096, 32);
        holdAll = true;
        List<HeldMessage> held = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            assertTrue(arrive(32, new byte[] {(byte) i, 43}));
            held.add(lastHeld[0]);
        }
        holdAll = false;
        assertEquals(12, model.credits.receiveCredits, "20 buffers held, not posted again");
        for (int i = 0; i < 12; i++) {
            assertTrue(arrive(32, new byte[] {7, 7}));
        }
        for (int i = 0; i < 20; i++) {
            ByteBuffer m = held.get(i).message();
            assertEquals(2, m.remaining());
            assertEquals(i, m.get(m.position()), "the held bytes were not overwritten");
        }
        for (HeldMessage h : held) {
            h.release();
            h.release();
        }
        assertEquals(0, receiver.held());
        assertEquals(32, model.credits.receiveCredits, "every buffer posted again, each once");
        assertThrows(IllegalStateException.class, receiver::hold, "only during a delivery");
    }
}
