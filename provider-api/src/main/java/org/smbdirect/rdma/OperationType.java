package org.smbdirect.rdma;

/** The kind of work request a {@link CompletionResult} reports. */
public enum OperationType {
    /** A send or send-and-invalidate posted with {@link Endpoint#postSend}. */
    SEND,
    /** A receive posted with {@link Endpoint#postReceive}, filled by a peer's send. */
    RECEIVE,
    /** An RDMA Read posted with {@link Endpoint#postRead}. */
    READ,
    /** An RDMA Write posted with {@link Endpoint#postWrite}. */
    WRITE,
    /** A local invalidate posted with {@link Endpoint#postInvalidate}. */
    INVALIDATE
}
