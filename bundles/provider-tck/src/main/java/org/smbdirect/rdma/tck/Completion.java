package org.smbdirect.rdma.tck;

import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;

/** An immutable copy of a {@link CompletionResult}, so that tests can keep what they polled. */
public final class Completion {
    private final Object context;
    private final Endpoint endpoint;
    private final OperationType type;
    private final RdmaStatus status;
    private final int bytes;
    private final boolean solicited;
    private final boolean tokenInvalidated;
    private final int invalidatedToken;

    private Completion(CompletionResult r) {
        context = r.requestContext();
        endpoint = r.endpoint();
        type = r.type();
        status = r.status();
        bytes = r.bytesTransferred();
        solicited = r.solicited();
        tokenInvalidated = r.tokenInvalidated();
        invalidatedToken = r.invalidatedToken();
    }

    /**
     * Copies a result.
     *
     * @param r the provider's result holder
     * @return the copy
     */
    public static Completion of(CompletionResult r) {
        return new Completion(r);
    }

    /**
     * See {@link CompletionResult#requestContext()}.
     *
     * @return the request context
     */
    public Object context() {
        return context;
    }

    /**
     * See {@link CompletionResult#endpoint()}.
     *
     * @return the endpoint
     */
    public Endpoint endpoint() {
        return endpoint;
    }

    /**
     * See {@link CompletionResult#type()}.
     *
     * @return the operation type
     */
    public OperationType type() {
        return type;
    }

    /**
     * See {@link CompletionResult#status()}.
     *
     * @return the status
     */
    public RdmaStatus status() {
        return status;
    }

    /**
     * See {@link CompletionResult#bytesTransferred()}.
     *
     * @return the byte count
     */
    public int bytes() {
        return bytes;
    }

    /**
     * See {@link CompletionResult#solicited()}.
     *
     * @return whether the receive was solicited
     */
    public boolean solicited() {
        return solicited;
    }

    /**
     * See {@link CompletionResult#tokenInvalidated()}.
     *
     * @return whether a token was reported invalidated
     */
    public boolean tokenInvalidated() {
        return tokenInvalidated;
    }

    /**
     * See {@link CompletionResult#invalidatedToken()}.
     *
     * @return the token
     */
    public int invalidatedToken() {
        return invalidatedToken;
    }

    @Override
    public String toString() {
        return type + " " + status + " bytes=" + bytes + (solicited ? " solicited" : "")
                + (tokenInvalidated ? " invalidated=0x" + Integer.toHexString(invalidatedToken) : "") + " ctx=" + context;
    }
}
