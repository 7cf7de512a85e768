package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;

/** The wire format of the control messages (the table in {@link ControlMessage}). */
class ControlMessageTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final BufferDescriptorV1 D1 = new BufferDescriptorV1(0x1122334455667788L, 0xAABBCCDD, 1000);
    private static final BufferDescriptorV1 D2 = new BufferDescriptorV1(0x1000L, 0x01020304, 24);

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    @Test
    void readRequest_bytesOnTheWire_littleEndianHeaderDescriptorsThenInline() {
        ByteBuffer m = ControlMessage.encode(Type.READ_REQUEST, 0, 7, 1027, List.of(D1, D2),
                ByteBuffer.wrap(new byte[] {1, 2, 3}));
        assertEquals("03" + "00" + "0200" + "03000000" + "0700000000000000" + "0304000000000000"
                + "8877665544332211" + "ddccbbaa" + "e8030000"
                + "0010000000000000" + "04030201" + "18000000"
                + "010203", HEX.formatHex(bytes(m)));
        ControlMessage d = decode(m);
        assertEquals(Type.READ_REQUEST, d.type);
        assertEquals(7, d.sequence);
        assertEquals(1027, d.totalLength);
        assertEquals(List.of(D1, D2), d.descriptors);
        assertArrayEquals(new byte[] {1, 2, 3}, bytes(d.inline));
        assertEquals(1024, d.rdmaLength());
    }

    @Test
    void hello_roundTrip_withCapabilities() {
        ByteBuffer m = ControlMessage.hello(new Hello(true, 4, 1 << 30, 8 << 20, 64));
        assertEquals(ControlMessage.HEADER_SIZE + ControlMessage.HELLO_SIZE, m.remaining());
        assertEquals("01" + "01" + "0000" + "18000000" + "0000000000000000" + "0000000000000000"
                + "42554c4b" + "0100" + "0400" + "00000040" + "00008000" + "40000000" + "00000000",
                HEX.formatHex(bytes(m)));
        Hello h = hello(m);
        assertTrue(h.canRdmaRead);
        assertEquals(4, h.maxInFlight);
        assertEquals(1 << 30, h.maxMessageSize);
        assertEquals(8 << 20, h.maxReadWriteSize);
        assertEquals(64, h.receiveWindow);
        assertFalse(hello(ControlMessage.hello(new Hello(false, 1, 1, 0, 1))).canRdmaRead);
    }

    @Test
    void everyType_roundTrips() {
        assertEquals(Type.DATA, decode(ControlMessage.encode(Type.DATA, 0, 1, 0, List.of(), null)).type);
        ControlMessage w = decode(ControlMessage.encode(Type.WRITE_REQUEST, 0, 2, 5000, List.of(),
                ByteBuffer.allocate(100)));
        assertEquals(4900, w.rdmaLength());
        ControlMessage t = decode(ControlMessage.encode(Type.TARGET, 0, 2, 1024, List.of(D2, D1), null));
        assertEquals(List.of(D2, D1), t.descriptors);
        ControlMessage c = decode(ControlMessage.signal(Type.COMPLETE, 9, true));
        assertEquals(Type.COMPLETE, c.type);
        assertTrue(c.fromSender());
        ControlMessage n = decode(ControlMessage.signal(Type.NOBUFS, Long.MAX_VALUE, false));
        assertEquals(Long.MAX_VALUE, n.sequence);
        assertFalse(n.fromSender());
    }

    @Test
    void decode_leavesTheMessageAsItWas_andReadsFromItsPosition() {
        ByteBuffer m = ControlMessage.encode(Type.DATA, 0, 3, 2, List.of(), ByteBuffer.wrap(new byte[] {9, 8}));
        ByteBuffer framed = ByteBuffer.allocate(m.remaining() + 10);
        framed.position(5);
        framed.put(m.duplicate()).flip().position(5);
        ControlMessage d = decode(framed);
        assertEquals(5, framed.position());
        assertArrayEquals(new byte[] {9, 8}, bytes(d.inline));
    }

    /** One well-formed message of each shape, changed by one field. */
    static List<Object[]> malformed() {
        return List.of(
                new Object[] {"short", "shorter than the 24-byte header", (Consumer<ByteBuffer>) b -> b.limit(23)},
                new Object[] {"empty", "control message of 0 bytes", (Consumer<ByteBuffer>) b -> b.limit(0)},
                new Object[] {"type 0", "unknown control message type 0x00", set(0, (byte) 0)},
                new Object[] {"type 0xff", "unknown control message type 0xFF", set(0, (byte) 0xFF)},
                new Object[] {"undefined flag", "undefined flags 0x80", set(1, (byte) 0x80)},
                new Object[] {"count too high", "announces 3 descriptor(s)", set16(2, 3)},
                new Object[] {"inline too long", "announces 2 descriptor(s) and 4 inline bytes", set32(4, 4)},
                new Object[] {"inline huge", "4294967295 inline bytes", set32(4, -1)},
                new Object[] {"total above 2^31-1", "above 2^31 - 1", set64(16, 1L << 31)},
                new Object[] {"negative total", "TotalLength 18446744073709551615", set64(16, -1)},
                new Object[] {"sequence 0", "Sequence 0, must not be 0", set64(8, 0)},
                new Object[] {"descriptors short", "descriptors cover 1024 bytes, expected 1026", set64(16, 1029)},
                new Object[] {"total not above inline", "not above its 3 inline bytes", set64(16, 3)},
                new Object[] {"empty descriptor", "empty descriptor", set32(24 + 12, 0)});
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformed")
    void decode_malformedReadRequest_isRefusedWithAReason(String name, String reason, Consumer<ByteBuffer> change) {
        ByteBuffer m = ControlMessage.encode(Type.READ_REQUEST, 0, 7, 1027, List.of(D1, D2),
                ByteBuffer.wrap(new byte[] {1, 2, 3})).order(ByteOrder.LITTLE_ENDIAN);
        change.accept(m);
        MalformedMessageException e = assertThrows(MalformedMessageException.class, () -> ControlMessage.decode(m));
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }

    @Test
    void decode_typeRules() {
        refused(ControlMessage.encode(Type.DATA, 0, 1, 5, List.of(), ByteBuffer.allocate(4)),
                "DATA with TotalLength 5 but 4 inline bytes");
        refused(ControlMessage.encode(Type.DATA, 0, 1, 16, List.of(D2), null), "DATA with descriptors");
        refused(ControlMessage.encode(Type.READ_REQUEST, 0, 1, 5, List.of(), ByteBuffer.allocate(4)),
                "READ_REQUEST without descriptors");
        refused(ControlMessage.encode(Type.WRITE_REQUEST, 0, 1, 4, List.of(), ByteBuffer.allocate(4)),
                "not above its 4 inline bytes");
        refused(ControlMessage.encode(Type.WRITE_REQUEST, 0, 1, 100, List.of(D2), null), "WRITE_REQUEST with descriptors");
        refused(ControlMessage.encode(Type.TARGET, 0, 1, 24, List.of(), null), "TARGET without descriptors");
        refused(ControlMessage.encode(Type.TARGET, 0, 1, 25, List.of(D2), ByteBuffer.allocate(1)),
                "TARGET with inline bytes");
        refused(ControlMessage.encode(Type.TARGET, 0, 1, 23, List.of(D2), null), "cover 24 bytes, expected 23");
        refused(ControlMessage.encode(Type.COMPLETE, 0, 1, 1, List.of(), null), "COMPLETE must carry nothing");
        refused(ControlMessage.encode(Type.NOBUFS, 0, 1, 1, List.of(), ByteBuffer.allocate(1)),
                "NOBUFS must carry nothing");
        refused(ControlMessage.encode(Type.COMPLETE, ControlMessage.FLAG_CAN_RDMA_READ, 1, 0, List.of(), null),
                "undefined flags 0x01");
        refused(ControlMessage.encode(Type.DATA, ControlMessage.FLAG_FROM_SENDER, 1, 0, List.of(), null),
                "undefined flags 0x02");
        refused(ControlMessage.encode(Type.HELLO, 0, 1, 0, List.of(), ByteBuffer.allocate(24)), "must be 0");
        refused(ControlMessage.encode(Type.HELLO, 0, 0, 0, List.of(), ByteBuffer.allocate(23)), "HELLO body of 23 bytes");
        refused(ControlMessage.encode(Type.HELLO, 0, 0, 24, List.of(), ByteBuffer.allocate(24)), "HELLO with TotalLength");
    }

    @Test
    void hello_badBody_isRefused() {
        ByteBuffer good = ControlMessage.hello(new Hello(true, 4, 100, 100, 1)).order(ByteOrder.LITTLE_ENDIAN);
        int body = ControlMessage.HEADER_SIZE;
        helloRefused(good, b -> b.putInt(body, 0x12345678), "magic 0x12345678");
        helloRefused(good, b -> b.putShort(body + 4, (short) 2), "version 2");
        helloRefused(good, b -> b.putShort(body + 6, (short) 0), "MaxInFlight 0");
        helloRefused(good, b -> b.putInt(body + 8, 0), "MaxMessageSize 0");
        helloRefused(good, b -> b.putInt(body + 8, -1), "MaxMessageSize 4294967295");
        helloRefused(good, b -> b.putInt(body + 16, 0), "ReceiveWindow 0");
        helloRefused(good, b -> b.putInt(body + 20, 1), "Reserved");
    }

    /**
     * Robustness: random bytes, and well-formed messages with random bytes changed, either decode
     * or are refused with {@link MalformedMessageException}; nothing else escapes.
     */
    @Test
    void decode_randomInput_neverThrowsAnythingElse() {
        SplittableRandom r = new SplittableRandom(20260101);
        List<ByteBuffer> seeds = List.of(ControlMessage.hello(new Hello(true, 4, 100, 100, 1)),
                ControlMessage.encode(Type.READ_REQUEST, 0, 7, 1027, List.of(D1, D2), ByteBuffer.allocate(3)),
                ControlMessage.encode(Type.TARGET, 0, 1, 1024, List.of(D1), null),
                ControlMessage.encode(Type.DATA, 0, 1, 10, List.of(), ByteBuffer.allocate(10)),
                ControlMessage.signal(Type.COMPLETE, 1, true));
        int decoded = 0;
        for (int i = 0; i < 200_000; i++) {
            byte[] b;
            if (i % 2 == 0) {
                b = new byte[r.nextInt(80)];
                r.nextBytes(b);
                if (b.length > 0) {
                    b[0] = (byte) r.nextInt(9);
                }
            } else {
                b = bytes(seeds.get(r.nextInt(seeds.size())));
                for (int k = 1 + r.nextInt(3); k > 0; k--) {
                    b[r.nextInt(b.length)] = (byte) r.nextInt(256);
                }
                if (r.nextInt(8) == 0) {
                    b = java.util.Arrays.copyOf(b, r.nextInt(b.length + 8));
                }
            }
            try {
                ControlMessage m = ControlMessage.decode(ByteBuffer.wrap(b).asReadOnlyBuffer());
                if (m.type == Type.HELLO) {
                    m.hello();
                }
                decoded++;
            } catch (MalformedMessageException expected) {
                assertFalse(expected.getMessage().isEmpty());
            }
        }
        assertTrue(decoded > 0, "some mutations stay well-formed");
    }

    private static ControlMessage decode(ByteBuffer b) {
        try {
            return ControlMessage.decode(b);
        } catch (MalformedMessageException e) {
            throw new AssertionError(e);
        }
    }

    private static Hello hello(ByteBuffer b) {
        try {
            return ControlMessage.decode(b).hello();
        } catch (MalformedMessageException e) {
            throw new AssertionError(e);
        }
    }

    private static void refused(ByteBuffer m, String reason) {
        MalformedMessageException e = assertThrows(MalformedMessageException.class, () -> ControlMessage.decode(m));
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }

    private static void helloRefused(ByteBuffer good, Consumer<ByteBuffer> change, String reason) {
        ByteBuffer m = ByteBuffer.allocate(good.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        m.put(good.duplicate()).flip();
        change.accept(m);
        MalformedMessageException e = assertThrows(MalformedMessageException.class,
                () -> ControlMessage.decode(m).hello());
        assertTrue(e.getMessage().contains(reason), e.getMessage());
    }

    private static Consumer<ByteBuffer> set(int at, byte v) {
        return b -> b.put(at, v);
    }

    private static Consumer<ByteBuffer> set16(int at, int v) {
        return b -> b.putShort(at, (short) v);
    }

    private static Consumer<ByteBuffer> set32(int at, int v) {
        return b -> b.putInt(at, v);
    }

    private static Consumer<ByteBuffer> set64(int at, long v) {
        return b -> b.putLong(at, v);
    }
}
