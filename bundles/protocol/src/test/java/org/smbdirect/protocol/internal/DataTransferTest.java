package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Random;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * Data Transfer messages: sending (MS-SMBD 3.1.5.4, examples 4.2 and 4.3) and receiving
 * (3.1.5.8), on the wire through a raw peer.
 */
class DataTransferTest {
    private static final HexFormat HEX = HexFormat.of();

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

    private Established passive(SmbDirectConfig config) throws Exception {
        return Established.passive(fx, fx.transport(config, engineSide), engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    // ------------------------------------------------------------ 3.1.5.4 sending

    /**
     * Example 4.2: after the initiator's first message (4.1 step 3) the engine answers with 500
     * bytes, requesting 10 credits and granting 1 to replace the receive that message used.
     */
    @Test
    void send_example42_500Bytes_matchesExample() throws Exception {
        byte[] answer = pattern(500, 42);
        upper.onMessage = (c, m) -> c.send(ByteBuffer.wrap(answer));
        try (Established e = passive(NegotiationTest.EXAMPLE_41)) {
            assertEquals(10, e.response.creditsGranted());
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, pattern(120, 1)));
            byte[] m = e.peer.receive();
            assertEquals("0a00" + "0100" + "0000" + "0000" + "00000000" + "18000000" + "f4010000" + "00000000",
                    HEX.formatHex(Arrays.copyOf(m, 24)));
            assertArrayEquals(answer, Arrays.copyOfRange(m, 24, m.length));
            assertEquals(524, m.length);
        }
    }

