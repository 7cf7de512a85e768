package org.smbdirect.rdma;

/** The life cycle of an {@link Endpoint}. States only move forward, in this order. */
public enum EndpointState {
    /** Created, not yet connecting: memory can be registered and receives posted. */
    IDLE,
    /** {@link Endpoint#connect} or {@link ConnectionRequest#accept} was called; no outcome yet. */
    CONNECTING,
    /** Established: every work request can be posted. */
    CONNECTED,
    /** The connection ended (disconnected, failed or refused); outstanding work was flushed. */
    DISCONNECTED,
    /** {@link Endpoint#close} released the endpoint and all its registrations. */
    CLOSED
}
