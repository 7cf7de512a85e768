package org.smbdirect.protocol.wire.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The IRD/ORD Negotiate Header (MS-SMBD 6.1): the first 8 bytes of the RDMA connection's private
 * data, IRD then ORD, 4 bytes each.
 *
 * <p>Byte order: section 6 is private data of the lower transport, not one of the section 2
 * messages that 2.2 makes little-endian; the implementations that interoperate with Windows
 * (Linux cifs.ko and ksmbd) send both fields in network byte order (big-endian), as iWARP MPA
 * does, and so does this class.
 */
public final class IrdOrdHeader {
    /** The encoded size. */
    public static final int SIZE = 8;

    private final int ird;
    private final int ord;

    /**
     * Creates a header.
     *
     * @param ird the incoming RDMA Read depth (must be greater than zero to be valid, 6.1)
     * @param ord the outgoing RDMA Read depth (must be greater than zero to be valid, 6.1)
     */
    public IrdOrdHeader(int ird, int ord) {
        this.ird = ird;
        this.ord = ord;
    }

    /**
     * Reads a header from the start of private data (MS-SMBD 6.2: at the beginning of any private
     * data provided by the transport). Whether private data is to be read as a header at all is the
     * caller's decision (on InfiniBand and RoCE it is zero padding unless both sides agreed).
     *
     * @param privateData the private data
     * @return the header, or {@code null} when fewer than 8 bytes are present or all 8 are zero
     *         (zero padding of the connection manager: no header was sent)
     */
    public static IrdOrdHeader fromPrivateData(byte[] privateData) {
        if (privateData == null || privateData.length < SIZE) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(privateData).order(ByteOrder.BIG_ENDIAN);
        int ird = b.getInt(0);
        int ord = b.getInt(4);
        return ird == 0 && ord == 0 ? null : new IrdOrdHeader(ird, ord);
    }

    /**
     * The header as 8 bytes of private data.
     *
     * @return a new array
     */
    public byte[] toPrivateData() {
        return ByteBuffer.allocate(SIZE).order(ByteOrder.BIG_ENDIAN).putInt(ird).putInt(ord).array();
    }

    /**
     * The reply of an accepting peer (MS-SMBD 6.2): IRD is the smaller of the accepting peer's ORD
     * and the IRD in the request; ORD the smaller of the accepting peer's IRD and the ORD in the
     * request.
     *
     * @param request the header received with the connection request
     * @param localIrd the accepting peer's IRD
     * @param localOrd the accepting peer's ORD
     * @return the header to send with the acceptance
     */
    public static IrdOrdHeader reply(IrdOrdHeader request, int localIrd, int localOrd) {
        return new IrdOrdHeader(minUnsigned(localOrd, request.ird), minUnsigned(localIrd, request.ord));
    }

    private static int minUnsigned(int a, int b) {
        return Integer.compareUnsigned(a, b) <= 0 ? a : b;
    }

    /**
     * Whether both values are greater than zero (6.1; 6.2 rejects the connection otherwise).
     *
     * @return {@code true} when usable
     */
    public boolean isValid() {
        return ird != 0 && ord != 0;
    }

    /** @return IRD's bits (unsigned) */
    public int ird() {
        return ird;
    }

    /** @return ORD's bits (unsigned) */
    public int ord() {
        return ord;
    }

    @Override
    public String toString() {
        return "IrdOrdHeader[IRD=" + Integer.toUnsignedString(ird) + ", ORD=" + Integer.toUnsignedString(ord) + "]";
    }
}