    /**
     * Example 4.3: 64 KiB to a peer whose MaxReceiveSize is 1024 travels as 65 fragments of 1000
     * bytes and a last one of 536, each requesting 10 credits and granting one; the sender pauses
     * whenever its credits run out, and nothing else is interleaved.
     */
    @Test
    void send_example43_64KiB_as65FragmentsOf1000AndOneOf536() throws Exception {
        SmbDirectTransport t = fx.transport(NegotiationTest.EXAMPLE_41, engineSide);
        // The peer grants a single credit at a time, so every pause is visible.
        try (Established e = Established.active(fx, t, peerSide, upper,
                RawPeer.negotiateResponse(0x0100, 10, 1, 0, 1048576, 1024, 1024, 131072))) {
            // The 500-byte message of 4.2 from the peer, granting one credit.
            e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, pattern(500, 2)));
            upper.message();
            byte[] data = pattern(65536, 43);
            e.connection.send(ByteBuffer.wrap(data));
            ByteArrayOutputStream reassembled = new ByteArrayOutputStream();
            for (int i = 0; i < 66; i++) {
                byte[] m = e.peer.receive();
                DataTransferHeader h = RawPeer.header(m);
                int expectedLength = i < 65 ? 1000 : 536;
                assertEquals(10, h.creditsRequested(), "fragment " + i);
                assertEquals(1, h.creditsGranted(), "fragment " + i);
                assertEquals(0, h.flags(), "fragment " + i);
                assertEquals(65536 - 1000 * i - expectedLength, h.remainingDataLength(), "fragment " + i);
                assertEquals(24, h.dataOffset(), "fragment " + i);
                assertEquals(expectedLength, h.dataLength(), "fragment " + i);
                assertEquals(24 + expectedLength, m.length);
                assertEquals(0, ByteBuffer.wrap(m).getInt(20), "padding is zero");
                reassembled.write(m, 24, expectedLength);
                // The engine has spent its only credit: nothing more until the peer grants one.
                assertTrue(e.peer.poll(java.time.Duration.ofMillis(i == 0 ? 30 : 0)) == null);
                e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, new byte[0]));
            }
            assertArrayEquals(data, reassembled.toByteArray());
            assertEquals(66 + 1, e.connection.statistics().fragmentsSent(), "initial grant + 66 fragments");
        }
    }

    /**
     * 3.1.4.2: an empty upper-layer message is refused at the call with a clear error (the peer
     * would drop it, 3.1.5.8); nothing goes on the wire and the connection stays usable.
     */
    @Test
    void send_emptyMessage_refusedAtCall_connectionUsable() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[8]));
            upper.message();
            IllegalArgumentException x = assertThrows(IllegalArgumentException.class,
                    () -> e.connection.send(ByteBuffer.allocate(0)));
            assertTrue(x.getMessage().contains("empty message"), x.getMessage());
            e.connection.send(ByteBuffer.wrap(new byte[] {7}));
            byte[] m = e.peer.receive();
            DataTransferHeader h = RawPeer.header(m);
            assertEquals(1, h.dataLength(), "the next message is the one-byte one: nothing was sent for the empty one");
        }
    }

    /**
     * 3.1.5.8, leniency for Linux peers before 2026 (the default): a message with DataLength 0 and
     * RemainingDataLength 0 between the fragments of a message carries credits, not data; the
     * sequence goes on and the upper layer gets the whole message once.
     */
    @Test
    void receive_emptyMessageInsideFragmentedSequence_lenientByDefault_sequenceCompletes() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 6, "abcd".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            e.peer.send(RawPeer.dataTransfer(10, 5, 0, 0, new byte[0]));
            e.peer.send(RawPeer.dataTransfer(10, 0, 0, 0, "efghij".getBytes(java.nio.charset.StandardCharsets.US_ASCII)));
            assertEquals("abcdefghij", new String(upper.message().data, java.nio.charset.StandardCharsets.US_ASCII));
            assertTrue(e.connection.isOpen());
        }
    }

    /** 3.1.5.8 read strictly (strictReassembly): the same empty message ends the sequence early and the connection. */
    @Test
    void receive_emptyMessageInsideFragmentedSequence_strict_terminates() throws Exception {
        assertTerminates(SmbDirectConfig.builder().strictReassembly(true).build(), TerminationReason.REASSEMBLY_INCOMPLETE,
                RawPeer.dataTransfer(10, 10, 0, 6, new byte[4]), RawPeer.dataTransfer(10, 0, 0, 0, new byte[0]));
    }

    /** 3.1.4.2 / 3.1.5.4: a message longer than MaxFragmentedSendSize is refused; the connection stays usable. */
    @Test
    void send_overMaxFragmentedSendSize_isRefusedAndConnectionStaysUsable() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[8]));
            upper.message();
            IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                    () -> e.connection.send(ByteBuffer.allocate(131073)));
            assertTrue(ex.getMessage().contains("MaxFragmentedSendSize 131072"), ex.getMessage());
            e.connection.send(ByteBuffer.wrap(new byte[] {1, 2, 3}));
            byte[] m = e.peer.receive();
            assertArrayEquals(new byte[] {1, 2, 3}, Arrays.copyOfRange(m, 24, 27));
            assertTrue(e.connection.isOpen());
        }
    }

    /** 3.1.5.4: a remote token to invalidate goes with exactly one fragment (the first). */
    @Test
    void sendAndInvalidate_tokenTravelsWithExactlyOneFragment() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            MemoryRegion r = e.peer.register(ByteBuffer.allocateDirect(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[8]));
            upper.message();
            e.connection.sendAndInvalidate(ByteBuffer.wrap(pattern(5000, 3)), r.token());
            for (int i = 0; i < 5; i++) {
                e.peer.receive(); // 1000 bytes per fragment with the peer's MaxReceiveSize of 1024
                e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, new byte[0]));
            }
            assertEquals(1, e.peer.invalidations.size());
            assertEquals(r.token(), e.peer.invalidations.get(0)[1]);
            assertFalse(r.isValid());
        }
    }

    // ------------------------------------------------------------ 3.1.5.8 receiving

    /** 3.1.5.8: fragments are reassembled and delivered once, when RemainingDataLength reaches zero. */
    @Test
    void receive_fragments_reassembledIntoOneMessage() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            byte[] data = pattern(2500, 4);
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 1500, Arrays.copyOfRange(data, 0, 1000)));
            e.peer.send(RawPeer.dataTransfer(10, 0, 0, 500, Arrays.copyOfRange(data, 1000, 2000)));
            assertTrue(upper.messages.isEmpty());
            e.peer.send(RawPeer.dataTransfer(10, 0, 0, 0, Arrays.copyOfRange(data, 2000, 2500)));
            assertArrayEquals(data, upper.message().data);
            assertEquals(3, e.connection.statistics().fragmentsReceived());
            assertEquals(1, e.connection.statistics().messagesReceived());
        }
    }

    /** 3.1.5.8: DataLength + RemainingDataLength equal to MaxFragmentedRecvSize is allowed. */
    @Test
    void receive_exactlyMaxFragmentedRecvSize_isAccepted() throws Exception {
        // Sends of nearly 8 KiB: the 17 fragments fit the credits of the first grant, without waiting for more.
        try (Established e = Established.passive(fx, fx.transport(SmbDirectConfig.builder()
                .maxFragmentedRecvSize(131072).build(), engineSide), engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 255, 8136, 1024, 131072))) {
            assertEquals(Receiver.INITIAL_RECEIVE_BUFFERS, e.response.creditsGranted());
            byte[] data = pattern(131072, 5);
            int sent = 0;
            while (sent < data.length) {
                int n = Math.min(8000, data.length - sent);
                e.peer.send(RawPeer.dataTransfer(10, sent == 0 ? 10 : 0, 0, data.length - sent - n,
                        Arrays.copyOfRange(data, sent, sent + n)));
                sent += n;
            }
            assertArrayEquals(data, upper.message().data);
        }
    }

    /** 3.1.5.8: a received token invalidation is passed to the upper layer with the message. */
    @Test
    void receive_invalidatedToken_passedWithTheMessage() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            RegisteredBuffer buf = e.connection.register(ByteBuffer.allocateDirect(8192), RemoteAccess.READ);
            int token = buf.descriptors().get(0).token();
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 1000, pattern(1000, 6)), true, token);
            e.peer.send(RawPeer.dataTransfer(10, 0, 0, 0, pattern(1000, 7)));
            Recorder.Message m = upper.message();
            assertEquals(2000, m.data.length);
            assertEquals(token, m.token.getAsInt());
            assertFalse(buf.isRegistered());
            e.peer.send(RawPeer.dataTransfer(10, 0, 0, 0, pattern(10, 8)));
            assertFalse(upper.message().token.isPresent(), "InvalidatedToken is cleared after delivery");
        }
    }

    /** MS-SMBD 3.1.5.8: each failed check ends the connection with its own reason; others carry on. */
    @Test
    void receive_messageShorterThan20_terminates() throws Exception {
        assertTerminates(TerminationReason.DATA_TRANSFER_TOO_SHORT, new byte[19]);
    }

    @Test
    void receive_creditsRequestedZero_terminates() throws Exception {
        assertTerminates(TerminationReason.DATA_TRANSFER_NO_CREDITS_REQUESTED,
                RawPeer.rawDataTransfer(0, 10, 0, 0, 24, 10, 34));
    }

    @Test
    void receive_dataOffsetNotAligned_terminates() throws Exception {
        assertTerminates(TerminationReason.DATA_OFFSET_NOT_ALIGNED, RawPeer.rawDataTransfer(10, 10, 0, 0, 20, 10, 30));
    }

    @Test
    void receive_dataBeyondMessage_terminates() throws Exception {
        assertTerminates(TerminationReason.DATA_BEYOND_MESSAGE, RawPeer.rawDataTransfer(10, 10, 0, 0, 24, 41, 64));
    }

    @Test
    void receive_dataOffsetPlusLengthOverflowing32Bits_terminates() throws Exception {
        assertTerminates(TerminationReason.DATA_BEYOND_MESSAGE,
                RawPeer.rawDataTransfer(10, 10, 0, 0, 0xFFFFFFF8, 16, 64));
    }

    @Test
    void receive_fragmentedSizeExceeded_terminates() throws Exception {
        assertTerminates(TerminationReason.FRAGMENTED_SIZE_EXCEEDED,
                RawPeer.rawDataTransfer(10, 10, 0, 1048576 - 9, 24, 10, 34));
    }

    @Test
    void receive_finalFragmentBeforeAnnouncedEnd_terminates() throws Exception {
        assertTerminates(TerminationReason.REASSEMBLY_INCOMPLETE, RawPeer.dataTransfer(10, 10, 0, 100, new byte[10]),
                RawPeer.dataTransfer(10, 0, 0, 0, new byte[10]));
    }

    @Test
    void receive_fragmentOverrunningTheSequence_terminates() throws Exception {
        assertTerminates(TerminationReason.REASSEMBLY_OVERRUN, RawPeer.dataTransfer(10, 10, 0, 100, new byte[10]),
                RawPeer.dataTransfer(10, 0, 0, 50, new byte[200]));
    }

    @Test
    void receive_inconsistentRemainingDataLength_terminates() throws Exception {
        assertTerminates(TerminationReason.REASSEMBLY_OVERRUN, RawPeer.dataTransfer(10, 10, 0, 100, new byte[10]),
                RawPeer.dataTransfer(10, 0, 0, 95, new byte[10]));
    }

    @Test
    void receive_sendCreditsBeyond65535_terminates() throws Exception {
        assertTerminates(TerminationReason.SEND_CREDITS_OVERFLOW, RawPeer.dataTransfer(10, 65535, 0, 0, new byte[4]),
                RawPeer.dataTransfer(10, 1, 0, 0, new byte[4]));
    }

    /** Sends the messages on one connection and checks it ends with the reason while a second one works. */
    private void assertTerminates(TerminationReason reason, byte[]... messages) throws Exception {
        assertTerminates(SmbDirectConfig.defaults(), reason, messages);
    }

    private void assertTerminates(SmbDirectConfig config, TerminationReason reason, byte[]... messages) throws Exception {
        SmbDirectTransport t = fx.transport(config, engineSide);
        byte[] request = RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072);
        Recorder otherUpper = new Recorder();
        try (Established victim = Established.passive(fx, t, engineSide, peerSide, upper, request);
                Established bystander = Established.passive(fx, t, engineSide, peerSide, otherUpper, request)) {
            for (byte[] m : messages) {
                victim.peer.send(m);
            }
            ConnectionLoss loss = upper.loss();
            assertEquals(reason, loss.reason(), loss.message());
            assertTrue(loss.message().contains("MS-SMBD 3.1.5.8"), loss.message());
            victim.peer.awaitEnded();
            assertFalse(victim.connection.isOpen());
            assertEquals(0, victim.connection.statistics().registrationsLive());
            // The other connection carries on.
            bystander.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[] {7}));
            assertArrayEquals(new byte[] {7}, otherUpper.message().data);
            assertTrue(bystander.connection.isOpen());
            assertEquals(1L, t.statistics().terminations().get(reason));
        }
    }

    /**
     * 3.1.5.8 (the peer used more credits than it was granted): while the engine cannot send, it
     * posts receives it has not yet granted; a peer that sends into them is cut off.
     */
    @Test
    void receive_sendWithoutCredit_terminates() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().receiveCreditMax(8).build(), engineSide);
        // The peer grants the engine a single credit, which its first message uses up.
        try (Established e = Established.active(fx, t, peerSide, upper,
                RawPeer.negotiateResponse(0x0100, 8, 1, 0, 1048576, 1024, 1024, 131072))) {
            for (int i = 0; i < 8; i++) {
                e.peer.send(RawPeer.dataTransfer(8, 0, 0, 0, new byte[] {(byte) i}));
                upper.message();
            }
            // All 8 granted receives are used; the engine reposted them but cannot grant them.
            Fixture.until(e.connection, c -> c.model.credits.receiveCredits, v -> v > 0);
            assertEquals(0, (int) Fixture.get(e.connection.inspect(c -> c.model.credits.peerCredits)));
            e.peer.send(RawPeer.dataTransfer(8, 0, 0, 0, new byte[] {9}));
            assertEquals(TerminationReason.SEND_WITHOUT_CREDIT, upper.loss().reason());
        }
    }

    /** 3.1.5.8: SMB_DIRECT_RESPONSE_REQUESTED is answered promptly, without requesting a response back. */
    @Test
    void receive_responseRequested_answeredPromptlyWithoutTheFlag() throws Exception {
        try (Established e = passive(SmbDirectConfig.defaults())) {
            e.peer.send(RawPeer.dataTransfer(10, 10, Wire.SMB_DIRECT_RESPONSE_REQUESTED, 0, new byte[0]));
            DataTransferHeader h = RawPeer.header(e.peer.receive());
            assertEquals(0, h.flags());
            assertEquals(1, e.connection.statistics().keepalivesReceived());
            assertTrue(upper.messages.isEmpty(), "an empty message is not delivered");
        }
    }
}
