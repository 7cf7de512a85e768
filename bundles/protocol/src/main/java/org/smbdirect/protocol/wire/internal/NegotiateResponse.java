package org.smbdirect.protocol.wire.internal;

import java.nio.ByteBuffer;

/**
 * The Negotiate Response message (MS-SMBD 2.2.2): 32 bytes, little-endian. An immutable value.
 */
public final class NegotiateResponse {
    /** The encoded size. */
    public static final int SIZE = 32;

    private final int minVersion;
    private final int maxVersion;
    private final int negotiatedVersion;
    private final int creditsRequested;
    private final int creditsGranted;
    private final int status;
    private final int maxReadWriteSize;
    private final int preferredSendSize;
    private final int maxReceiveSize;
    private final int maxFragmentedSize;

    /**
     * Creates a response.
     *
     * @param minVersion MinVersion
     * @param maxVersion MaxVersion
     * @param negotiatedVersion NegotiatedVersion
     * @param creditsRequested CreditsRequested
     * @param creditsGranted CreditsGranted
     * @param status Status
     * @param maxReadWriteSize MaxReadWriteSize
     * @param preferredSendSize PreferredSendSize
     * @param maxReceiveSize MaxReceiveSize
     * @param maxFragmentedSize MaxFragmentedSize
     */
    public NegotiateResponse(int minVersion, int maxVersion, int negotiatedVersion, int creditsRequested,
            int creditsGranted, int status, int maxReadWriteSize, int preferredSendSize, int maxReceiveSize,
            int maxFragmentedSize) {
        this.minVersion = minVersion & 0xFFFF;
        this.maxVersion = maxVersion & 0xFFFF;
        this.negotiatedVersion = negotiatedVersion & 0xFFFF;
        this.creditsRequested = creditsRequested & 0xFFFF;
        this.creditsGranted = creditsGranted & 0xFFFF;
        this.status = status;
        this.maxReadWriteSize = maxReadWriteSize;
        this.preferredSendSize = preferredSendSize;
        this.maxReceiveSize = maxReceiveSize;
        this.maxFragmentedSize = maxFragmentedSize;
    }

    /**
     * A failure response (MS-SMBD 3.1.5.3): versions 0x0100, the status, every other field 0.
     *
     * @param status the failure status
     * @return the response
     */
    public static NegotiateResponse failure(int status) {
        return new NegotiateResponse(Wire.VERSION_1, Wire.VERSION_1, 0, 0, 0, status, 0, 0, 0, 0);
    }

    /**
     * Decodes the first 32 bytes from the buffer's position (Reserved ignored). The buffer is not
     * changed.
     *
     * @param b at least 32 bytes from its position
     * @return the response
     * @throws IllegalArgumentException when fewer than 32 bytes remain
     */
    public static NegotiateResponse decode(ByteBuffer b) {
        if (b.remaining() < SIZE) {
            throw new IllegalArgumentException("Negotiate Response needs 32 bytes, got " + b.remaining());
        }
        int p = b.position();
        return new NegotiateResponse(Wire.u16(b, p), Wire.u16(b, p + 2), Wire.u16(b, p + 4), Wire.u16(b, p + 8),
                Wire.u16(b, p + 10), Wire.u32(b, p + 12), Wire.u32(b, p + 16), Wire.u32(b, p + 20),
                Wire.u32(b, p + 24), Wire.u32(b, p + 28));
    }

    /**
     * Writes the 32 bytes at the buffer's position, Reserved set to 0, and advances it.
     *
     * @param b the buffer
     * @return {@code b}
     */
    public ByteBuffer encode(ByteBuffer b) {
        int p = b.position();
        Wire.put16(b, p, minVersion);
        Wire.put16(b, p + 2, maxVersion);
        Wire.put16(b, p + 4, negotiatedVersion);
        Wire.put16(b, p + 6, 0);
        Wire.put16(b, p + 8, creditsRequested);
        Wire.put16(b, p + 10, creditsGranted);
        Wire.put32(b, p + 12, status);
        Wire.put32(b, p + 16, maxReadWriteSize);
        Wire.put32(b, p + 20, preferredSendSize);
        Wire.put32(b, p + 24, maxReceiveSize);
        Wire.put32(b, p + 28, maxFragmentedSize);
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

    /** @return NegotiatedVersion */
    public int negotiatedVersion() {
        return negotiatedVersion;
    }

    /** @return CreditsRequested, 0 to 65535 */
    public int creditsRequested() {
        return creditsRequested;
    }

    /** @return CreditsGranted, 0 to 65535 */
    public int creditsGranted() {
        return creditsGranted;
    }

    /** @return Status */
    public int status() {
        return status;
    }

    /** @return MaxReadWriteSize's bits */
    public int maxReadWriteSize() {
        return maxReadWriteSize;
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
        return String.format("NegotiateResponse[MinVersion=0x%04X, MaxVersion=0x%04X, NegotiatedVersion=0x%04X, "
                + "CreditsRequested=%d, CreditsGranted=%d, Status=%s, MaxReadWriteSize=%s, PreferredSendSize=%s, "
                + "MaxReceiveSize=%s, MaxFragmentedSize=%s]", minVersion, maxVersion, negotiatedVersion,
                creditsRequested, creditsGranted, Wire.statusName(status), Integer.toUnsignedString(maxReadWriteSize),
                Integer.toUnsignedString(preferredSendSize), Integer.toUnsignedString(maxReceiveSize),
                Integer.toUnsignedString(maxFragmentedSize));
    }
}
