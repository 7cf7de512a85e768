package org.smbdirect.transport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * SMB_DIRECT_BUFFER_DESCRIPTOR_1 (MS-SMBD 2.2.3.1): a registered buffer segment a peer may RDMA
 * Read from or RDMA Write to. Upper layers embed arrays of these in their own messages, in the
 * 16-byte wire encoding of {@link #encode(ByteBuffer)}.
 *
 * <p>An immutable value. All fields are unsigned on the wire: {@link #offset()} is a full 64-bit
 * value, {@link #token()} and {@link #length()} 32-bit; read them with {@link
 * Long#toUnsignedString(long)} and {@link Integer#toUnsignedLong(int)} where the sign matters.
 */
public final class BufferDescriptorV1 {
    /** The encoded size in bytes. */
    public static final int SIZE = 16;

    private final long offset;
    private final int token;
    private final int length;

    /**
     * Creates a descriptor.
     *
     * @param offset the provider-specific offset of the first byte (Offset, 8 bytes)
     * @param token the provider-assigned steering tag (Token, 4 bytes)
     * @param length the number of bytes (Length, 4 bytes, unsigned)
     */
    public BufferDescriptorV1(long offset, int token, int length) {
        this.offset = offset;
        this.token = token;
        this.length = length;
    }

    /**
     * The RDMA provider-specific offset identifying the first byte (Offset).
     *
     * @return the offset
     */
    public long offset() {
        return offset;
    }

    /**
     * The steering tag for accessing the registered buffer (Token).
     *
     * @return the token
     */
    public int token() {
        return token;
    }

    /**
     * The size in bytes of the data to be transferred (Length), as an unsigned 32-bit value.
     *
     * @return the length's bits
     */
    public int length() {
        return length;
    }

    /**
     * The length as a non-negative long.
     *
     * @return the unsigned length
     */
    public long unsignedLength() {
        return Integer.toUnsignedLong(length);
    }

    /**
     * Writes the 16-byte little-endian encoding at the buffer's position and advances it. The
     * buffer's byte order is left unchanged.
     *
     * @param out where to write; needs 16 bytes remaining
     * @return {@code out}
     */
    public ByteBuffer encode(ByteBuffer out) {
        int p = out.position();
        ByteBuffer le = out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        le.putLong(p, offset);
        le.putInt(p + 8, token);
        le.putInt(p + 12, length);
        out.position(p + SIZE);
        return out;
    }

    /**
     * Reads one descriptor at the buffer's position and advances it.
     *
     * @param in the encoding; needs 16 bytes remaining
     * @return the descriptor
     * @throws IllegalArgumentException when fewer than 16 bytes remain
     */
    public static BufferDescriptorV1 decode(ByteBuffer in) {
        if (in.remaining() < SIZE) {
            throw new IllegalArgumentException(
                    "a Buffer Descriptor V1 needs 16 bytes, only " + in.remaining() + " remain");
        }
        int p = in.position();
        ByteBuffer le = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        BufferDescriptorV1 d = new BufferDescriptorV1(le.getLong(p), le.getInt(p + 8), le.getInt(p + 12));
        in.position(p + SIZE);
        return d;
    }

    /**
     * Writes an array of descriptors, back to back.
     *
     * @param descriptors the descriptors
     * @param out where to write; needs {@code 16 * descriptors.size()} bytes remaining
     * @return {@code out}
     */
    public static ByteBuffer encodeAll(List<BufferDescriptorV1> descriptors, ByteBuffer out) {
        for (BufferDescriptorV1 d : descriptors) {
            d.encode(out);
        }
        return out;
    }

    /**
     * Reads {@code count} descriptors written back to back.
     *
     * @param in the encoding
     * @param count how many to read
     * @return the descriptors, in order
     * @throws IllegalArgumentException when {@code count} is negative or too few bytes remain
     */
    public static List<BufferDescriptorV1> decodeAll(ByteBuffer in, int count) {
        if (count < 0 || (long) count * SIZE > in.remaining()) {
            throw new IllegalArgumentException("cannot read " + count + " Buffer Descriptor V1 from "
                    + in.remaining() + " bytes");
        }
        List<BufferDescriptorV1> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(decode(in));
        }
        return list;
    }

    /**
     * The sum of the lengths of the descriptors.
     *
     * @param descriptors the descriptors
     * @return the total, unsigned
     */
    public static long totalLength(List<BufferDescriptorV1> descriptors) {
        long total = 0;
        for (BufferDescriptorV1 d : descriptors) {
            total += d.unsignedLength();
        }
        return total;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof BufferDescriptorV1)) {
            return false;
        }
        BufferDescriptorV1 d = (BufferDescriptorV1) o;
        return offset == d.offset && token == d.token && length == d.length;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(offset) * 31 * 31 + token * 31 + length;
    }

    @Override
    public String toString() {
        return "BufferDescriptorV1[offset=0x" + Long.toHexString(offset) + ", token=0x" + Integer.toHexString(token)
                + ", length=" + Integer.toUnsignedString(length) + "]";
    }
}
