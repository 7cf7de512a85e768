package org.smbdirect.rdma.verbs.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * Configuration of the verbs provider (PID {@code org.smbdirect.rdma.verbs}). The same keys, with
 * the same defaults, configure providers made by {@link VerbsProviderFactory} without OSGi.
 */
@ObjectClassDefinition(id = VerbsConfiguration.PID, name = "SMB Direct verbs RDMA provider",
        description = "RDMA providers over libibverbs/librdmacm, one per RDMA device")
public @interface VerbsConfiguration {

    /** The configuration PID. */
    String PID = "org.smbdirect.rdma.verbs";

    /**
     * Which devices to publish.
     *
     * @return device names; empty for every device that has an IPv4 address
     */
    @AttributeDefinition(name = "Devices", description = "Names of the RDMA devices to publish, for example rxe0; "
            + "empty for all", required = false)
    String[] devices() default {};

    /**
     * Time limit of rdma_cm address and route resolution when connecting.
     *
     * @return milliseconds
     */
    @AttributeDefinition(name = "Resolve timeout", description = "Milliseconds allowed for address and route "
            + "resolution", min = "1")
    int resolveTimeoutMillis() default 5000;

    /**
     * How long a connection request may stay unanswered before the provider rejects it.
     *
     * @return milliseconds
     */
    @AttributeDefinition(name = "Connection request timeout", description = "Milliseconds after which an "
            + "unanswered connection request is rejected", min = "1")
    int connectionRequestTimeoutMillis() default 10000;

    /**
     * Transport retries before a request fails (rdma_conn_param.retry_count).
     *
     * @return 0 to 7
     */
    @AttributeDefinition(name = "Retry count", description = "Transport retries, 0 to 7", min = "0", max = "7")
    int retryCount() default 7;

    /**
     * How long closing a provider waits for outstanding requests to be flushed.
     *
     * @return milliseconds
     */
    @AttributeDefinition(name = "Close timeout", description = "Milliseconds a provider shutdown waits for "
            + "outstanding work to be flushed", min = "0")
    int closeTimeoutMillis() default 5000;
}
