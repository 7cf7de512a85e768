package org.smbdirect.transport;

import java.time.Duration;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The negotiated parameters of a connection (MS-SMBD 3.1.4.7 Query Connection Parameters), plus
 * the other values of the connection's abstract data model that an upper layer or an operator
 * wants to see. A snapshot; the values do not change after negotiation.
 */
@ProviderType
public interface ConnectionParameters {

    /**
     * Connection.MaxSendSize: the largest single message this side sends, header included.
     *
     * @return bytes
     */
    int maxSendSize();

    /**
     * Connection.MaxFragmentedSendSize: the largest upper-layer message the peer reassembles, and
     * so the largest this side may {@linkplain SmbDirectConnection#send send}.
     *
     * @return bytes
     */
    int maxFragmentedSendSize();

    /**
     * Connection.MaxReceiveSize: the largest single message this side receives.
     *
     * @return bytes
     */
    int maxReceiveSize();

    /**
     * Connection.MaxFragmentedRecvSize: the largest upper-layer message this side reassembles.
     *
     * @return bytes
     */
    int maxFragmentedRecvSize();

    /**
     * Connection.MaxReadWriteSize: the largest RDMA transfer for one upper-layer request.
     *
     * @return bytes
     */
    int maxReadWriteSize();

    /**
     * Connection.KeepaliveInterval: idle time before a keepalive is sent.
     *
     * @return the interval; zero when keepalives are disabled
     */
    Duration keepaliveInterval();

    /**
     * Connection.Protocol: the negotiated protocol version.
     *
     * @return 0x0100
     */
    int protocolVersion();

    /**
     * Connection.ReceiveCreditMax: the most receive credits this side grants.
     *
     * @return credits
     */
    int receiveCreditMax();

    /**
     * Connection.SendCreditTarget: the send credits this side asks the peer for.
     *
     * @return credits
     */
    int sendCreditTarget();

    /**
     * The RDMA incoming read depth in force (MS-SMBD section 6).
     *
     * @return the IRD
     */
    int ird();

    /**
     * The RDMA outgoing read depth in force (MS-SMBD section 6).
     *
     * @return the ORD
     */
    int ord();

    /**
     * Whether this side initiated the connection (Connection.Role was ACTIVE).
     *
     * @return {@code true} for the initiator
     */
    boolean initiator();

    /**
     * Whether this side's RDMA provider can perform RDMA Read: {@link SmbDirectConnection#rdmaRead}
     * works, and buffers can be registered for {@link RemoteAccess#READ}. Upper layers that let the
     * receiver pull data (as the sockets-direct session protocol does) advertise this to their peer.
     *
     * @return {@code true} when RDMA Read is available
     */
    boolean rdmaRead();

    /**
     * Whether this side's RDMA provider can send with invalidate; when it cannot, the token given
     * to {@link SmbDirectConnection#sendAndInvalidate} is ignored (MS-SMBD 3.1.5.1 allows this).
     *
     * @return {@code true} when remote invalidation is available
     */
    boolean remoteInvalidate();

    /**
     * The RDMA provider carrying the connection, as {@code type/name}.
     *
     * @return for example {@code sim/sim0}
     */
    String provider();

    /**
     * The RDMA transport the connection runs on, as administrators name it: {@code InfiniBand},
     * {@code RoCE} or {@code iWARP}. It decides the default port (445, or 5445 on iWARP) and
     * whether the IRD/ORD header of MS-SMBD section 6 was exchanged.
     *
     * @return the transport's name
     */
    String transport();
}
