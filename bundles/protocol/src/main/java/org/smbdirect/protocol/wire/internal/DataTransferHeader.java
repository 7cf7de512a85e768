package org.smbdirect.protocol.wire.internal;

import java.nio.ByteBuffer;

/**
 * The header of a Data Transfer message (MS-SMBD 2.2.3): CreditsRequested, CreditsGranted,
 * Flags, Reserved, RemainingDataLength, DataOffset, DataLength; 20 bytes, little-endian.
 *
 * <p>Mutable so that the receive path can decode into one holder per connection without
 * allocating; {@link #encode} writes a header and its zero padding in place.
 */
public final class DataTransferHeader {
    private int creditsRequested;
    private int creditsGranted;
    private int flags;
    private int remainingDataLength;
    private int dataOffset;
    private int dataLength;

    /**
     * Decodes the 20 header bytes at {@code index}; Reserved and padding are ignored (2.2.3).
     *
     * @param b the message
     * @param index the first byte of the message
     * @param length the message's length as received; at least 20 ({@link Wire#DATA_TRANSFER_HEADER_SIZE})
     * @return this holder
     * @throws IllegalArgumentException when {@code length} is below 20 or beyond the buffer
     */
    public DataTransferHeader decode(ByteBuffer b, int index, int length) {
        if (length < Wire.DATA_TRANSFER_HEADER_SIZE || index < 0 || index + length > b.limit()) {
            throw new IllegalArgumentException("Data Transfer header needs 20 bytes within the buffer, length "
                    + length + " at " + index + " of " + b.limit());
        }
        creditsRequested = Wire.u16(b, index);
        creditsGranted = Wire.u16(b, index + 2);
        flags = Wire.u16(b, index + 4);
        remainingDataLength = Wire.u32(b, index + 8);
        dataOffset = Wire.u32(b, index + 12);
        dataLength = Wire.u32(b, index + 16);
        return this;
    }

    /**
     * Writes a Data Transfer header at {@code index} (MS-SMBD 3.1.5.4): Reserved 0; when
     * {@code dataLength} is 0, DataOffset 0 and no padding (the message is exactly 20 bytes);
     * otherwise DataOffset 24 and 4 bytes of zero padding.
     *
     * @param b the buffer
     * @param index where the message starts
     * @param creditsRequested CreditsRequested
     * @param creditsGranted CreditsGranted
     * @param flags Flags
     * @param remainingDataLength RemainingDataLength
     * @param dataLength DataLength; the data itself is the caller's to place at index + 24
     * @return the message's total length: 20, or 24 + dataLength
     */
    public static int encode(ByteBuffer b, int index, int creditsRequested, int creditsGranted, int flags,
            int remainingDataLength, int dataLength) {
        Wire.put16(b, index, creditsRequested);
        Wire.put16(b, index + 2, creditsGranted);
        Wire.put16(b, index + 4, flags);
        Wire.put16(b, index + 6, 0);
        Wire.put32(b, index + 8, remainingDataLength);
        if (dataLength == 0) {
            Wire.put32(b, index + 12, 0);
            Wire.put32(b, index + 16, 0);
            return Wire.DATA_TRANSFER_HEADER_SIZE;
        }
        Wire.put32(b, index + 12, Wire.DATA_OFFSET);
        Wire.put32(b, index + 16, dataLength);
        Wire.put32(b, index + 20, 0);
        return Wire.DATA_OFFSET + dataLength;
    }

    /** @return CreditsRequested, 0 to 65535 */
    public int creditsRequested() {
        return creditsRequested;
    }

    /** @return CreditsGranted, 0 to 65535 */
    public int creditsGranted() {
        return creditsGranted;
    }

    /** @return Flags */
    public int flags() {
        return flags;
    }

    /** @return RemainingDataLength's bits (unsigned) */
    public int remainingDataLength() {
        return remainingDataLength;
    }

    /** @return DataOffset's bits (unsigned) */
    public int dataOffset() {
        return dataOffset;
    }

    /** @return DataLength's bits (unsigned) */
    public int dataLength() {
        return dataLength;
    }

    @Override
    public String toString() {
        return "DataTransfer[CreditsRequested=" + creditsRequested + ", CreditsGranted=" + creditsGranted
                + ", Flags=0x" + Integer.toHexString(flags) + ", RemainingDataLength="
                + Integer.toUnsignedString(remainingDataLength) + ", DataOffset=" + Integer.toUnsignedString(dataOffset)
                + ", DataLength=" + Integer.toUnsignedString(dataLength) + "]";
    }
}
