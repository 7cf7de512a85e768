package org.smbdirect.rdma;

/**
 * One completed work request, as returned by {@link CompletionQueue#getResults} (NDK_RESULT) and
 * {@link CompletionQueue#getResultsEx} (NDK_RESULT_EX).
 *
 * <p>Results are mutable holders: the consumer allocates an array of them once and the provider
 * fills them on each call, so that polling allocates nothing.
 */
public final class CompletionResult {
    private Object requestContext;
    private Endpoint endpoint;
    private RdmaStatus status = RdmaStatus.SUCCESS;
    private OperationType type;
    private int bytesTransferred;
    private boolean solicited;
    private boolean tokenInvalidated;
    private int invalidatedToken;

    /** Creates an empty result holder. */
    public CompletionResult() {
    }

    /**
     * Fills this holder; called by providers.
     *
     * @param requestContext the context the request was posted with
     * @param endpoint the endpoint the request was posted on
     * @param type the kind of request
     * @param status its outcome
     * @param bytesTransferred bytes received (receives), read (reads), or sent/written
     * @param solicited whether a receive completed for a send with {@link RequestFlags#SOLICIT_EVENT}
     * @param tokenInvalidated whether the peer's send invalidated a local token (extended form only)
     * @param invalidatedToken that token, meaningful only when {@code tokenInvalidated}
     * @return this holder
     */
    public CompletionResult set(Object requestContext, Endpoint endpoint, OperationType type, RdmaStatus status,
            int bytesTransferred, boolean solicited, boolean tokenInvalidated, int invalidatedToken) {
        this.requestContext = requestContext;
        this.endpoint = endpoint;
        this.type = type;
        this.status = status;
        this.bytesTransferred = bytesTransferred;
        this.solicited = solicited;
        this.tokenInvalidated = tokenInvalidated;
        this.invalidatedToken = tokenInvalidated ? invalidatedToken : 0;
        return this;
    }

    /**
     * The context object given when the request was posted (may be {@code null}).
     *
     * @return the request context
     */
    public Object requestContext() {
        return requestContext;
    }

    /**
     * The endpoint the request was posted on; a completion queue may serve many endpoints.
     *
     * @return the endpoint
     */
    public Endpoint endpoint() {
        return endpoint;
    }

    /**
     * The kind of request.
     *
     * @return the operation type
     */
    public OperationType type() {
        return type;
    }

    /**
     * The outcome.
     *
     * @return the status
     */
    public RdmaStatus status() {
        return status;
    }

    /**
     * For a successful receive, the length of the message placed in the receive's buffers; for a
     * successful read, write or send, the number of bytes moved. Zero for failures.
     *
     * @return the byte count
     */
    public int bytesTransferred() {
        return bytesTransferred;
    }

    /**
     * Whether this receive completed for a send posted with {@link RequestFlags#SOLICIT_EVENT}.
     * Verbs work completions do not carry this, so a provider over verbs always reports {@code
     * false}; its {@link ArmType#SOLICITED} notifications still follow the solicited sends.
     *
     * @return {@code true} for a solicited receive, where the provider can tell
     */
    public boolean solicited() {
        return solicited;
    }

    /**
     * Extended form only: whether the peer's send invalidated a local token when this receive
     * completed. Always {@code false} in results from {@link CompletionQueue#getResults}, although
     * the token is invalidated all the same.
     *
     * @return {@code true} when {@link #invalidatedToken()} is meaningful
     */
    public boolean tokenInvalidated() {
        return tokenInvalidated;
    }

    /**
     * Extended form only: the local token the peer invalidated with this receive.
     *
     * @return the token, or 0 when {@link #tokenInvalidated()} is {@code false}
     */
    public int invalidatedToken() {
        return invalidatedToken;
    }

    @Override
    public String toString() {
        return "CompletionResult[" + type + " " + status + ", bytes=" + bytesTransferred
                + (solicited ? ", solicited" : "")
                + (tokenInvalidated ? ", invalidated=0x" + Integer.toHexString(invalidatedToken) : "")
                + ", context=" + requestContext + "]";
    }
}
