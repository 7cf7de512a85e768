package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.util.List;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.rdma.RdmaException;
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
}
