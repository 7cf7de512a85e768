package org.smbdirect.rdma.sim.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;
import org.osgi.service.metatype.annotations.Option;

/**
 * The typed configuration of a simulated provider: its OSGi metatype (PID {@value #PID}, also usable
 * as factory configurations for several providers) and, through {@link SimSettings#fromMap}, the
 * keys accepted by the {@link java.util.ServiceLoader} factory. An underscore in a method name is a
 * dot in the key ({@code capture_path} is {@code capture.path}). The defaults here are the only
 * defaults; the README's table lists them with their ranges.
 */
@ObjectClassDefinition(id = SimConfig.PID, name = "SMB Direct simulated RDMA provider",
        description = "An in-JVM RDMA fabric with verbs/NDK reliable-connection semantics, fault injection and packet capture.")
public @interface SimConfig {
    /** The configuration PID, and the factory PID for several providers. */
    String PID = "org.smbdirect.rdma.sim";

    /**
     * The provider's name ({@code provider.name}); empty picks {@code sim<N>}.
     *
     * @return the name
     */
    @AttributeDefinition(name = "Name", description = "provider.name; empty picks sim<N>, unique in the JVM", required = false)
    String name() default "";

    /**
     * The fabric (namespace) the provider joins; providers on the same fabric can connect.
     *
     * @return the fabric name
     */
    @AttributeDefinition(name = "Fabric", description = "Providers on the same fabric reach each other")
    String fabric() default "default";

    /**
     * The provider's IPv4 address on its fabric; empty picks the next free one of 10.0.0.0/16.
     *
     * @return the address literal or empty
     */
    @AttributeDefinition(name = "Address", description = "IPv4 literal, unique on the fabric; empty picks 10.0.x.y", required = false)
    String address() default "";

    /**
     * Whether RDMA Read is supported.
     *
     * @return the capability
     */
    @AttributeDefinition(name = "RDMA Read", description = "provider.rdmaRead")
    boolean rdmaRead() default true;

    /**
     * Whether send-and-invalidate and local invalidate are supported.
     *
     * @return the capability
     */
    @AttributeDefinition(name = "Remote invalidate", description = "provider.remoteInvalidate")
    boolean remoteInvalidate() default true;

    /**
     * The inline limit in bytes, 0 to 4096.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Inline limit", description = "provider.inlineLimit, bytes; 0 disables inline requests", min = "0", max = "4096")
    int inlineLimit() default 256;

    /**
     * The most scatter/gather elements per request, 1 to 64.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max SGEs", description = "provider.maxSge", min = "1", max = "64")
    int maxSge() default 4;

    /**
     * The largest region in bytes, 1 to 2147483647.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max region size", description = "provider.maxRegionSize, bytes", min = "1", max = "2147483647")
    long maxRegionSize() default 1L << 30;

    /**
     * The largest IRD, 0 to 255.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max IRD", description = "provider.maxIrd", min = "0", max = "255")
    int maxIrd() default 16;

    /**
     * The largest ORD, 0 to 255.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max ORD", description = "provider.maxOrd", min = "0", max = "255")
    int maxOrd() default 16;

    /**
     * The largest send or receive queue depth, 1 to 65536.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max queue depth", description = "provider.maxQueueDepth", min = "1", max = "65536")
    int maxQueueDepth() default 4096;

    /**
     * The largest completion queue depth, 1 to 4194304.
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max completion queue depth", description = "provider.maxCompletionQueueDepth", min = "1", max = "4194304")
    int maxCompletionQueueDepth() default 65536;

    /**
     * The RDMA transport this provider behaves as: {@code RoCE} (default) and {@code InfiniBand}
     * zero-pad connection private data as rdma_cm does (56 bytes with a request, 196 with an
     * acceptance, 148 with a rejection), {@code iWARP} delivers it exactly; the transport also
     * decides SMB Direct's default port (445, or 5445 on iWARP).
     *
     * @return the transport's name
     */
    @AttributeDefinition(name = "Transport", description = "provider.transport: RoCE, InfiniBand or iWARP",
            options = {@Option(label = "RoCE", value = "RoCE"), @Option(label = "InfiniBand", value = "InfiniBand"),
                @Option(label = "iWARP", value = "iWARP")})
    String transport() default "RoCE";

    /**
     * The most private data bytes, 0 to 56 (what an InfiniBand CM request carries after the IP CM header).
     *
     * @return the limit
     */
    @AttributeDefinition(name = "Max private data", description = "provider.maxPrivateData, bytes", min = "0", max = "56")
    int maxPrivateData() default 56;

    /**
     * The link speed the provider reports (provider.linkSpeed, what SMB3 multichannel compares), in
     * megabits per second, 0 (unknown) to 10000000.
     *
     * @return the speed
     */
    @AttributeDefinition(name = "Link speed (Mbit/s)", description = "provider.linkSpeed, reported in bit/s; 0 unknown",
            min = "0", max = "10000000")
    int linkSpeedMbps() default 100000;

