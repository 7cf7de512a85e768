package org.smbdirect.protocol.wire.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

import org.smbdirect.transport.BufferDescriptorV1;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes every wire decoder of the protocol bundle (MS-SMBD 2.2.1, 2.2.2, 2.2.3, 2.2.3.1, 6.1).
 * The first input byte chooses the decoder, the rest is its input. Properties: a decoder either
 * refuses input shorter than its structure with {@link IllegalArgumentException} or decodes it,
 * and encoding what it decoded gives back the same bytes (Reserved fields excepted, which the
 * encoder writes as zero).
 *
 * <p>In the normal build this runs on the committed seeds ({@code WireDecoderFuzzTestInputs}); with
 * {@code JAZZER_FUZZ=1} it fuzzes (see docs/testing.md for the CI-sized and the long run).
 */
class WireDecoderFuzzTest {

    @FuzzTest(maxDuration = "40s")
    void decoders(byte[] input) {
        fuzzerTestOneInput(input);
    }

    /**
     * The fuzz target, also for Jazzer's standalone runner.
     *
     * @param input the fuzzer's bytes
     */
    public static void fuzzerTestOneInput(byte[] input) {
        if (input.length == 0) {
            return;
        }
        byte[] body = Arrays.copyOfRange(input, 1, input.length);
        switch (Math.floorMod(input[0], 6)) {
            case 0:
                negotiateRequest(body);
                break;
            case 1:
                negotiateResponse(body);
                break;
            case 2:
                dataTransfer(body);
                break;
            case 3:
                bufferDescriptor(body);
                break;
            case 4:
                descriptorArray(body);
                break;
            default:
                irdOrd(body);
        }
    }

    private static void negotiateRequest(byte[] b) {
        try {
            NegotiateRequest r = NegotiateRequest.decode(ByteBuffer.wrap(b));
            byte[] again = r.encode(ByteBuffer.allocate(NegotiateRequest.SIZE)).array();
            byte[] expected = Arrays.copyOf(b, NegotiateRequest.SIZE);
            expected[4] = 0; // Reserved
            expected[5] = 0;
            assertArrayEquals(expected, again);
        } catch (IllegalArgumentException e) {
            assertTrue(b.length < NegotiateRequest.SIZE, e.getMessage());
        }
    }

    private static void negotiateResponse(byte[] b) {
        try {
            NegotiateResponse r = NegotiateResponse.decode(ByteBuffer.wrap(b).order(ByteOrder.BIG_ENDIAN));
            byte[] again = r.encode(ByteBuffer.allocate(NegotiateResponse.SIZE)).array();
            byte[] expected = Arrays.copyOf(b, NegotiateResponse.SIZE);
            expected[6] = 0; // Reserved
            expected[7] = 0;
            assertArrayEquals(expected, again);
            r.toString();
        } catch (IllegalArgumentException e) {
            assertTrue(b.length < NegotiateResponse.SIZE, e.getMessage());
        }
    }

    private static void dataTransfer(byte[] b) {
        try {
            DataTransferHeader h = new DataTransferHeader().decode(ByteBuffer.wrap(b), 0, b.length);
            ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(le.getShort(0) & 0xFFFF, h.creditsRequested());
            assertEquals(le.getShort(2) & 0xFFFF, h.creditsGranted());
            assertEquals(le.getShort(4) & 0xFFFF, h.flags());
            assertEquals(le.getInt(8), h.remainingDataLength());
            assertEquals(le.getInt(12), h.dataOffset());
            assertEquals(le.getInt(16), h.dataLength());
            h.toString();
        } catch (IllegalArgumentException e) {
            assertTrue(b.length < Wire.DATA_TRANSFER_HEADER_SIZE, e.getMessage());
        }
    }

    private static void bufferDescriptor(byte[] b) {
        try {
            BufferDescriptorV1 d = BufferDescriptorV1.decode(ByteBuffer.wrap(b));
            byte[] again = d.encode(ByteBuffer.allocate(16)).array();
            assertArrayEquals(Arrays.copyOf(b, 16), again);
        } catch (IllegalArgumentException e) {
            assertTrue(b.length < 16, e.getMessage());
        }
    }

    private static void descriptorArray(byte[] b) {
        if (b.length == 0) {
            return;
        }
        int count = b[0];
        ByteBuffer in = ByteBuffer.wrap(b, 1, b.length - 1);
        try {
            List<BufferDescriptorV1> all = BufferDescriptorV1.decodeAll(in, count);
            assertEquals(count, all.size());
            BufferDescriptorV1.totalLength(all);
        } catch (IllegalArgumentException e) {
            assertTrue(count < 0 || count * 16 > b.length - 1, e.getMessage());
        }
    }

    private static void irdOrd(byte[] b) {
        IrdOrdHeader h = IrdOrdHeader.fromPrivateData(b);
        // MS-SMBD 6.2: fewer than 8 bytes, or 8 zero bytes (the connection manager's padding), are no header
        if (b.length < IrdOrdHeader.SIZE || Arrays.equals(new byte[IrdOrdHeader.SIZE], Arrays.copyOf(b, IrdOrdHeader.SIZE))) {
            assertEquals(null, h);
            return;
        }
        assertArrayEquals(Arrays.copyOf(b, 8), h.toPrivateData());
        IrdOrdHeader reply = IrdOrdHeader.reply(h, 16, 16);
        assertTrue(Integer.compareUnsigned(reply.ird(), 16) <= 0 && Integer.compareUnsigned(reply.ord(), 16) <= 0);
    }
}
