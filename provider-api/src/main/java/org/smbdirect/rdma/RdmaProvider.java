package org.smbdirect.rdma;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * An RDMA provider: one adapter (device) of one RDMA implementation, the entry point of this API
 * (NDK_ADAPTER). Published as an OSGi service with the properties {@link #PROP_TYPE}, {@link
 * #PROP_NAME} and the capability properties of {@link ProviderCapabilities#toServiceProperties()};
 * without OSGi, obtained from an {@link RdmaProviderFactory}.
 *
 * <p>Everything created through a provider (completion queues, endpoints, listeners, regions)
 * belongs to it and works only with other objects of the same provider.
 *
 * <p>When the provider goes away (its bundle stops, or {@link #close()}), every endpoint it
 * carries ends with {@link ConnectionListener#onDisconnected}, outstanding work completes
 * {@link RdmaStatus#FLUSHED}, listeners stop, and every native and memory resource is released;
 * afterwards every method fails with {@link RdmaStatus#INVALID_STATE}.
 */
@ProviderType
public interface RdmaProvider extends AutoCloseable {

    /** Service property: the implementation, for example {@code sim} or {@code verbs} (String). */
    String PROP_TYPE = "provider.type";
    /** Service property: the adapter's name, unique per type, for example {@code rxe0} (String). */
    String PROP_NAME = "provider.name";
    /** Service property: {@link ProviderCapabilities#rdmaRead()} (Boolean). */
    String PROP_RDMA_READ = "provider.rdmaRead";
    /** Service property: {@link ProviderCapabilities#remoteInvalidate()} (Boolean). */
    String PROP_REMOTE_INVALIDATE = "provider.remoteInvalidate";
    /** Service property: {@link ProviderCapabilities#inlineLimit()} (Integer). */
    String PROP_INLINE_LIMIT = "provider.inlineLimit";
    /** Service property: {@link ProviderCapabilities#maxSge()} (Integer). */
    String PROP_MAX_SGE = "provider.maxSge";
    /** Service property: {@link ProviderCapabilities#maxRegionSize()} (Long). */
    String PROP_MAX_REGION_SIZE = "provider.maxRegionSize";
    /** Service property: {@link ProviderCapabilities#maxIrd()} (Integer). */
    String PROP_MAX_IRD = "provider.maxIrd";
    /** Service property: {@link ProviderCapabilities#maxOrd()} (Integer). */
    String PROP_MAX_ORD = "provider.maxOrd";
    /** Service property: {@link ProviderCapabilities#maxQueueDepth()} (Integer). */
    String PROP_MAX_QUEUE_DEPTH = "provider.maxQueueDepth";
    /** Service property: {@link ProviderCapabilities#maxCompletionQueueDepth()} (Integer). */
    String PROP_MAX_CQ_DEPTH = "provider.maxCompletionQueueDepth";
    /** Service property: {@link ProviderCapabilities#maxPrivateData()} (Integer). */
    String PROP_MAX_PRIVATE_DATA = "provider.maxPrivateData";
    /** Service property: {@link ProviderCapabilities#transportType()}, its display name (String). */
    String PROP_TRANSPORT = "provider.transport";
    /** Service property: {@link ProviderCapabilities#linkSpeed()}, bits per second, 0 unknown (Long). */
    String PROP_LINK_SPEED = "provider.linkSpeed";

    /**
     * The implementation type, the value of {@link #PROP_TYPE}.
     *
     * @return for example {@code sim} or {@code verbs}
     */
    String type();

    /**
     * The adapter's name, the value of {@link #PROP_NAME}.
     *
     * @return the name
     */
    String name();

    /**
     * What this provider can do.
     *
     * @return the capabilities
     */
    ProviderCapabilities capabilities();

    /**
     * The local addresses this provider can listen on and connect from.
     *
     * @return the addresses, at least one
     */
    List<InetAddress> addresses();

    /**
     * Creates a completion queue (NdkCreateCq).
     *
     * @param depth how many completions it holds, 1 to {@link
     *        ProviderCapabilities#maxCompletionQueueDepth()}
     * @param handler called when an arm is satisfied
     * @return the queue
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} for a bad depth, {@link
     *         RdmaStatus#INSUFFICIENT_RESOURCES}
     */
    CompletionQueue createCompletionQueue(int depth, CompletionNotificationHandler handler) throws RdmaException;

    /**
     * Creates an endpoint for an outgoing connection, in {@link EndpointState#IDLE}: register
     * memory and post receives on it, then {@link Endpoint#connect}.
     *
     * @param options queues (of this provider) and limits
     * @param listener receives the endpoint's connection events
     * @return the endpoint
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} for options beyond the
     *         capabilities or queues of another provider, {@link RdmaStatus#INSUFFICIENT_RESOURCES}
     */
    Endpoint createEndpoint(EndpointOptions options, ConnectionListener listener) throws RdmaException;

    /**
     * Listens for connection requests on a local address.
     *
     * @param local the address; port 0 asks the provider to choose one
     * @param handler receives the requests
     * @return the listener
     * @throws RdmaException {@link RdmaStatus#ADDRESS_IN_USE}, {@link RdmaStatus#INVALID_PARAMETER}
     *         for an address this provider cannot listen on
     */
    RdmaListener listen(InetSocketAddress local, ConnectionRequestHandler handler) throws RdmaException;

    /**
     * Shuts the provider down as described in the class description. Only the provider's owner
     * calls this: the bundle that registered the service, or the code that created it with an
     * {@link RdmaProviderFactory}. Idempotent.
     */
    @Override
    void close();
}
