package org.smbdirect.rdma;

/**
 * A request that could not be started. Thrown at call time; nothing was queued, no completion
 * will follow, and the endpoint's state is unchanged unless the status says it has ended.
 */
public class RdmaException extends Exception {
    private static final long serialVersionUID = 1L;

    /** The status of the failure, never SUCCESS. */
    private final RdmaStatus status;

    /**
     * Creates an exception.
     *
     * @param status why the request failed; never {@link RdmaStatus#SUCCESS}
     * @param message what was wrong, naming the offending argument or call
     */
    public RdmaException(RdmaStatus status, String message) {
        super(status + ": " + message);
        this.status = requireError(status);
    }

    /**
     * Creates an exception with a cause.
     *
     * @param status why the request failed; never {@link RdmaStatus#SUCCESS}
     * @param message what was wrong, naming the offending argument or call
     * @param cause the underlying failure
     */
    public RdmaException(RdmaStatus status, String message, Throwable cause) {
        super(status + ": " + message, cause);
        this.status = requireError(status);
    }

    private static RdmaStatus requireError(RdmaStatus status) {
        if (status == null || status == RdmaStatus.SUCCESS) {
            throw new IllegalArgumentException("an RdmaException needs an error status, not " + status);
        }
        return status;
    }

    /**
     * The status of the failure.
     *
     * @return the status, never {@link RdmaStatus#SUCCESS}
     */
    public RdmaStatus status() {
        return status;
    }
}
