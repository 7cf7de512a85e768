package org.smbdirect.rdma;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Receives the connection events of one endpoint.
 *
 * <p>Guarantees: for an endpoint that begins connecting ({@link Endpoint#connect} or {@link
 * ConnectionRequest#accept}) the listener sees at most one {@link #onEstablished}, and then exactly
 * one terminal event, {@link #onDisconnected} or {@link #onError}; nothing after the terminal
 * event. An endpoint closed while {@link EndpointState#IDLE} sees no event. Events of one endpoint
 * are delivered in that order, never concurrently, on a provider thread, never from within a call
 * the consumer made. Connection events and completions travel separately: there is no ordering
 * between an event and the completions of the same endpoint. Handlers must not block; an
 * exception thrown by a handler is logged by the provider and otherwise ignored.
 */
@ConsumerType
public interface ConnectionListener {

    /**
     * The connection is established; every work request may now be posted. The peer's private
     * data is available from {@link Endpoint#peerPrivateData()}.
     *
     * @param endpoint the endpoint
     */
    void onEstablished(Endpoint endpoint);

    /**
     * The connection ended normally: disconnected by either side, or by the provider shutting
     * down. Outstanding work requests complete with {@link RdmaStatus#FLUSHED}.
     *
     * @param endpoint the endpoint
     */
    void onDisconnected(Endpoint endpoint);

    /**
     * The connection failed, or the connection attempt did not succeed. Outstanding work
     * requests complete with {@link RdmaStatus#FLUSHED} (the request that failed with its own
     * status). For a rejected attempt the status is {@link RdmaStatus#CONNECTION_REFUSED} and the
     * private data the peer sent with its rejection, if any, is in {@link
     * Endpoint#peerPrivateData()}.
     *
     * @param endpoint the endpoint
     * @param status why
     * @param reason a readable explanation
     */
    void onError(Endpoint endpoint, RdmaStatus status, String reason);
}
