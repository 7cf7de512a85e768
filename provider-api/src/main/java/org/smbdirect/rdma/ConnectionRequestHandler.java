package org.smbdirect.rdma;

import org.osgi.annotation.versioning.ConsumerType;

/** Receives the connection requests arriving at an {@link RdmaListener}. */
@ConsumerType
@FunctionalInterface
public interface ConnectionRequestHandler {

    /**
     * A peer asks to connect. The handler answers with {@link ConnectionRequest#accept} or
     * {@link ConnectionRequest#reject}, now or later from any thread. Called on a provider thread,
     * one request at a time per listener; must not block. An exception thrown here rejects the
     * request.
     *
     * @param request the request
     */
    void onConnectionRequest(ConnectionRequest request);
}
