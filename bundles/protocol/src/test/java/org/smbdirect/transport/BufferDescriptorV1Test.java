package org.smbdirect.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;

/** MS-SMBD 2.2.3.1 Buffer Descriptor V1: 16 bytes, little-endian. */
class BufferDescriptorV1Test {

    /** The descriptor of example 4.4. */
    @Test
    void encode_example44_isSixteenLittleEndianBytes() {
        BufferDescriptorV1 d = new BufferDescriptorV1(0x00000000ABCDE012L, 0x1A00BC56, 0x00100000);
        ByteBuffer b = ByteBuffer.allocate(16);
        d.encode(b);
        assertEquals(16, b.position());
        assertEquals("12e0cdab00000000" + "56bc001a" + "00001000", HexFormat.of().formatHex(b.array()));
        assertEquals(d, BufferDescriptorV1.decode(b.flip()));
    }

    @Test
    void decodeAll_readsConsecutiveDescriptors() {
        List<BufferDescriptorV1> in = List.of(new BufferDescriptorV1(1, 2, 3), new BufferDescriptorV1(-1L, -2, -3));
        ByteBuffer b = BufferDescriptorV1.encodeAll(in, ByteBuffer.allocate(32)).flip();
        assertEquals(in, BufferDescriptorV1.decodeAll(b, 2));
        assertEquals(4294967293L, in.get(1).unsignedLength());
        assertEquals(3 + 4294967293L, BufferDescriptorV1.totalLength(in));
    }

    @Test
    void decode_tooShort_isRejected() {
        assertThrows(IllegalArgumentException.class, () -> BufferDescriptorV1.decode(ByteBuffer.allocate(15)));
        assertThrows(IllegalArgumentException.class, () -> BufferDescriptorV1.decodeAll(ByteBuffer.allocate(31), 2));
        assertThrows(IllegalArgumentException.class, () -> BufferDescriptorV1.decodeAll(ByteBuffer.allocate(32), -1));
    }
}
