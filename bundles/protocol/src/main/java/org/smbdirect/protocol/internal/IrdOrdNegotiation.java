package org.smbdirect.protocol.internal;

import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
import org.smbdirect.rdma.TransportType;
import org.smbdirect.transport.IrdOrdHeaderPolicy;

/**
 * The IRD/ORD policy of MS-SMBD section 6: whether the connection's private data carries the
 * IRD/ORD Negotiate Header, and the RDMA Read depths a connection uses. Pure arithmetic.
 *
 * <p>Depths in RDMA terms: this side's ORD is how many RDMA Reads it may have outstanding towards
 * the peer (bounded by the peer's IRD), its IRD how many of the peer's reads it serves at once.
 * The 6.2 formulas make the accepting peer's reply header state the connecting peer's values (its
 * IRD is the smaller of the acceptor's ORD and the requester's IRD: the reads the acceptor will
 * issue), so the acceptor uses them crosswise. Linux answers from its own side instead, so the
 * connecting peer takes the smaller of the two values for its reads, which is right either way.
 */
final class IrdOrdNegotiation {
    private IrdOrdNegotiation() {
    }

    /**
     * Whether the section 6 header travels on this transport under this policy.
     *
     * @param policy the configured policy
     * @param transport the connection's transport
     * @return {@code true} to send, read and answer it
     */
    static boolean headerInUse(IrdOrdHeaderPolicy policy, TransportType transport) {
        switch (policy) {
            case ALWAYS:
                return true;
            case NEVER:
                return false;
            default:
                return transport == TransportType.IWARP;
        }
    }

    /**
     * The private data of a connection request (MS-SMBD 6.1).
     *
     * @param policy the configured policy
     * @param transport the transport
     * @param ird this side's IRD
     * @param ord this side's ORD
     * @return the 8 header bytes, or {@code null} for no private data
     */
    static byte[] requestPrivateData(IrdOrdHeaderPolicy policy, TransportType transport, int ird, int ord) {
        return headerInUse(policy, transport) ? new IrdOrdHeader(Math.max(ird, 1), Math.max(ord, 1)).toPrivateData()
                : null;
    }

    /**
     * The header in received private data, if the policy reads one on this transport (MS-SMBD
     * 6.2). Padding (all zero) means none.
     *
     * @param policy the configured policy
     * @param transport the transport
     * @param privateData what the connection manager delivered
     * @return the header, or {@code null}
     */
    static IrdOrdHeader receivedHeader(IrdOrdHeaderPolicy policy, TransportType transport, byte[] privateData) {
        return headerInUse(policy, transport) ? IrdOrdHeader.fromPrivateData(privateData) : null;
    }

    /** The depths one side of a connection uses: reads it serves (IRD), reads it issues (ORD). */
    static final class Depths {
        final int ird;
        final int ord;

        Depths(int ird, int ord) {
            this.ird = ird;
            this.ord = ord;
        }

        /**
         * How many RDMA Reads this side may have outstanding: its ORD, at least 1 (a read is
         * never refused locally; the peer's transport reports one it cannot serve).
         *
         * @return the limit
         */
        int outgoingReadLimit() {
            return Math.max(1, ord);
        }

        @Override
        public String toString() {
            return "IRD " + ird + " / ORD " + ord;
        }
    }

    /**
     * The accepting peer without a header: the connection manager's values, already in this side's
     * terms (the peer's IRD bounds this side's ORD and the other way round).
     *
     * @param localIrd this side's IRD
     * @param localOrd this side's ORD
     * @param peerIrd the reads the peer serves
     * @param peerOrd the reads the peer issues
     * @return the depths
     */
    static Depths fromConnectionManager(int localIrd, int localOrd, int peerIrd, int peerOrd) {
        return new Depths(Math.min(localIrd, Math.max(peerOrd, 0)), Math.min(localOrd, Math.max(peerIrd, 0)));
    }

    /**
     * The accepting peer's depths after answering a header with {@code answer} (MS-SMBD 6.2): the
     * answer's IRD is the reads this side issues, its ORD the reads this side serves.
     *
     * @param answer the reply header
     * @return the depths, capped at 255
     */
    static Depths acceptorFromAnswer(IrdOrdHeader answer) {
        return new Depths(cap(answer.ord()), cap(answer.ird()));
    }

    /**
     * The connecting peer's depths from the acceptor's header (MS-SMBD 6.2): it serves what it
     * offered, and issues no more reads than the smaller of the two answered values.
     *
     * @param offeredIrd the IRD this side sent
     * @param offeredOrd the ORD this side sent
     * @param answer the acceptor's header
     * @return the depths
     */
    static Depths initiatorFromAnswer(int offeredIrd, int offeredOrd, IrdOrdHeader answer) {
        int smaller = Math.min(cap(answer.ird()), cap(answer.ord()));
        return new Depths(offeredIrd, Math.min(offeredOrd, smaller));
    }

    private static int cap(int unsigned) {
        return (int) Math.min(Integer.toUnsignedLong(unsigned), 255);
    }
}
