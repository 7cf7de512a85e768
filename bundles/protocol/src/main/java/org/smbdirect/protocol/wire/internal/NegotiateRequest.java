package org.smbdirect.protocol.wire.internal;

import java.nio.ByteBuffer;

/**
 * The Negotiate Request message (MS-SMBD 2.2.1): 20 bytes, little-endian. An immutable value;
 * numeric fields are held as the unsigned values of the wire (16-bit fields as 0..65535, 32-bit
 * fields as their bits).
 */
public final class NegotiateRequest {
    /** The encoded size. */
    public static final int SIZE = 20;

    private final int minVersion;
    private final int maxVersion;
    private final int creditsRequested;
    private final int preferredSendSize;
    private final int maxReceiveSize;
    private final int maxFragmentedSize;

    /**
     * Creates a request.
     *
     * @param minVersion MinVersion
     * @param maxVersion MaxVersion
     * @param creditsRequested CreditsRequested
     * @param preferredSendSize PreferredSendSize
     * @param maxReceiveSize MaxReceiveSize
     * @param maxFragmentedSize MaxFragmentedSize
     */
    public NegotiateRequest(int minVersion, int maxVersion, int creditsRequested, int preferredSendSize,
            int maxReceiveSize, int maxFragmentedSize) {
        this.minVersion = minVersion & 0xFFFF;
        this.maxVersion = maxVersion & 0xFFFF;
        this.creditsRequested = creditsRequested & 0xFFFF;
        this.preferredSendSize = preferredSendSize;
        this.maxReceiveSize = maxReceiveSize;
        this.maxFragmentedSize = maxFragmentedSize;
    }

    /**
     * Decodes the first 20 bytes from the buffer's position (the Reserved field is ignored, as
     * 2.2.1 requires). The buffer is not changed.
     *
     * @param b at least 20 bytes from its position
     * @return the request
     * @throws IllegalArgumentException when fewer than 20 bytes remain
     */
    public static NegotiateRequest decode(ByteBuffer b) {
        if (b.remaining() < SIZE) {
            throw new IllegalArgumentException("Negotiate Request needs 20 bytes, got " + b.remaining());
        }
        int p = b.position();
        return new NegotiateRequest(Wire.u16(b, p), Wire.u16(b, p + 2), Wire.u16(b, p + 6), Wire.u32(b, p + 8),
                Wire.u32(b, p + 12), Wire.u32(b, p + 16));
    }

    /**
     * Writes the 20 bytes at the buffer's position, Reserved set to 0, and advances it.
     *
     * @param b the buffer
     * @return {@code b}
     */
    public ByteBuffer encode(ByteBuffer b) {
        int p = b.position();
        Wire.put16(b, p, minVersion);
        Wire.put16(b, p + 2, maxVersion);
        Wire.put16(b, p + 4, 0);
        Wire.put16(b, p + 6, creditsRequested);
        Wire.put32(b, p + 8, preferredSendSize);
        Wire.put32(b, p + 12, maxReceiveSize);
        Wire.put32(b, p + 16, maxFragmentedSize);
        b.position(p + SIZE);
        return b;
    }

    /** @return MinVersion */
    public int minVersion() {
        return minVersion;
    }

    /** @return MaxVersion */
    public int maxVersion() {
        return maxVersion;
    }

    /** @return CreditsRequested, 0 to 65535 */
    public int creditsRequested() {
        return creditsRequested;
    }

    /** @return PreferredSendSize's bits */
    public int preferredSendSize() {
        return preferredSendSize;
    }

    /** @return MaxReceiveSize's bits */
    public int maxReceiveSize() {
        return maxReceiveSize;
    }

    /** @return MaxFragmentedSize's bits */
    public int maxFragmentedSize() {
        return maxFragmentedSize;
    }

    @Override
    public String toString() {
        return String.format("NegotiateRequest[MinVersion=0x%04X, MaxVersion=0x%04X, CreditsRequested=%d, "
                + "PreferredSendSize=%s, MaxReceiveSize=%s, MaxFragmentedSize=%s]", minVersion, maxVersion,
                creditsRequested, Integer.toUnsignedString(preferredSendSize),
                Integer.toUnsignedString(maxReceiveSize), Integer.toUnsignedString(maxFragmentedSize));
    }
}
