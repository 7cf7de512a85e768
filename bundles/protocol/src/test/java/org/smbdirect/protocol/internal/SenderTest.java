package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConfig;

/**
 * The sending rules on a recording endpoint: 3.1.5.4's fragments and 3.1.5.1's credits, from a
 * table of cases.
 */
class SenderTest {
    private static final ConnectionHandler IGNORE = (c, m, t) -> { };

    /**
     * Columns: message length, MaxSendSize, SendCredits, ReceiveCreditMax, expected Data Transfer
     * messages posted. The receives the peer asked for (32) are posted and granted already, so
     * the last send credit goes only if a receive can be added to grant (ReceiveCreditMax above 32).
     */
    @ParameterizedTest(name = "{0} B, MaxSendSize {1}, {2} credits, max {3} -> {4} messages")
    @CsvSource({
        "1, 1364, 10, 32, 1",
        "1340, 1364, 10, 32, 1",
        "1341, 1364, 10, 32, 2",
        "65536, 1024, 100, 32, 66",
        "65536, 1024, 10, 32, 9",
        "65536, 1024, 10, 255, 10",
        "500, 1364, 1, 32, 0",
        "500, 1364, 1, 255, 1",
        "500, 1364, 0, 255, 0",
        "131072, 8192, 100, 32, 17",
    })
    void sendingDataTransferMessages_3_1_5_4_and_3_1_5_1(int length, int maxSendSize, int sendCredits, int max,
            int expected) throws RdmaException {
        RuleFixture f = new RuleFixture(SmbDirectConfig.builder().maxSendSize(maxSendSize).receiveCreditMax(max)
                .sendBuffers(1024).build(), 4096, 32, IGNORE);
        f.model.credits.sendCredits = sendCredits;
        byte[] data = new byte[length];
        for (int i = 0; i < length; i++) {
            data[i] = (byte) (i % 251);
        }
        f.send(ByteBuffer.wrap(data));
        List<byte[]> sent = f.ep.sent;
        assertEquals(expected, sent.size(), "Data Transfer messages posted");
        int offset = 0;
        for (byte[] m : sent) {
            DataTransferHeader h = RawPeer.header(m);
            int dataLength = Math.min(length - offset, maxSendSize - 24);
            assertEquals(255, h.creditsRequested(), "SendCreditTarget");
            assertEquals(24, h.dataOffset());
            assertEquals(dataLength, h.dataLength());
            assertEquals(length - offset - dataLength, h.remainingDataLength());
            assertEquals(24 + dataLength, m.length);
            for (int i = 0; i < dataLength; i++) {
                assertEquals((byte) ((offset + i) % 251), m[24 + i]);
            }
            offset += dataLength;
        }
        assertEquals(sendCredits - expected, f.model.credits.sendCredits);
        assertEquals(expected < (length + maxSendSize - 25) / (maxSendSize - 24) ? 1 : 0,
                Math.min(1, f.counters.creditStalls), "a stall is counted when messages wait for credits");
        assertEquals(List.of(), f.ended);
    }

    /**
     * 3.1.5.1 and 3.1.6.2: with nothing queued, SendImmediate sends one empty message of exactly 20
     * bytes (credits, or the answer to a keepalive request), carrying the keepalive flag when one is
     * pending.
     */
    @ParameterizedTest(name = "keepalive pending {0}")
    @CsvSource({"false, 0", "true, 1"})
    void sendImmediate_sendsOneEmptyMessage(boolean keepalive, int flags) throws RdmaException {
        RuleFixture f = new RuleFixture(SmbDirectConfig.defaults(), 4096, 32, IGNORE);
        f.model.credits.sendCredits = 5;
        f.model.sendImmediate = true;
        if (keepalive) {
            f.model.keepaliveRequested = DataModel.KeepaliveRequested.PENDING;
        }
        f.sender.sendUpperLayerMessages(f.ep, f.receiver, f.timers);
        f.sender.sendUpperLayerMessages(f.ep, f.receiver, f.timers);
        assertEquals(1, f.ep.sent.size());
        assertEquals(20, f.ep.sent.get(0).length);
        assertEquals(flags, RawPeer.header(f.ep.sent.get(0)).flags());
        assertEquals(false, f.model.sendImmediate);
    }

