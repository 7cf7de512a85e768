package org.smbdirect.protocol.wire.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;

import org.junit.jupiter.api.Test;

/** Byte-exact encodings of MS-SMBD sections 2.2.1-2.2.3 and 6.1, with the values of section 4. */
class WireCodecTest {
    private static final HexFormat HEX = HexFormat.of();

    private static byte[] bytes(ByteBuffer b, int n) {
        byte[] out = new byte[n];
        b.get(0, out);
        return out;
    }

    /** MS-SMBD 2.2.1 with the values of 4.1 step 1. */
    @Test
    void negotiateRequest_example41_encodesTwentyLittleEndianBytes() {
        ByteBuffer b = ByteBuffer.allocate(64);
        new NegotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072).encode(b);
        assertEquals(20, b.position());
        assertEquals("0001" + "0001" + "0000" + "0a00" + "00040000" + "00040000" + "00000200",
                HEX.formatHex(bytes(b, 20)));
    }

    @Test
    void negotiateRequest_decode_readsFieldsAndIgnoresReserved() {
        ByteBuffer b = ByteBuffer.wrap(HEX.parseHex("0001" + "0001" + "ffff" + "ff00" + "54050000" + "00200000"
                + "00001000"));
        NegotiateRequest r = NegotiateRequest.decode(b);
        assertEquals(0x0100, r.minVersion());
        assertEquals(0x0100, r.maxVersion());
        assertEquals(255, r.creditsRequested());
        assertEquals(1364, r.preferredSendSize());
        assertEquals(8192, r.maxReceiveSize());
        assertEquals(1048576, r.maxFragmentedSize());
    }

    @Test
    void negotiateRequest_decodeShort_throws() {
        assertThrows(IllegalArgumentException.class, () -> NegotiateRequest.decode(ByteBuffer.allocate(19)));
    }

    /** MS-SMBD 2.2.2 with the values of 4.1 step 2. */
    @Test
    void negotiateResponse_example41_encodesThirtyTwoLittleEndianBytes() {
        ByteBuffer b = ByteBuffer.allocate(64);
        new NegotiateResponse(0x0100, 0x0100, 0x0100, 10, 10, 0, 1048576, 1024, 1024, 131072).encode(b);
        assertEquals(32, b.position());
        assertEquals("0001" + "0001" + "0001" + "0000" + "0a00" + "0a00" + "00000000" + "00001000" + "00040000"
                + "00040000" + "00000200", HEX.formatHex(bytes(b, 32)));
    }

    /** MS-SMBD 3.1.5.3: a failure response has every field but the versions and Status set to zero. */
    @Test
    void negotiateResponse_failure_isZeroButVersionsAndStatus() {
        ByteBuffer b = ByteBuffer.allocate(32);
        NegotiateResponse.failure(Wire.STATUS_NOT_SUPPORTED).encode(b);
        assertEquals("0001" + "0001" + "0000" + "0000" + "0000" + "0000" + "bb0000c0" + "00000000" + "00000000"
                + "00000000" + "00000000", HEX.formatHex(bytes(b, 32)));
    }

    @Test
    void negotiateResponse_decode_roundTrips() {
        ByteBuffer b = ByteBuffer.allocate(32);
        NegotiateResponse in = new NegotiateResponse(1, 2, 3, 4, 5, 0xC000009A, 7, 8, 9, 10);
        in.encode(b);
        NegotiateResponse out = NegotiateResponse.decode(b.flip());
        assertEquals(in.toString(), out.toString());
        assertEquals(0xC000009A, out.status());
    }

    /** MS-SMBD 2.2.3 and 3.1.5.4 with the values of 4.2: DataOffset 24 and 4 bytes of zero padding. */
    @Test
    void dataTransfer_example42_hasDataOffset24AndZeroPadding() {
        ByteBuffer b = ByteBuffer.allocate(600).order(ByteOrder.LITTLE_ENDIAN);
        b.put(20, (byte) 0x55).put(21, (byte) 0x55).put(22, (byte) 0x55).put(23, (byte) 0x55);
        int total = DataTransferHeader.encode(b, 0, 10, 1, 0, 0, 500);
        assertEquals(524, total);
        assertEquals("0a00" + "0100" + "0000" + "0000" + "00000000" + "18000000" + "f4010000" + "00000000",
                HEX.formatHex(bytes(b, 24)));
    }

    /** MS-SMBD 3.1.5.4: an empty message is exactly 20 bytes with DataOffset and DataLength 0. */
    @Test
    void dataTransfer_empty_isExactlyTwentyBytes() {
        ByteBuffer b = ByteBuffer.allocate(32);
        int total = DataTransferHeader.encode(b, 0, 255, 3, Wire.SMB_DIRECT_RESPONSE_REQUESTED, 0, 0);
        assertEquals(20, total);
        assertEquals("ff00" + "0300" + "0100" + "0000" + "00000000" + "00000000" + "00000000",
                HEX.formatHex(bytes(b, 20)));
    }

    @Test
    void dataTransfer_decode_worksInEitherBufferByteOrder() {
        for (ByteOrder order : new ByteOrder[] {ByteOrder.BIG_ENDIAN, ByteOrder.LITTLE_ENDIAN}) {
            ByteBuffer b = ByteBuffer.allocate(64).order(order);
            DataTransferHeader.encode(b, 8, 10, 1, 0, 64536, 1000);
            DataTransferHeader h = new DataTransferHeader().decode(b, 8, 56);
            assertEquals(10, h.creditsRequested());
            assertEquals(1, h.creditsGranted());
            assertEquals(64536, h.remainingDataLength());
            assertEquals(24, h.dataOffset());
            assertEquals(1000, h.dataLength());
        }
    }

    @Test
    void dataTransfer_decodeShorterThanHeader_throws() {
        assertThrows(IllegalArgumentException.class, () -> new DataTransferHeader().decode(ByteBuffer.allocate(40), 0, 19));
        assertThrows(IllegalArgumentException.class, () -> new DataTransferHeader().decode(ByteBuffer.allocate(30), 20, 20));
    }

    /** MS-SMBD 6.1: IRD then ORD, 4 bytes each, in network byte order as interoperating peers send them. */
    @Test
    void irdOrdHeader_encodesEightBytesNetworkOrder() {
        assertArrayEquals(HEX.parseHex("00000010" + "00000008"), new IrdOrdHeader(16, 8).toPrivateData());
        IrdOrdHeader h = IrdOrdHeader.fromPrivateData(HEX.parseHex("00000004" + "00000002" + "ffff"));
        assertEquals(4, h.ird());
        assertEquals(2, h.ord());
        assertNull(IrdOrdHeader.fromPrivateData(new byte[7]));
        assertNull(IrdOrdHeader.fromPrivateData(null));
    }

    /** MS-SMBD 6.2: IRD = min(accepting ORD, requested IRD); ORD = min(accepting IRD, requested ORD). */
    @Test
    void irdOrdHeader_reply_followsSection62() {
        IrdOrdHeader reply = IrdOrdHeader.reply(new IrdOrdHeader(8, 4), 16, 2);
        assertEquals(2, reply.ird());
        assertEquals(4, reply.ord());
        assertTrue(reply.isValid());
        assertFalse(IrdOrdHeader.reply(new IrdOrdHeader(0, 4), 16, 16).isValid());
    }

    @Test
    void statusName_namesKnownStatuses() {
        assertEquals("0xC00000BB (STATUS_NOT_SUPPORTED)", Wire.statusName(Wire.STATUS_NOT_SUPPORTED));
        assertEquals("0x12345678", Wire.statusName(0x12345678));
    }
}
