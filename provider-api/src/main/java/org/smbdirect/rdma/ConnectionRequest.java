package org.smbdirect.rdma;

import java.net.InetSocketAddress;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A peer's request to connect, delivered to a {@link ConnectionRequestHandler}.
 *
 * <p>The consumer creates the endpoint that will carry the connection with {@link
 * #createEndpoint}, registers memory and posts receives on it as needed, then answers with
 * {@link #accept} or {@link #reject}, exactly once. A provider may reject a request that is left
 * unanswered for longer than its own limit; an accept after that fails with {@link
 * RdmaStatus#TIMEOUT}.
 */
@ProviderType
public interface ConnectionRequest {

    /**
     * The peer's address.
     *
     * @return the remote address
     */
    InetSocketAddress remoteAddress();

    /**
     * The listener's address the peer connected to.
     *
     * @return the local address
     */
    InetSocketAddress localAddress();

    /**
     * The private data the peer sent with its request (for SMB Direct over iWARP, the IRD/ORD
     * header of MS-SMBD section 6 comes first). As for {@link Endpoint#peerPrivateData()}, some
     * transports pad it with zeros to a fixed size.
     *
     * @return a copy of the bytes, empty when none were sent
     */
    byte[] peerPrivateData();

    /**
     * The incoming RDMA Read depth the peer offered: how many RDMA Reads from this side it
     * will serve at once.
     *
     * @return the peer's IRD
     */
    int peerIrd();

    /**
     * The outgoing RDMA Read depth the peer asked for: how many RDMA Reads it wants to have
     * outstanding towards this side at once.
     *
     * @return the peer's ORD
     */
    int peerOrd();

    /**
     * Creates the endpoint that will carry this connection, in {@link EndpointState#IDLE}.
     * At most one endpoint per request.
     *
     * @param options queues and limits
     * @param listener receives the endpoint's connection events
     * @return the new endpoint
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} for bad options, {@link
     *         RdmaStatus#INVALID_STATE} when the request was already answered or already has an
     *         endpoint, {@link RdmaStatus#INSUFFICIENT_RESOURCES}
     */
    Endpoint createEndpoint(EndpointOptions options, ConnectionListener listener) throws RdmaException;

    /**
     * Accepts the request on the endpoint from {@link #createEndpoint}. The endpoint's IRD and ORD
     * are set to the given values before the peer learns of the acceptance (MS-SMBD 6.2). The
     * outcome arrives as {@link ConnectionListener#onEstablished} or {@link
     * ConnectionListener#onError}.
     *
     * @param endpoint the endpoint created for this request
     * @param privateData bytes for the peer, at most {@link ProviderCapabilities#maxPrivateData()};
     *        {@code null} for none
     * @param ird RDMA Reads from the peer to serve at once, 0 to {@link ProviderCapabilities#maxIrd()}
     * @param ord RDMA Reads towards the peer outstanding at once, 0 to {@link ProviderCapabilities#maxOrd()}
     * @throws RdmaException {@link RdmaStatus#INVALID_STATE} when already answered or for another
     *         request's endpoint, {@link RdmaStatus#INVALID_PARAMETER} for out-of-range values,
     *         {@link RdmaStatus#TIMEOUT} when the provider already gave up on the request
     */
    void accept(Endpoint endpoint, byte[] privateData, int ird, int ord) throws RdmaException;

    /**
     * Rejects the request. The peer's attempt fails with {@link RdmaStatus#CONNECTION_REFUSED}
     * and the private data given here. An endpoint created for the request is moved to
     * {@link EndpointState#DISCONNECTED} without events; the consumer still closes it.
     *
     * @param privateData bytes for the peer, or {@code null}
     * @throws RdmaException {@link RdmaStatus#INVALID_STATE} when already answered, {@link
     *         RdmaStatus#INVALID_PARAMETER} when the private data is too long
     */
    void reject(byte[] privateData) throws RdmaException;
}
