package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.TransportType;
import org.smbdirect.transport.IrdOrdHeaderPolicy;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * The negotiation rules on their own, from tables: MS-SMBD 3.1.5.2, 3.1.5.3, 3.1.5.6, 3.1.5.7 and
 * section 6 (the engine's end-to-end negotiation is {@link NegotiationTest}).
 */
class NegotiatorTest {

    private static DataModel model(DataModel.Role role, SmbDirectConfig config) {
        DataModel m = new DataModel();
        m.initialValues(role, config);
        return m;
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** 3.1.5.2: the request carries the local values of 3.1.4.1. */
    @Test
    void sendingANegotiateRequest_3_1_5_2_carriesTheInitialValues() {
        DataModel m = model(DataModel.Role.ACTIVE, SmbDirectConfig.builder().sendCreditTarget(77).maxSendSize(2048)
                .maxReceiveSize(4096).maxFragmentedRecvSize(262144).build());
        NegotiateRequest r = Negotiator.negotiateRequest(m);
        assertEquals(0x0100, r.minVersion());
        assertEquals(0x0100, r.maxVersion());
        assertEquals(77, r.creditsRequested());
        assertEquals(2048, r.preferredSendSize());
        assertEquals(4096, r.maxReceiveSize());
        assertEquals(262144, r.maxFragmentedSize());
        assertEquals(0, m.maxReadWriteSize, "3.1.4.1: MaxReadWriteSize 0 until the response");
    }

    /**
     * 3.1.5.6: columns: message length, MinVersion, MaxVersion, CreditsRequested, PreferredSendSize,
     * MaxReceiveSize, MaxFragmentedSize, expected reason (empty: accepted), failure response Status
     * (0: none, terminate at once). The local configuration is the default (note 5: limit 8136).
     */
    @ParameterizedTest(name = "[{index}] -> {7}")
    @CsvSource({
        "20, 256, 256, 10, 1364, 1364, 131072, , 0",
        "20, 1, 512, 10, 1364, 1364, 131072, , 0",
        "20, 256, 256, 10, 8136, 128, 131072, , 0",
        "19, 256, 256, 10, 1364, 1364, 131072, NEGOTIATE_REQUEST_TOO_SHORT, 0",
        "20, 512, 512, 10, 1364, 1364, 131072, NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED, -1073741637",
        "20, 1, 255, 10, 1364, 1364, 131072, NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED, -1073741637",
        "20, 256, 256, 0, 1364, 1364, 131072, NEGOTIATE_REQUEST_NO_CREDITS_REQUESTED, 0",
        "20, 256, 256, 10, 1364, 127, 131072, NEGOTIATE_REQUEST_MAX_RECEIVE_SIZE_TOO_SMALL, 0",
        "20, 256, 256, 10, 1364, 1364, 131071, NEGOTIATE_REQUEST_MAX_FRAGMENTED_SIZE_TOO_SMALL, 0",
        "20, 256, 256, 10, 8137, 1364, 131072, NEGOTIATE_REQUEST_PREFERRED_SEND_SIZE_TOO_LARGE, -1073741670",
    })
    void receivingANegotiateRequest_3_1_5_6_table(int length, int min, int max, int credits, int preferred,
            int maxReceive, int maxFragmented, String reason, int status) {
        DataModel m = model(DataModel.Role.PASSIVE, SmbDirectConfig.defaults());
        byte[] req = Arrays.copyOf(RawPeer.negotiateRequest(min, max, credits, preferred, maxReceive, maxFragmented),
                length);
        Negotiator.Outcome o = Negotiator.receiveNegotiateRequest(m, SmbDirectConfig.defaults(), le(req), 0, length);
        if (reason == null) {
            assertTrue(o.isAccepted(), String.valueOf(o.loss));
            assertEquals(Wire.VERSION_1, m.protocol);
            assertEquals(credits, m.credits.receiveCreditTarget);
            assertEquals(Math.min(1364, maxReceive), m.maxSendSize);
            assertEquals(Math.max(Math.min(8192, preferred), 128), m.maxReceiveSize);
            assertEquals(maxFragmented, m.maxFragmentedSendSize);
        } else {
            assertEquals(TerminationReason.valueOf(reason), o.loss.reason());
            assertEquals(status, o.failureStatus);
            assertEquals(0, m.protocol, "nothing negotiated");
        }
    }

    /** 3.1.5.3: the success response grants what was posted and states the local values. */
    @Test
    void sendingANegotiateResponse_3_1_5_3_successAndFailureForms() {
        DataModel m = model(DataModel.Role.PASSIVE, SmbDirectConfig.defaults());
        byte[] req = RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072);
        assertTrue(Negotiator.receiveNegotiateRequest(m, SmbDirectConfig.defaults(), le(req), 0, 20).isAccepted());
        NegotiateResponse r = Negotiator.negotiateResponse(m, 7);
        assertEquals(0x0100, r.negotiatedVersion());
        assertEquals(255, r.creditsRequested());
        assertEquals(7, r.creditsGranted());
        assertEquals(Wire.STATUS_SUCCESS, r.status());
        assertEquals(8388608, r.maxReadWriteSize());
        assertEquals(1024, r.preferredSendSize());
        assertEquals(1024, r.maxReceiveSize());
        assertEquals(1048576, r.maxFragmentedSize());
        NegotiateResponse f = Negotiator.negotiateResponseFailure(Wire.STATUS_NOT_SUPPORTED);
        assertEquals(Wire.STATUS_NOT_SUPPORTED, f.status());
        assertEquals(0, f.creditsGranted() + f.creditsRequested() + f.maxReadWriteSize() + f.preferredSendSize()
                + f.maxReceiveSize() + f.maxFragmentedSize() + f.negotiatedVersion());
    }

    /**
     * 3.1.5.7: columns: length, NegotiatedVersion, CreditsRequested, CreditsGranted, Status,
     * MaxReadWriteSize, PreferredSendSize, MaxReceiveSize, MaxFragmentedSize, expected reason.
     */
    @ParameterizedTest(name = "[{index}] -> {9}")
    @CsvSource({
        "32, 256, 10, 12, 0, 1048576, 1024, 1024, 131072, ",
        "32, 256, 10, 12, 0, 16777216, 8192, 128, 131072, ",
        "31, 256, 10, 12, 0, 1048576, 1024, 1024, 131072, NEGOTIATE_RESPONSE_TOO_SHORT",
        "32, 0, 0, 0, -1073741637, 0, 0, 0, 0, NEGOTIATE_RESPONSE_FAILED_STATUS",
        "32, 512, 10, 12, 0, 1048576, 1024, 1024, 131072, NEGOTIATE_RESPONSE_BAD_VERSION",
        "32, 256, 10, 12, 0, 1048576, 1024, 127, 131072, NEGOTIATE_RESPONSE_MAX_RECEIVE_SIZE_TOO_SMALL",
        "32, 256, 10, 12, 0, 1048576, 1024, 1024, 131071, NEGOTIATE_RESPONSE_MAX_FRAGMENTED_SIZE_TOO_SMALL",
        "32, 256, 10, 0, 0, 1048576, 1024, 1024, 131072, NEGOTIATE_RESPONSE_NO_CREDITS_GRANTED",
        "32, 256, 0, 12, 0, 1048576, 1024, 1024, 131072, NEGOTIATE_RESPONSE_NO_CREDITS_REQUESTED",
        "32, 256, 10, 12, 0, 1048576, 8193, 1024, 131072, NEGOTIATE_RESPONSE_PREFERRED_SEND_SIZE_TOO_LARGE",
    })
    void receivingANegotiateResponse_3_1_5_7_table(int length, int version, int requested, int granted, int status,
            int maxReadWrite, int preferred, int maxReceive, int maxFragmented, String reason) {
        DataModel m = model(DataModel.Role.ACTIVE, SmbDirectConfig.defaults());
        byte[] rsp = Arrays.copyOf(RawPeer.negotiateResponse(version, requested, granted, status, maxReadWrite,
                preferred, maxReceive, maxFragmented), length);
        Negotiator.Outcome o = Negotiator.receiveNegotiateResponse(m, SmbDirectConfig.defaults(), le(rsp), 0, length);
        assertEquals(0, o.failureStatus, "the initiator never answers a response");
        if (reason == null) {
            assertTrue(o.isAccepted(), String.valueOf(o.loss));
            assertEquals(granted, m.credits.sendCredits);
            assertEquals(requested, m.credits.receiveCreditTarget);
            assertEquals(Math.min(8388608, maxReadWrite), m.maxReadWriteSize, "note 6: the local limit bounds it");
            assertEquals(Math.min(1364, maxReceive), m.maxSendSize);
            assertEquals(Math.max(Math.min(8192, preferred), 128), m.maxReceiveSize);
            assertEquals(maxFragmented, m.maxFragmentedSendSize);
        } else {
            assertEquals(TerminationReason.valueOf(reason), o.loss.reason());
            assertEquals(0, m.credits.sendCredits, "nothing negotiated");
        }
    }

    /**
     * Section 6 for the accepting peer. Columns: policy, transport, private data (hex, empty for
     * none), peer IRD, peer ORD (from the connection manager), local IRD, local ORD, expected IRD,
     * expected ORD (-1: refused with IRD_ORD_ZERO), reply header (hex, empty for none).
     */
    @ParameterizedTest(name = "[{index}] {0} {1} {2}")
    @CsvSource({
        // iWARP with a header: answered (6.2), the reply's IRD is the reads this side issues
        "AUTO, IWARP, 0000001000000008, 0, 0, 16, 16, 8, 16, 0000001000000008",
        "AUTO, IWARP, 0000000400000004, 0, 0, 16, 16, 4, 4, 0000000400000004",
        // a reply of zeros is refused (6.2)
        "AUTO, IWARP, 0000000000000001, 0, 0, 16, 16, -1, -1, ",
        // zero padding is no header: the connection manager's values decide
        "AUTO, IWARP, 0000000000000000, 8, 4, 16, 16, 4, 8, ",
        // RoCE: no header by default, whatever the private data (rdma_cm pads it)
        "AUTO, ROCE, 0000001000000008, 8, 0, 16, 16, 0, 8, ",
        "AUTO, ROCE, , 1, 16, 16, 16, 16, 1, ",
        // ALWAYS reads it on RoCE too; NEVER nowhere
        "ALWAYS, ROCE, 0000000200000003, 0, 0, 16, 16, 3, 2, 0000000200000003",
        "NEVER, IWARP, 0000000200000003, 5, 6, 16, 16, 6, 5, ",
    })
    void irdOrdHeader_section6_acceptor(IrdOrdHeaderPolicy policy, TransportType transport, String privateData,
            int peerIrd, int peerOrd, int localIrd, int localOrd, int ird, int ord, String reply) {
        SmbDirectConfig c = SmbDirectConfig.builder().irdOrdHeader(policy).build();
        Negotiator.Acceptance a = Negotiator.accept(c, transport, hex(privateData), peerIrd, peerOrd, localIrd,
                localOrd);
        if (ord < 0) {
            assertEquals(TerminationReason.IRD_ORD_ZERO, a.refusal.reason());
            return;
        }
        assertNull(a.refusal);
        assertEquals(ird, a.depths.ird, "IRD");
        assertEquals(ord, a.depths.ord, "ORD");
        assertArrayEquals(hex(reply), a.replyPrivateData);
    }

    /**
     * Section 6 for the connecting peer once established. Columns: policy, transport, the
     * acceptance's private data, offered IRD, offered ORD, the endpoint's IRD and ORD, expected IRD
     * and ORD (-1: refused).
     */
    @ParameterizedTest(name = "[{index}] {0} {1} {2}")
    @CsvSource({
        // the acceptor's header: serve what was offered, read no more than the smaller value answered
        "AUTO, IWARP, 0000000800000010, 16, 16, 0, 0, 16, 8",
        // Linux answers from its own side: the smaller of the two is right either way
        "AUTO, IWARP, 0000001000000001, 16, 16, 0, 0, 16, 1",
        "AUTO, IWARP, 0000000000000005, 16, 16, 0, 0, -1, -1",
        // no header (RoCE, or padding): the endpoint's depths, already in this side's terms
        "AUTO, ROCE, 0000000800000010, 16, 16, 1, 8, 1, 8",
        "AUTO, IWARP, 0000000000000000, 16, 16, 2, 3, 2, 3",
    })
    void irdOrdHeader_section6_initiator(IrdOrdHeaderPolicy policy, TransportType transport, String privateData,
            int offeredIrd, int offeredOrd, int endpointIrd, int endpointOrd, int ird, int ord) {
        SmbDirectConfig c = SmbDirectConfig.builder().irdOrdHeader(policy).build();
        Negotiator.Acceptance a = Negotiator.established(c, transport, hex(privateData), offeredIrd, offeredOrd,
                endpointIrd, endpointOrd);
        if (ord < 0) {
            assertEquals(TerminationReason.IRD_ORD_ZERO, a.refusal.reason());
            return;
        }
        assertEquals(ird, a.depths.ird, "IRD");
        assertEquals(ord, a.depths.ord, "ORD");
    }

    /** 6.1: the request's private data: the header on iWARP by default, none on RoCE. */
    @Test
    void irdOrdHeader_6_1_requestPrivateData() {
        SmbDirectConfig c = SmbDirectConfig.defaults();
        assertArrayEquals(new IrdOrdHeader(16, 8).toPrivateData(),
                Negotiator.requestPrivateData(c, TransportType.IWARP, 16, 8));
        assertNull(Negotiator.requestPrivateData(c, TransportType.ROCE, 16, 8));
        assertNull(Negotiator.requestPrivateData(c, TransportType.INFINIBAND, 16, 8));
    }

    private static byte[] hex(String s) {
        if (s == null) {
            return null;
        }
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return b;
    }
}
