package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.IrdOrdHeaderPolicy;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;

/**
 * Negotiation in both roles: MS-SMBD 3.1.4.1, 3.1.5.2, 3.1.5.3, 3.1.5.6, 3.1.5.7, 3.1.6.1,
 * 3.1.7.2, section 6 and example 4.1, checked on the wire through a raw peer.
 */
class NegotiationTest {
    private static final HexFormat HEX = HexFormat.of();
    /** The values of example 4.1. */
    static final SmbDirectConfig EXAMPLE_41 = SmbDirectConfig.builder().receiveCreditMax(10).sendCreditTarget(10)
            .maxSendSize(1024).maxReceiveSize(1024).maxFragmentedRecvSize(131072).maxReadWriteSize(1048576).build();

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

    private SmbDirectListener listen(SmbDirectTransport t) throws Exception {
        return t.listen(fx.anyAddress(engineSide), upper);
    }

    private RawPeer rawPeerTo(SmbDirectListener l) throws Exception {
        return RawPeer.connect(peerSide, l.localAddress(), new IrdOrdHeader(4, 4).toPrivateData(), 8);
    }

    // ------------------------------------------------------------ passive: 3.1.5.6, 3.1.5.3

    /** Example 4.1, steps 1 and 2: the response to the example's request, byte for byte. */
    @Test
    void negotiateRequest_example41_responseMatchesExampleBytes() throws Exception {
        SmbDirectTransport t = fx.transport(EXAMPLE_41, engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
            byte[] rsp = peer.receive();
            assertEquals("0001" + "0001" + "0001" + "0000" + "0a00" + "0a00" + "00000000" + "00001000"
                    + "00040000" + "00040000" + "00000200", HEX.formatHex(rsp));
            ConnectionParameters p = upper.connection().parameters();
            assertEquals(1024, p.maxSendSize());
            assertEquals(1024, p.maxReceiveSize());
            assertEquals(131072, p.maxFragmentedSendSize());
            assertEquals(1048576, p.maxReadWriteSize());
            assertEquals(0x0100, p.protocolVersion());
            assertFalse(p.initiator());
        }
    }

