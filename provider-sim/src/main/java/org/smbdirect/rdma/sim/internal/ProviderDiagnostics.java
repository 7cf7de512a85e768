package org.smbdirect.rdma.sim.internal;

/**
 * What a running simulated provider holds, published as a JMX MBean by {@link
 * SimProviderComponent} under {@code org.smbdirect.rdma.sim:type=SimProvider,name="<name>"} for
 * as long as the provider's service is registered. Every count is zero once the provider's users
 * have closed what they made; a count that only grows is a leak.
 */
public interface ProviderDiagnostics {

    /**
     * The provider's name ({@code provider.name}).
     *
     * @return the name
     */
    String getName();

    /**
     * The fabric the provider is on.
     *
     * @return the fabric's name
     */
    String getFabric();

    /**
     * Endpoints created and not yet closed (each holds its queues and outstanding requests).
     *
     * @return the number of live endpoints
     */
    int getEndpoints();

    /**
     * Memory regions registered and not yet deregistered, on all endpoints.
     *
     * @return the number of live registrations
     */
    int getRegions();

    /**
     * Completion queues created and not yet closed.
     *
     * @return the number of live completion queues
     */
    int getCompletionQueues();

    /**
     * Listeners created and not yet closed.
     *
     * @return the number of live listeners
     */
    int getListeners();
}
