package org.smbdirect.rdma.tck;

import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.RdmaListener;

/** A test connection: the active {@link #client()} side and the passive {@link #server()} side. */
public final class Link {
    private final Side client;
    private final Side server;
    private final RdmaListener listener;
    private final ConnectionRequest request;

    Link(Side client, Side server, RdmaListener listener, ConnectionRequest request) {
        this.client = client;
        this.server = server;
        this.listener = listener;
        this.request = request;
    }

    /**
     * The side that connected.
     *
     * @return the active side
     */
    public Side client() {
        return client;
    }

    /**
     * The side that accepted.
     *
     * @return the passive side
     */
    public Side server() {
        return server;
    }

    /**
     * The listener the server side accepted on.
     *
     * @return the listener
     */
    public RdmaListener listener() {
        return listener;
    }

    /**
     * The request the server side accepted.
     *
     * @return the request
     */
    public ConnectionRequest request() {
        return request;
    }
}