    /**
     * 3.1.4.2 with 3.1.5.1: once the sending rules stop, with messages queued, for a send credit,
     * for a send buffer, or at the last credit with nothing to grant, a message queued behind them
     * needs no run of the rules of its own ({@link Sender#QUEUED_BEHIND}): it cannot overtake them,
     * and the completion that ends the wait runs the rules, which send everything in order.
     */
    @ParameterizedTest(name = "waiting for {0}")
    @ValueSource(strings = {"a send credit", "a send buffer", "a credit to grant"})
    void enqueue_behindMessagesWaitingForACompletion_queuedWithoutARun_allSentInOrderAfterIt(String waitingFor)
            throws RdmaException {
        boolean buffer = waitingFor.equals("a send buffer");
        boolean grant = waitingFor.equals("a credit to grant");
        // ReceiveCreditMax 32: every receive the peer asked for is posted and granted already.
        RuleFixture f = new RuleFixture(SmbDirectConfig.builder().receiveCreditMax(grant ? 32 : 255)
                .sendBuffers(buffer ? 1 : 32).build(), 4096, 32, IGNORE);
        f.model.credits.sendCredits = buffer ? 10 : grant ? 1 : 0;
        assertEquals(Sender.QUEUED, enqueue(f, 0), "nothing waits yet");
        runRules(f);
        if (buffer) {
            // The first message took the only send buffer; the second finds none.
            assertEquals(Sender.QUEUED, enqueue(f, 1), "the first message went: nothing waits");
            runRules(f);
        }
        assertEquals(buffer ? 1 : 0, f.ep.sent.size());
        for (int tag = buffer ? 2 : 1; tag < 3; tag++) {
            assertEquals(Sender.QUEUED_BEHIND, enqueue(f, tag));
        }

        // The completion that ends the wait, then the rules, as the connection's thread runs them.
        if (buffer) {
            for (int sent = 1; sent < 3; sent++) {
                f.sender.sendCompleted((SendBuffers.Slot) f.ep.sentContexts.get(sent - 1), RdmaStatus.SUCCESS);
                runRules(f);
            }
        } else {
            // The peer's message: it grants 10 credits, or (granting none) uses a receive to grant.
            byte[] m = RawPeer.dataTransfer(32, grant ? 0 : 10, 0, 0, new byte[] {9});
            ReceiveBuffers.Slot slot = (ReceiveBuffers.Slot) f.ep.takeReceive();
            slot.buffer.put(slot.base, m);
            f.model.credits.receiveCompleted();
            f.receiver.receiveDataTransferMessage(slot, m.length, false, 0);
            if (grant) {
                runRules(f);
                assertEquals(1, f.ep.sent.size(), "the last credit went with the grant");
                f.model.credits.sendCredits = 10; // the peer's next message: credits for the rest
            }
            runRules(f);
        }
        assertEquals(3, f.ep.sent.size());
        for (int i = 0; i < 3; i++) {
            assertEquals(i, f.ep.sent.get(i)[24], "message " + i + " in order");
        }
        assertEquals(Sender.QUEUED, enqueue(f, 3), "the wait is over: a new message runs the rules again");
        assertTrue(f.counters.creditStalls > 0 || buffer);
        assertEquals(List.of(), f.ended);
    }

    private static int enqueue(RuleFixture f, int tag) {
        return f.sender.enqueue(ByteBuffer.wrap(new byte[] {(byte) tag}), null, false, 0,
                new java.util.concurrent.CompletableFuture<>(), null, null, -1);
    }

    private static void runRules(RuleFixture f) {
        f.sender.drainInbox();
        f.sender.sendUpperLayerMessages(f.ep, f.receiver, f.timers);
    }

    /**
     * MS-SMBD 3.1.5.2 / 3.1.5.3: the negotiation message is refused by the provider because its
     * endpoint is still connecting (the peer's message overtook the established event), and the
     * endpoint is connected by the time the engine looks (the provider's thread moved it in
     * between; seen on soft-RoCE): the message goes at once and the connection carries on.
     */
    @Test
    void negotiationMessage_refusedWhileConnecting_connectedBeforeTheLook_postedAtOnce() throws RdmaException {
        RuleFixture f = new RuleFixture(SmbDirectConfig.defaults(), 16, 16, IGNORE);
        f.ep.refuseNextSendThen = EndpointState.CONNECTED;
        assertTrue(f.sender.postNegotiationMessage(f.ep, b -> b.put(new byte[] {1, 2, 3}), 3, null));
        assertEquals(1, f.ep.sent.size(), "posted again, once");
        assertArrayEquals(new byte[] {1, 2, 3}, f.ep.sent.get(0));
        assertEquals(List.of(), f.ended);
    }

    /** Still connecting when the engine looks: the message waits for the established event. */
    @Test
    void negotiationMessage_refusedWhileConnecting_postedWithTheEstablishedEvent() throws RdmaException {
        RuleFixture f = new RuleFixture(SmbDirectConfig.defaults(), 16, 16, IGNORE);
        f.ep.refuseNextSendThen = EndpointState.CONNECTING;
        assertTrue(f.sender.postNegotiationMessage(f.ep, b -> b.put(new byte[] {4, 5}), 2, null));
        assertEquals(0, f.ep.sent.size(), "nothing posted before the established event");
        f.ep.state = EndpointState.CONNECTED;
        f.sender.establishedEventArrived();
        assertEquals(1, f.ep.sent.size());
        assertArrayEquals(new byte[] {4, 5}, f.ep.sent.get(0));
        assertEquals(List.of(), f.ended);
    }

    /** Refused and disconnected meanwhile: the connection ends with the provider's refusal. */
    @Test
    void negotiationMessage_refusedAndDisconnected_endsTheConnection() throws RdmaException {
        RuleFixture f = new RuleFixture(SmbDirectConfig.defaults(), 16, 16, IGNORE);
        f.ep.refuseNextSendThen = EndpointState.DISCONNECTED;
        assertFalse(f.sender.postNegotiationMessage(f.ep, b -> b.put(new byte[] {6}), 1, null));
        assertEquals(0, f.ep.sent.size());
        assertEquals(List.of(org.smbdirect.transport.TerminationReason.TRANSPORT_ERROR), f.ended);
    }
}
