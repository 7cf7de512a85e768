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

    /**
     * Whether to offer RDMA Read (devices all have it; off, reads and remote-read registrations
     * are refused).
     *
     * @return {@code true} to offer it
     */
    @AttributeDefinition(name = "RDMA Read", description = "Offer RDMA Read")
    boolean rdmaRead() default true;

    /**
     * Whether to use memory windows for remote access where the device has them, so that tokens
     * can be invalidated (send with invalidate, local invalidate). Off, the memory region's own
     * rkey is the token and invalidation is refused.
     *
     * @return {@code true} to use them
     */
    @AttributeDefinition(name = "Remote invalidate", description = "Use type 2 memory windows as tokens, so that "
            + "tokens can be invalidated")
    boolean remoteInvalidate() default true;

    /**
     * The most inline data to offer; -1 for what the device allows, 0 for none.
     *
     * @return bytes
     */
    @AttributeDefinition(name = "Inline limit", description = "Most bytes of inline data to offer; -1 for the "
            + "device's limit, 0 for none", min = "-1")
    int inlineLimit() default -1;

    /**
     * How many ended registrations each connection keeps for the next registration of the same
     * memory: memory regions that served a memory window (they grant no remote access of their
     * own) and windows left free by an invalidation. A kept region holds its buffer's memory.
     *
     * @return regions (and as many windows) per connection; 0 to keep none
     */
    @AttributeDefinition(name = "Registration cache", description = "Ended registrations kept per connection "
            + "for the next registration of the same memory (regions behind memory windows, free windows); "
            + "0 keeps none", min = "0")
    int registrationCache() default 16;

    /**
     * How long the completion thread keeps polling the completion queues for new completions
     * before it waits for the device's signal: busy polling, which saves the signal's system calls
     * and the thread's wake-up when completions follow each other closely, and keeps one core busy
     * while it polls. Read when the provider starts.
     *
     * @return microseconds, 0 (the default) to wait at once
     */
    @AttributeDefinition(name = "Completion spin (microseconds)", description = "How long the completion thread "
            + "polls the queues before it waits for the device's signal (busy polling; keeps a core busy while it "
            + "polls); 0 waits at once", min = "0", max = "100000")
    int completionSpinMicroseconds() default 0;
}