    /**
     * The number of fabric threads, 1 to 64.
     *
     * @return the thread count
     */
    @AttributeDefinition(name = "Fabric threads", description = "Threads that run the fabric for this provider", min = "1", max = "64")
    int fabricThreads() default 2;

    /**
     * How long a connection request may stay unanswered before it is rejected, 1 to 3600000 ms.
     *
     * @return the limit in milliseconds
     */
    @AttributeDefinition(name = "Connect timeout (ms)", description = "Unanswered requests are rejected after this; the peer sees TIMEOUT", min = "1", max = "3600000")
    int connectTimeoutMillis() default 30000;

    /**
     * Whether the latency and bandwidth model is on.
     *
     * @return {@code true} to delay deliveries and completions
     */
    @AttributeDefinition(name = "Latency model", description = "Delay deliveries by latency and size/bandwidth")
    boolean latency_enabled() default false;

    /**
     * One-way latency in microseconds, 0 to 10000000.
     *
     * @return the latency
     */
    @AttributeDefinition(name = "Latency (us)", description = "One-way latency of the latency model", min = "0", max = "10000000")
    int latency_microseconds() default 5;

    /**
     * Link bandwidth in megabits per second, 1 to 10000000.
     *
     * @return the bandwidth
     */
    @AttributeDefinition(name = "Bandwidth (Mbit/s)", description = "Per-connection, per-direction bandwidth of the latency model", min = "1", max = "10000000")
    int latency_bandwidthMbps() default 100000;

    /**
     * The seed of every injected fault decision.
     *
     * @return the seed
     */
    @AttributeDefinition(name = "Fault seed", description = "Same seed and same workload give the same faults")
    long faults_seed() default 1L;

    /**
     * Resets each connection after this many operations, 0 for never.
     *
     * @return the count
     */
    @AttributeDefinition(name = "Disconnect after N operations", description = "0 = off", min = "0")
    int faults_disconnectAfterOperations() default 0;

    /**
     * Probability that an operation resets its connection.
     *
     * @return a probability, 0 to 1
     */
    @AttributeDefinition(name = "Disconnect probability", description = "Per operation, 0 to 1", min = "0", max = "1")
    double faults_disconnectProbability() default 0.0;

    /**
     * Probability that a registration fails with INSUFFICIENT_RESOURCES.
     *
     * @return a probability, 0 to 1
     */
    @AttributeDefinition(name = "Registration failure probability", description = "0 to 1", min = "0", max = "1")
    double faults_registrationFailureProbability() default 0.0;

    /**
     * Makes every Nth registration fail with INSUFFICIENT_RESOURCES, 0 for never.
     *
     * @return N
     */
    @AttributeDefinition(name = "Fail every Nth registration", description = "0 = off", min = "0")
    int faults_registrationFailureEvery() default 0;

    /**
     * Probability that a completion is delayed by {@link #faults_delayMillis()}.
     *
     * @return a probability, 0 to 1
     */
    @AttributeDefinition(name = "Delayed completion probability", description = "0 to 1", min = "0", max = "1")
    double faults_delayProbability() default 0.0;

    /**
     * The delay of a delayed completion, 0 to 60000 ms.
     *
     * @return the delay in milliseconds
     */
    @AttributeDefinition(name = "Completion delay (ms)", min = "0", max = "60000")
    int faults_delayMillis() default 10;

    /**
     * Probability that a send finds its receiver not ready although a receive is posted.
     *
     * @return a probability, 0 to 1
     */
    @AttributeDefinition(name = "Receiver-not-ready probability", description = "Per send, 0 to 1", min = "0", max = "1")
    double faults_receiverNotReadyProbability() default 0.0;

    /**
     * Whether every operation is written to a pcap file.
     *
     * @return {@code true} to capture
     */
    @AttributeDefinition(name = "Capture", description = "Write a RoCEv2 pcap of every operation")
    boolean capture_enabled() default false;

    /**
     * The capture file; relative paths resolve against the working directory.
     *
     * @return the path
     */
    @AttributeDefinition(name = "Capture file", description = "pcap path")
    String capture_path() default "smbdirect-sim.pcap";

    /**
     * The capture file's size bound in bytes; frames beyond it are counted and dropped.
     *
     * @return the bound, at least 1024
     */
    @AttributeDefinition(name = "Capture size bound (bytes)", min = "1024")
    long capture_maxFileBytes() default 64L << 20;

    /**
     * The most bytes kept of each frame, 64 to 262144.
     *
     * @return the snap length
     */
    @AttributeDefinition(name = "Capture snap length", min = "64", max = "262144")
    int capture_snapLength() default 65535;

    /**
     * The path MTU at which messages are cut into packets in the capture.
     *
     * @return 256, 512, 1024, 2048 or 4096
     */
    @AttributeDefinition(name = "Capture MTU", options = {
        @Option(label = "256", value = "256"), @Option(label = "512", value = "512"),
        @Option(label = "1024", value = "1024"), @Option(label = "2048", value = "2048"),
        @Option(label = "4096", value = "4096")})
    int capture_mtu() default 4096;
}
