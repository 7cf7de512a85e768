package org.smbdirect.rdma.verbs.internal;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaProvider;

/** What the device tests may read of a verbs endpoint's internals. */
public final class EndpointProbe {
    private EndpointProbe() {
    }

    /**
     * How many times the endpoint handed send-queue requests to its device ({@code ibv_post_send},
     * each a system call on Soft-RoCE).
     *
     * @param endpoint an endpoint of the verbs provider
     * @return the count since the endpoint was created
     */
    public static long postSendCalls(Endpoint endpoint) {
        return ((VerbsEndpoint) endpoint).sends.postSendCalls();
    }

    /**
     * The same, summed over every live endpoint of a verbs provider.
     *
     * @param provider a verbs provider
     * @return the sum over its endpoints not yet released
     */
    public static long postSendCalls(RdmaProvider provider) {
        return ((VerbsProvider) provider).postSendCalls();
    }
}
