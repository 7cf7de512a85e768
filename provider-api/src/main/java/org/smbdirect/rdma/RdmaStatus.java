package org.smbdirect.rdma;

/**
 * The outcome of a work request, a connection attempt or a post-time check.
 *
 * <p>Every {@link CompletionResult} carries one; every {@link RdmaException} carries one that is
 * not {@link #SUCCESS}. A completion with any status but {@code SUCCESS} or {@code FLUSHED} means
 * the endpoint that produced it has ended (reliable-connection semantics: the first failed work
 * request moves the connection to the error state and everything after it is flushed).
 */
public enum RdmaStatus {
    /** The request completed. */
    SUCCESS("success"),
    /** The request was still outstanding when its endpoint disconnected or failed; it did nothing. */
    FLUSHED("flushed: the endpoint disconnected before the request ran"),
    /** The connection was lost or reset by the peer or the fabric. */
    CONNECTION_RESET("connection reset"),
    /** The peer rejected the connection request, or nobody listens at the address. */
    CONNECTION_REFUSED("connection refused"),
    /** The remote address cannot be reached on this provider's fabric. */
    UNREACHABLE("address unreachable"),
    /** A connection attempt or an operation did not finish in the provider's time limit. */
    TIMEOUT("timed out"),
    /**
     * An RDMA Read or Write named a remote token that is unknown, invalidated, deregistered,
     * registered on another connection, lacking the access right, or a range outside the region.
     */
    REMOTE_ACCESS_ERROR("remote access error: bad token, rights or bounds at the peer"),
    /** The peer could not process the request, for example a send larger than its posted receive. */
    REMOTE_INVALID_REQUEST("remote invalid request"),
    /** The peer failed while processing the request for a reason of its own. */
    REMOTE_OPERATION_ERROR("remote operation error"),
    /** A received message was longer than the receive buffers posted for it. */
    LOCAL_LENGTH_ERROR("local length error: message longer than the posted receive"),
    /**
     * A local scatter/gather element named memory outside its region, a region without the
     * required local access, or a deregistered or invalidated region.
     */
    LOCAL_PROTECTION_ERROR("local protection error: bad scatter/gather element"),
    /** The local provider could not carry out the request. */
    LOCAL_OPERATION_ERROR("local operation error"),
    /** A send arrived at a peer that had no receive posted. */
    RECEIVER_NOT_READY("receiver not ready: no receive posted at the peer"),
    /**
     * A token named for invalidation (local, or remote through send-and-invalidate) is not a
     * valid, invalidatable token of that connection.
     */
    INVALID_TOKEN("invalid memory token"),
    /** The endpoint is not connected (never was, or no longer is). */
    NOT_CONNECTED("endpoint not connected"),
    /** The call is not allowed in the object's current state, for example connecting twice. */
    INVALID_STATE("invalid state for this operation"),
    /** An argument is out of range, malformed, or conflicts with another. */
    INVALID_PARAMETER("invalid parameter"),
    /** A queue, a region table or memory is exhausted. */
    INSUFFICIENT_RESOURCES("insufficient resources"),
    /** The provider lacks the capability the request needs (see {@link ProviderCapabilities}). */
    NOT_SUPPORTED("not supported by this provider"),
    /** The local address is already being listened on. */
    ADDRESS_IN_USE("address in use"),
    /** More completions arrived than the completion queue can hold. */
    COMPLETION_QUEUE_OVERFLOW("completion queue overflow"),
    /** The device or its native library failed; the message names the call and the errno. */
    DEVICE_ERROR("device error");

    private final String description;

    RdmaStatus(String description) {
        this.description = description;
    }

    /**
     * A short human-readable description, suitable for logs and exception messages.
     *
     * @return the description
     */
    public String description() {
        return description;
    }

    /**
     * Tells whether this status is an error in the sense of {@link ArmType#ERRORS}: anything but
     * {@link #SUCCESS}.
     *
     * @return {@code true} unless this is {@code SUCCESS}
     */
    public boolean isError() {
        return this != SUCCESS;
    }
}
