package org.smbdirect.transport;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;

import org.osgi.annotation.versioning.ProviderType;

/**
 * The SMB Direct transport service (MS-SMBD): connects to peers and listens for them over the
 * RDMA provider it is bound to. Published in the OSGi service registry by the protocol bundle;
 * without OSGi, built by a {@link SmbDirectFactory}.
 */
@ProviderType
public interface SmbDirect extends AutoCloseable {

    /**
     * Connects to a peer and negotiates (MS-SMBD 3.1.4.1, 3.1.5.2, 3.1.5.7).
     *
     * @param remote the peer's address on the RDMA fabric; port 0 means {@link #defaultPort()}
     * @param handler receives the connection's messages; attached before the first one arrives
     * @return completes with the established connection, or exceptionally with {@link
     *         SmbDirectException} (whose {@link ConnectionLostException#loss()} names the cause
     *         when the connection failed during negotiation)
     */
    CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, ConnectionHandler handler);

    /**
     * Connects to a peer and waits for the negotiation to finish.
     *
     * @param remote the peer's address; port 0 means {@link #defaultPort()}
     * @param handler receives the connection's messages
     * @param timeout how long to wait
     * @return the established connection
     * @throws SmbDirectException when the connection or negotiation failed or timed out
     * @throws InterruptedException when interrupted while waiting
     */
    SmbDirectConnection connect(InetSocketAddress remote, ConnectionHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException;

    /**
     * Connects from a chosen local address (MS-SMBD 3.1.4.1): the RDMA provider that has the
     * address carries the connection, from that address. SMB3 multichannel opens one channel per
     * interface this way (see {@link #interfaces()}).
     *
     * @param remote the peer's address; port 0 means the port for the chosen provider's transport
     * @param local one of the addresses of {@link #interfaces()}
     * @param handler receives the connection's messages
     * @return as for {@link #connect(InetSocketAddress, ConnectionHandler)}; fails with {@link
     *         SmbDirectException} when no provider has the address
     * @since 1.1
     */
    CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, InetAddress local,
            ConnectionHandler handler);

    /**
     * The RDMA interfaces new connections can use: one per RDMA provider the transport may use,
     * in order of preference, each with its addresses, transport and link speed (what an SMB3
     * server reports in FSCTL_QUERY_NETWORK_INTERFACE_INFO and a multichannel client compares).
     *
     * @return a snapshot list, empty when no provider is available
     * @since 1.1
     */
    List<RdmaInterface> interfaces();

    /**
     * Listens for peers (MS-SMBD 3.1.7.2).
     *
     * @param local the local address; port 0 chooses one
     * @param handler receives each successfully negotiated connection
     * @return the listener
     * @throws SmbDirectException when no RDMA provider is available or the address is unusable
     */
    SmbDirectListener listen(InetSocketAddress local, AcceptHandler handler) throws SmbDirectException;

    /**
     * The port SMB Direct uses on the transport of the RDMA provider that new connections use, as
     * Windows and Linux do: 445 on InfiniBand and RoCE, 5445 on iWARP (where 445 is SMB over TCP).
     *
     * @return the port; 445 when no provider is available
     */
    int defaultPort();

    /**
     * The connections currently open.
     *
     * @return a snapshot list
     */
    List<SmbDirectConnection> connections();

    /**
     * The transport's counters.
     *
     * @return a snapshot
     */
    TransportStatistics statistics();

    /**
     * The configuration new connections use.
     *
     * @return the configuration
     */
    SmbDirectConfig configuration();

    /**
     * The RDMA provider new connections use, as {@code type/name}.
     *
     * @return for example {@code sim/sim0}, or {@code null} when none is available
     */
    String provider();

    /**
     * Shuts the transport down: every connection ends with {@link
     * TerminationReason#TRANSPORT_SHUTDOWN}, listeners stop, engine threads end. Only the owner
     * calls this: the bundle that registered the service, or the code that built it with a
     * {@link SmbDirectFactory}. Idempotent.
     */
    @Override
    void close();
}