    /** 3.1.5.6: a range without 0x0100 gets a failure response with STATUS_NOT_SUPPORTED (3.1.5.3). */
    @Test
    void negotiateRequest_versionRangeWithout0100_failsWithStatusNotSupported() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0200, 0x0300, 10, 1024, 1024, 131072));
            byte[] rsp = peer.receive();
            assertEquals("0001" + "0001" + "0000" + "0000" + "0000" + "0000" + "bb0000c0" + "00000000" + "00000000"
                    + "00000000" + "00000000", HEX.formatHex(rsp));
            peer.awaitEnded();
            Fixture.awaitTermination(t, TerminationReason.NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED);
            assertTrue(upper.accepted.isEmpty(), "a failed negotiation is not indicated to the upper layer");
        }
    }

    /** 3.1.5.6: otherwise MinVersion and MaxVersion are ignored. */
    @Test
    void negotiateRequest_versionRangeIncluding0100_isAccepted() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0001, 0x0300, 10, 1024, 1024, 131072));
            NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
            assertEquals(0, rsp.status());
            assertEquals(0x0100, rsp.negotiatedVersion());
            upper.connection();
        }
    }

    /** 3.1.5.6: every check that terminates without a response, each with its own reason. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "NEGOTIATE_REQUEST_TOO_SHORT, 19, 10, 1024, 131072",
        "NEGOTIATE_REQUEST_NO_CREDITS_REQUESTED, 20, 0, 1024, 131072",
        "NEGOTIATE_REQUEST_MAX_RECEIVE_SIZE_TOO_SMALL, 20, 10, 127, 131072",
        "NEGOTIATE_REQUEST_MAX_FRAGMENTED_SIZE_TOO_SMALL, 20, 10, 1024, 131071"})
    void negotiateRequest_invalid_terminates(TerminationReason reason, int length, int credits, int maxReceive,
            int maxFragmented) throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            byte[] req = RawPeer.negotiateRequest(0x0100, 0x0100, credits, 1024, maxReceive, maxFragmented);
            peer.send(java.util.Arrays.copyOf(req, length));
            peer.awaitEnded();
            Fixture.awaitTermination(t, reason);
            assertEquals(0, peer.queued(), "no response is sent");
            assertEquals(1, t.statistics().connectionsFailed());
        }
    }

    /** 3.1.5.6: the limits are inclusive: MaxReceiveSize 128 and MaxFragmentedSize 131072 are accepted. */
    @Test
    void negotiateRequest_minimumSizes_areAccepted() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 1, 128, 128, 131072));
            NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
            assertEquals(0, rsp.status());
            assertEquals(1, rsp.creditsGranted(), "ReceiveCreditTarget is the CreditsRequested of 1");
            assertEquals(128, rsp.preferredSendSize(), "MaxSendSize = min(1364, MaxReceiveSize 128)");
            assertEquals(128, rsp.maxReceiveSize(), "MaxReceiveSize = min(8192, PreferredSendSize 128)");
            assertEquals(131072, upper.connection().parameters().maxFragmentedSendSize());
        }
    }

    /** 3.1.5.6: a PreferredSendSize below 128 still leaves Connection.MaxReceiveSize at 128. */
    @Test
    void negotiateRequest_tinyPreferredSendSize_maxReceiveSizeIs128() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 5, 64, 1024, 131072));
            NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
            assertEquals(128, rsp.maxReceiveSize());
        }
    }

    /** Note 5 (Windows product behaviour, the default): PreferredSendSize above 8136 fails. */
    @Test
    void negotiateRequest_preferredSendSizeAbove8136_failsWithInsufficientResources() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 8137, 1024, 131072));
            NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
            assertEquals(Wire.STATUS_INSUFFICIENT_RESOURCES, rsp.status());
            assertEquals(0, rsp.creditsGranted());
            peer.awaitEnded();
            Fixture.awaitTermination(t, TerminationReason.NEGOTIATE_REQUEST_PREFERRED_SEND_SIZE_TOO_LARGE);
        }
    }

    /** With the note-5 limit off, the SHOULD of 3.1.5.6 applies: MaxReceiveSize = min(local, PreferredSendSize). */
    @Test
    void negotiateRequest_noPreferredSendSizeLimit_takesSmallerSize() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().preferredSendSizeLimit(0).build(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 9000, 1024, 131072));
            NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
            assertEquals(0, rsp.status());
            assertEquals(8192, rsp.maxReceiveSize());
        }
    }

    /**
     * 3.1.5.6: "If the resulting Connection.ReceiveCredits is zero, the receiver MUST generate a
     * Negotiate Response failure message" (3.1.5.3) with an error status. The engine's provider
     * fails every second registration: the first (the negotiation receive) succeeds, the receive
     * buffers of 3.1.5.9 (the second) cannot be registered, the send buffer (the third) can.
     */
    @Test
    void negotiateRequest_receiveCreditsZero_sendsFailureResponseAndTerminates() throws Exception {
        RdmaProvider failing = fx.provider(Map.of("faults.registrationFailureEvery", 2));
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), failing);
        SmbDirectListener l = t.listen(fx.anyAddress(failing), upper);
        try (RawPeer peer = RawPeer.connect(peerSide, l.localAddress(), new IrdOrdHeader(4, 4).toPrivateData(), 8)) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
            byte[] rsp = peer.receive();
            // MinVersion, MaxVersion 0x0100; Status STATUS_INSUFFICIENT_RESOURCES (0xC000009A,
            // severity error); every other field zero (3.1.5.3).
            assertEquals("0001" + "0001" + "0000" + "0000" + "0000" + "0000" + "9a0000c0" + "00000000" + "00000000"
                    + "00000000" + "00000000", HEX.formatHex(rsp));
            assertEquals(3, NegotiateResponse.decode(ByteBuffer.wrap(rsp)).status() >>> 30, "STATUS_SEVERITY_ERROR");
            peer.awaitEnded();
            Fixture.awaitTermination(t, TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS);
            assertEquals(0, peer.queued(), "nothing follows the failure response");
            assertTrue(upper.accepted.isEmpty(), "a failed negotiation is not indicated to the upper layer");
            assertEquals(1, t.statistics().connectionsFailed());
            assertEquals(0, t.statistics().connectionsEstablished());
        }
    }

    /** 3.1.7.2 and 3.1.6.1: the listener's Negotiation Timer is 5 seconds. */
    @Test
    void passiveNegotiationTimer_fiveSecondsWithoutRequest_terminates() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer peer = rawPeerTo(listen(t))) {
            Fixture.await(() -> fx.clock.pending() > 0 ? Boolean.TRUE : null);
            fx.clock.advance(Duration.ofMillis(4900));
            assertTrue(peer.poll(Duration.ofMillis(50)) == null && !peer.isEnded(), "still waiting at 4.9 s");
            fx.clock.advance(Duration.ofMillis(100));
            peer.awaitEnded();
            Fixture.awaitTermination(t, TerminationReason.NEGOTIATION_TIMEOUT);
        }
    }

    // ------------------------------------------------------------ active: 3.1.4.1, 3.1.5.2, 3.1.5.7

    /** Example 4.1, steps 1 and 3: the request, then the first Data Transfer message granting 10 credits. */
    @Test
    void connect_example41_requestAndFirstMessageMatchExample() throws Exception {
        SmbDirectTransport t = fx.transport(EXAMPLE_41, engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            byte[] smb2Negotiate = new byte[100];
            java.util.Arrays.fill(smb2Negotiate, (byte) 0x5a);
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            // Sent from the completion, so it is the first Data Transfer message (4.1 step 3).
            f.thenAccept(c -> c.send(ByteBuffer.wrap(smb2Negotiate)));
            try (RawPeer peer = acceptor.next()) {
                assertEquals("0001" + "0001" + "0000" + "0a00" + "00040000" + "00040000" + "00000200",
                        HEX.formatHex(peer.receive()));
                peer.send(RawPeer.negotiateResponse(0x0100, 10, 10, 0, 1048576, 1024, 1024, 131072));
                SmbDirectConnection c = Fixture.get(f);
                byte[] first = peer.receive();
                assertEquals("0a00" + "0a00" + "0000" + "0000" + "00000000" + "18000000" + "64000000" + "00000000",
                        HEX.formatHex(java.util.Arrays.copyOf(first, 24)));
                assertArrayEquals(smb2Negotiate, java.util.Arrays.copyOfRange(first, 24, first.length));
                assertTrue(c.parameters().initiator());
            }
        }
    }

    /** 3.1.5.7: every check of the response fails the connect with its own reason. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "NEGOTIATE_RESPONSE_TOO_SHORT, 31, 256, 10, 10, 0, 1024, 1024, 131072",
        "NEGOTIATE_RESPONSE_FAILED_STATUS, 32, 256, 10, 10, -1073741637, 1024, 1024, 131072",
        "NEGOTIATE_RESPONSE_BAD_VERSION, 32, 512, 10, 10, 0, 1024, 1024, 131072",
        "NEGOTIATE_RESPONSE_MAX_RECEIVE_SIZE_TOO_SMALL, 32, 256, 10, 10, 0, 1024, 127, 131072",
        "NEGOTIATE_RESPONSE_MAX_FRAGMENTED_SIZE_TOO_SMALL, 32, 256, 10, 10, 0, 1024, 1024, 131071",
        "NEGOTIATE_RESPONSE_NO_CREDITS_GRANTED, 32, 256, 10, 0, 0, 1024, 1024, 131072",
        "NEGOTIATE_RESPONSE_NO_CREDITS_REQUESTED, 32, 256, 0, 10, 0, 1024, 1024, 131072",
        "NEGOTIATE_RESPONSE_PREFERRED_SEND_SIZE_TOO_LARGE, 32, 256, 10, 10, 0, 8193, 1024, 131072"})
    void negotiateResponse_invalid_failsConnect(TerminationReason reason, int length, int version, int requested,
            int granted, int status, int preferredSend, int maxReceive, int maxFragmented) throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            try (RawPeer peer = acceptor.next()) {
                peer.receive();
                byte[] rsp = RawPeer.negotiateResponse(version, requested, granted, status, 1048576, preferredSend,
                        maxReceive, maxFragmented);
                peer.send(java.util.Arrays.copyOf(rsp, length));
                ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
                ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class, e.getCause());
                assertEquals(reason, lost.loss().reason());
                peer.awaitEnded();
            }
        }
    }

    /** 3.1.5.7: the Connection's values after a successful response. */
    @Test
    void negotiateResponse_setsConnectionValues() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            try (RawPeer peer = acceptor.next()) {
                NegotiateRequest req = NegotiateRequest.decode(ByteBuffer.wrap(peer.receive()));
                assertEquals(255, req.creditsRequested());
                assertEquals(1364, req.preferredSendSize());
                assertEquals(8192, req.maxReceiveSize());
                assertEquals(1048576, req.maxFragmentedSize());
                peer.send(RawPeer.negotiateResponse(0x0100, 7, 3, 0, 16 << 20, 512, 700, 131072));
                ConnectionHandle c = Fixture.impl(Fixture.get(f));
                ConnectionParameters p = c.parameters();
                assertEquals(700, p.maxSendSize(), "min(1364, MaxReceiveSize 700)");
                assertEquals(512, p.maxReceiveSize(), "min(8192, PreferredSendSize 512)");
                assertEquals(8 << 20, p.maxReadWriteSize(), "min(8 MiB, 16 MiB)");
                assertEquals(131072, p.maxFragmentedSendSize());
                assertEquals(7, (int) Fixture.get(c.inspect(x -> x.model.credits.receiveCreditTarget)));
                // The first Data Transfer message spends one of the 3 credits and grants our 7 receives.
                DataTransferHeader first = RawPeer.header(peer.receive());
                assertEquals(7, first.creditsGranted());
                assertEquals(2, (int) Fixture.until(c, x -> x.model.credits.sendCredits, v -> v == 2));
            }
        }
    }

    /** 3.1.5.7: the limits are inclusive. */
    @Test
    void negotiateResponse_minimumSizes_areAccepted() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            try (RawPeer peer = acceptor.next()) {
                peer.receive();
                peer.send(RawPeer.negotiateResponse(0x0100, 1, 1, 0, 0, 128, 128, 131072));
                SmbDirectConnection c = Fixture.get(f);
                assertEquals(128, c.parameters().maxSendSize());
                assertEquals(0, c.parameters().maxReadWriteSize());
            }
        }
    }

    /**
     * 3.1.5.7: "If the resulting Connection.ReceiveCredits is zero, the receiver MUST terminate the
     * connection and return a failure status to the caller of section 3.1.4.1." The engine's
     * provider fails every third registration: the negotiation receive and the send buffer of the
     * Negotiate Request succeed, the receive buffers of 3.1.5.9 cannot be registered.
     */
    @Test
    void negotiateResponse_receiveCreditsZero_terminatesAndFailsConnect() throws Exception {
        RdmaProvider failing = fx.provider(Map.of("faults.registrationFailureEvery", 3));
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), failing);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            try (RawPeer peer = acceptor.next()) {
                NegotiateRequest.decode(ByteBuffer.wrap(peer.receive()));
                peer.send(RawPeer.negotiateResponse(0x0100, 10, 10, 0, 1048576, 1024, 1024, 131072));
                ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
                ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class, e.getCause());
                assertEquals(TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, lost.loss().reason());
                peer.awaitEnded();
                assertEquals(0, peer.queued(), "no Data Transfer message was sent");
                Fixture.awaitTermination(t, TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS);
                assertEquals(1, t.statistics().connectionsFailed());
                assertTrue(upper.losses.isEmpty(), "the caller learns of it through the connect, not as a loss");
            }
        }
    }

    /** 3.1.4.1 and 3.1.6.1: the initiator's Negotiation Timer is 120 seconds. */
    @Test
    void activeNegotiationTimer_120SecondsWithoutResponse_failsConnect() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
            try (RawPeer peer = acceptor.next()) {
                peer.receive();
                fx.clock.advance(Duration.ofSeconds(119));
                assertFalse(f.isDone());
                fx.clock.advance(Duration.ofSeconds(1));
                ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
                assertEquals(TerminationReason.NEGOTIATION_TIMEOUT,
                        ((ConnectionLostException) e.getCause()).loss().reason());
                peer.awaitEnded();
            }
        }
    }

    /** 3.1.4.1: a failed connection request is returned to the upper layer. */
    @Test
    void connect_nobodyListening_failsWithConnectFailed() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        CompletableFuture<SmbDirectConnection> f = t.connect(
                new java.net.InetSocketAddress(peerSide.addresses().get(0), 4444), upper).toCompletableFuture();
        ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
        assertEquals(TerminationReason.CONNECT_FAILED, ((ConnectionLostException) e.getCause()).loss().reason());
    }

    /**
     * 3.1.4.1: a request to the other transport's port (5445 from RoCE, the sim's transport here) is
     * returned with the provider's reason and what the port means (Linux's ksmbd takes RoCE on 445 only).
     */
    @Test
    void connect_otherTransportsPort_refused_theLossNamesThePort() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        CompletableFuture<SmbDirectConnection> f = t.connect(
                new java.net.InetSocketAddress(peerSide.addresses().get(0), 5445), upper).toCompletableFuture();
        ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
        org.smbdirect.transport.ConnectionLoss loss = ((ConnectionLostException) e.getCause()).loss();
        assertEquals(TerminationReason.CONNECT_FAILED, loss.reason());
        assertTrue(loss.message().contains("nobody listens") && loss.message().contains("port 5445 is SMB Direct's port "
                + "for iWARP, and RoCE uses 445"), loss.message());
    }

    /**
     * A connection reset at each step of the listener's negotiation in turn (the sim's
     * {@code faults.disconnectAfterOperations}) ends cleanly: the engine releases the connection and
     * has no internal error. (The fuzzer found a reset landing between the Negotiate Request's
     * arrival and the posting of the receives of 3.1.5.9, a window this sweep cannot aim at; its
     * inputs {@code crash-negotiation-after-posting-failed*} replay it.)
     */
    @Test
    void negotiation_connectionResetAtEachStep_endsCleanly() throws Exception {
        for (int step = 1; step <= 8; step++) {
            try (Fixture f = new Fixture()) {
                RdmaProvider faulty = f.provider(java.util.Map.of("faults.disconnectAfterOperations", step));
                RdmaProvider peer = f.provider();
                SmbDirectTransport t = f.transport(SmbDirectConfig.defaults(), faulty);
                SmbDirectListener l = t.listen(f.anyAddress(faulty), upper);
                RawPeer raw;
                try {
                    raw = RawPeer.connect(peer, l.localAddress(), null, 8);
                } catch (AssertionError refused) {
                    assertEquals(0, t.internalErrors(), "step " + step);
                    continue;
                }
                try (RawPeer p = raw) {
                    try {
                        p.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
                    } catch (org.smbdirect.rdma.RdmaException gone) {
                        // reset before the request could be sent
                    }
                    // Either the reset ends the connection or, past the negotiation's operations,
                    // the response arrives; closing then ends it normally.
                    Fixture.await(() -> p.isEnded() || p.queued() > 0 ? Boolean.TRUE : null);
                }
                Fixture.await(() -> t.connectionCount() == 0 ? Boolean.TRUE : null);
                assertEquals(0, t.internalErrors(), "step " + step);
            }
        }
    }

    // ------------------------------------------------------------ section 6

    /** 6.1: where the header is in use (ALWAYS here, on RoCE) the initiator leads its private data with it. */
    @Test
    void connect_sendsIrdOrdHeader() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().irdOrdHeader(IrdOrdHeaderPolicy.ALWAYS).ird(3)
                .ord(2).build(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            t.connect(acceptor.address(), upper);
            acceptor.next().close();
            byte[] pd = acceptor.requestPrivateData.take();
            assertEquals(56, pd.length, "RoCE pads a request's private data to 56 bytes");
            IrdOrdHeader h = IrdOrdHeader.fromPrivateData(pd);
            assertEquals(3, h.ird());
            assertEquals(2, h.ord());
        }
    }

    /** 6.1 on iWARP, by default (AUTO): the header is sent, and arrives as exactly 8 bytes. */
    @Test
    void connect_onIwarp_sendsIrdOrdHeaderByDefault() throws Exception {
        RdmaProvider engineIwarp = fx.provider(Map.of("transport", "iWARP"));
        RdmaProvider peerIwarp = fx.provider(Map.of("transport", "iWARP"));
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().ird(3).ord(2).build(), engineIwarp);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerIwarp, fx.anyAddress(peerIwarp), 8, null)) {
            t.connect(acceptor.address(), upper);
            acceptor.next().close();
            byte[] pd = acceptor.requestPrivateData.take();
            assertEquals(8, pd.length);
            IrdOrdHeader h = IrdOrdHeader.fromPrivateData(pd);
            assertEquals(3, h.ird());
            assertEquals(2, h.ord());
        }
    }

    /**
     * 6.1 on RoCE, by default (AUTO): no header, as Windows and Linux; the peer sees only the
     * connection manager's zero padding.
     */
    @Test
    void connect_onRoce_sendsNoIrdOrdHeaderByDefault() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), engineSide);
        try (RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 8, null)) {
            t.connect(acceptor.address(), upper);
            acceptor.next().close();
            byte[] pd = acceptor.requestPrivateData.take();
            assertArrayEquals(new byte[56], pd);
        }
    }

    /** 6.2: the accepting peer answers the header with min(own ORD, IRD) and min(own IRD, ORD). */
    @Test
    void accept_answersIrdOrdHeader() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().irdOrdHeader(IrdOrdHeaderPolicy.ALWAYS).ird(6)
                .ord(5).build(), engineSide);
        SmbDirectListener l = listen(t);
        try (RawPeer peer = RawPeer.connect(peerSide, l.localAddress(), new IrdOrdHeader(8, 2).toPrivateData(), 8)) {
            byte[] pd = peer.endpoint.peerPrivateData();
            assertEquals(196, pd.length, "RoCE pads an acceptance's private data to 196 bytes");
            IrdOrdHeader answer = IrdOrdHeader.fromPrivateData(pd);
            assertEquals(5, answer.ird(), "min(accepting ORD 5, requested IRD 8)");
            assertEquals(2, answer.ord(), "min(accepting IRD 6, requested ORD 2)");
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
            peer.receive();
            ConnectionParameters p = upper.connection().parameters();
            assertEquals(5, p.ord(), "the acceptor issues as many reads as the requester serves, within its ORD");
            assertEquals(2, p.ird(), "the acceptor serves as many reads as the requester issues, within its IRD");
        }
    }

    /** 6.2: with the header in use, a zero IRD or ORD rejects the connection. */
    @Test
    void accept_zeroIrdOrd_rejectsConnection() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().irdOrdHeader(IrdOrdHeaderPolicy.ALWAYS).build(),
                engineSide);
        SmbDirectListener l = listen(t);
        AssertionError e = assertThrows(AssertionError.class,
                () -> RawPeer.connect(peerSide, l.localAddress(), new IrdOrdHeader(0, 4).toPrivateData(), 8));
        assertTrue(e.getMessage().contains("CONNECTION_REFUSED"), e.getMessage());
        Fixture.awaitTermination(t, TerminationReason.IRD_ORD_ZERO);
    }

    /**
     * 6.2 "if present": on RoCE the Linux client sends no header and rdma_cm delivers 56 zero
     * bytes. They are padding, not a header of zeros: the connection is accepted with the
     * connection manager's values (this ended every Linux connection with IRD_ORD_ZERO).
     */
    @Test
    void accept_onRoce_zeroPaddedPrivateData_isNoHeader_connectionAccepted() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().irdOrdHeader(IrdOrdHeaderPolicy.ALWAYS).build(),
                engineSide);
        SmbDirectListener l = listen(t);
        try (RawPeer peer = RawPeer.connect(peerSide, l.localAddress(), null, 8)) {
            assertArrayEquals(new byte[196], peer.endpoint.peerPrivateData(), "no header in the answer either");
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
            assertEquals(32, peer.receive().length, "Negotiate Response");
        }
    }

    /**
     * Section 6 with the connection manager's values, as a Linux client connects: initiator depth
     * 0 (it never reads), responder resources 16. The engine's own RDMA Reads use its whole ORD,
     * not the smaller of its IRD and ORD (which made a server read one operation at a time).
     */
    @Test
    void accept_linuxClientInitiatorDepthZero_engineReadsWithItsFullOrd() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().ird(8).ord(8).build(), engineSide);
        SmbDirectListener l = listen(t);
        try (RawPeer peer = RawPeer.connect(peerSide, l.localAddress(), null, 8, 16, 0)) {
            peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
            peer.receive();
            ConnectionHandle c = (ConnectionHandle) upper.connection();
            ConnectionParameters p = c.parameters();
            assertEquals(8, p.ord(), "min(own ORD 8, the client's IRD 16)");
            assertEquals(0, p.ird(), "the client issues no reads");
            assertEquals(8, c.inspect(x -> x.ordLimit()).get());
        }
    }

    /** 6.2 on iWARP by default: the acceptor reads and answers the header; the answer is exactly 8 bytes. */
    @Test
    void accept_onIwarp_answersHeaderByDefault() throws Exception {
        RdmaProvider engineIwarp = fx.provider(Map.of("transport", "iWARP"));
        RdmaProvider peerIwarp = fx.provider(Map.of("transport", "iWARP"));
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().ird(6).ord(5).build(), engineIwarp);
        SmbDirectListener l = t.listen(fx.anyAddress(engineIwarp), upper);
        try (RawPeer peer = RawPeer.connect(peerIwarp, l.localAddress(), new IrdOrdHeader(32, 1).toPrivateData(), 8)) {
            byte[] pd = peer.endpoint.peerPrivateData();
            assertEquals(8, pd.length);
            IrdOrdHeader answer = IrdOrdHeader.fromPrivateData(pd);
            assertEquals(5, answer.ird());
            assertEquals(1, answer.ord());
        }
    }

    /** NEVER: private data is ignored even where it would be a valid header. */
    @Test
    void accept_policyNever_ignoresHeader_answersNone() throws Exception {
        RdmaProvider engineIwarp = fx.provider(Map.of("transport", "iWARP"));
        RdmaProvider peerIwarp = fx.provider(Map.of("transport", "iWARP"));
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().irdOrdHeader(IrdOrdHeaderPolicy.NEVER).build(),
                engineIwarp);
        SmbDirectListener l = t.listen(fx.anyAddress(engineIwarp), upper);
        try (RawPeer peer = RawPeer.connect(peerIwarp, l.localAddress(), new IrdOrdHeader(0, 0).toPrivateData(), 8)) {
            assertEquals(0, peer.endpoint.peerPrivateData().length);
        }
    }
}
