package org.smbdirect.rdma;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * What a provider can do. Immutable; published also as service properties ({@link
 * #toServiceProperties()}) so that consumers can select a provider with a filter, for example
 * {@code (provider.rdmaRead=true)}.
 *
 * <p>A provider without a capability says so here and rejects the operations that need it with
 * {@link RdmaStatus#NOT_SUPPORTED}.
 */
public final class ProviderCapabilities {
    private final boolean rdmaRead;
    private final boolean remoteInvalidate;
    private final int inlineLimit;
    private final int maxSge;
    private final long maxRegionSize;
    private final int maxIrd;
    private final int maxOrd;
    private final int maxQueueDepth;
    private final int maxCompletionQueueDepth;
    private final int maxPrivateData;
    private final TransportType transportType;
    private final long linkSpeed;

    private ProviderCapabilities(Builder b) {
        this.rdmaRead = b.rdmaRead;
        this.remoteInvalidate = b.remoteInvalidate;
        this.inlineLimit = b.inlineLimit;
        this.maxSge = b.maxSge;
        this.maxRegionSize = b.maxRegionSize;
        this.maxIrd = b.maxIrd;
        this.maxOrd = b.maxOrd;
        this.maxQueueDepth = b.maxQueueDepth;
        this.maxCompletionQueueDepth = b.maxCompletionQueueDepth;
        this.maxPrivateData = b.maxPrivateData;
        this.transportType = b.transportType;
        this.linkSpeed = b.linkSpeed;
    }

    /**
     * Starts a description with conservative defaults: RDMA Read and remote invalidate
     * supported, no inline data, one element, 1 GiB regions, IRD/ORD 16, queue depth 1024,
     * completion queue depth 65536, 56 bytes of private data, transport RoCE.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Whether RDMA Read works: {@link Endpoint#postRead} and {@link Access#REMOTE_READ}.
     *
     * @return {@code true} when supported
     */
    public boolean rdmaRead() {
        return rdmaRead;
    }

    /**
     * Whether send-and-invalidate and local invalidate work.
     *
     * @return {@code true} when supported
     */
    public boolean remoteInvalidate() {
        return remoteInvalidate;
    }

    /**
     * The most bytes an endpoint can be configured to carry inline ({@link RequestFlags#INLINE}).
     *
     * @return the inline limit, 0 when inline requests are not supported
     */
    public int inlineLimit() {
        return inlineLimit;
    }

    /**
     * The most scatter/gather elements an endpoint can be configured for, per request.
     *
     * @return the element limit
     */
    public int maxSge() {
        return maxSge;
    }

    /**
     * The most bytes one registration may cover.
     *
     * @return the region size limit
     */
    public long maxRegionSize() {
        return maxRegionSize;
    }

    /**
     * The largest incoming RDMA Read depth an endpoint can offer.
     *
     * @return the IRD limit
     */
    public int maxIrd() {
        return maxIrd;
    }

    /**
     * The largest outgoing RDMA Read depth an endpoint can use.
     *
     * @return the ORD limit
     */
    public int maxOrd() {
        return maxOrd;
    }

    /**
     * The largest send or receive queue depth of an endpoint.
     *
     * @return the queue depth limit
     */
    public int maxQueueDepth() {
        return maxQueueDepth;
    }

    /**
     * The largest completion queue depth.
     *
     * @return the completion queue depth limit
     */
    public int maxCompletionQueueDepth() {
        return maxCompletionQueueDepth;
    }

    /**
     * The most bytes of private data in a connect, accept or reject.
     *
     * @return the private data limit
     */
    public int maxPrivateData() {
        return maxPrivateData;
    }

    /**
     * The RDMA transport: what private data looks like on arrival, which port SMB Direct uses by
     * default, and how the connection manager reports IRD and ORD.
     *
     * @return the transport type
     */
    public TransportType transportType() {
        return transportType;
    }

    /**
     * The speed of the adapter's link, as SMB3 multichannel reports and compares it
     * (FSCTL_QUERY_NETWORK_INTERFACE_INFO's LinkSpeed).
     *
     * @return bits per second, 0 when unknown
     * @since 1.1
     */
    public long linkSpeed() {
        return linkSpeed;
    }

    /**
     * The capabilities as OSGi service properties, under the keys defined in {@link RdmaProvider}.
     *
     * @return a new mutable map
     */
    public Map<String, Object> toServiceProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(RdmaProvider.PROP_RDMA_READ, rdmaRead);
        p.put(RdmaProvider.PROP_REMOTE_INVALIDATE, remoteInvalidate);
        p.put(RdmaProvider.PROP_INLINE_LIMIT, inlineLimit);
        p.put(RdmaProvider.PROP_MAX_SGE, maxSge);
        p.put(RdmaProvider.PROP_MAX_REGION_SIZE, maxRegionSize);
        p.put(RdmaProvider.PROP_MAX_IRD, maxIrd);
        p.put(RdmaProvider.PROP_MAX_ORD, maxOrd);
        p.put(RdmaProvider.PROP_MAX_QUEUE_DEPTH, maxQueueDepth);
        p.put(RdmaProvider.PROP_MAX_CQ_DEPTH, maxCompletionQueueDepth);
        p.put(RdmaProvider.PROP_MAX_PRIVATE_DATA, maxPrivateData);
        p.put(RdmaProvider.PROP_TRANSPORT, transportType.displayName());
        p.put(RdmaProvider.PROP_LINK_SPEED, linkSpeed);
        return p;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof ProviderCapabilities)) {
            return false;
        }
        ProviderCapabilities c = (ProviderCapabilities) o;
        return rdmaRead == c.rdmaRead && remoteInvalidate == c.remoteInvalidate && inlineLimit == c.inlineLimit
                && maxSge == c.maxSge && maxRegionSize == c.maxRegionSize && maxIrd == c.maxIrd && maxOrd == c.maxOrd
                && maxQueueDepth == c.maxQueueDepth && maxCompletionQueueDepth == c.maxCompletionQueueDepth
                && maxPrivateData == c.maxPrivateData && transportType == c.transportType && linkSpeed == c.linkSpeed;
    }

    @Override
    public int hashCode() {
        return Objects.hash(rdmaRead, remoteInvalidate, inlineLimit, maxSge, maxRegionSize, maxIrd, maxOrd,
                maxQueueDepth, maxCompletionQueueDepth, maxPrivateData, transportType, linkSpeed);
    }

    @Override
    public String toString() {
        return "ProviderCapabilities" + toServiceProperties();
    }

    /** Builds {@link ProviderCapabilities}. */
    public static final class Builder {
        private boolean rdmaRead = true;
        private boolean remoteInvalidate = true;
        private int inlineLimit;
        private int maxSge = 1;
        private long maxRegionSize = 1L << 30;
        private int maxIrd = 16;
        private int maxOrd = 16;
        private int maxQueueDepth = 1024;
        private int maxCompletionQueueDepth = 65536;
        private int maxPrivateData = 56;
        private TransportType transportType = TransportType.ROCE;
        private long linkSpeed;

        private Builder() {
        }

        /**
         * Sets {@link ProviderCapabilities#rdmaRead()}.
         *
         * @param supported whether RDMA Read works
         * @return this builder
         */
        public Builder rdmaRead(boolean supported) {
            this.rdmaRead = supported;
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#remoteInvalidate()}.
         *
         * @param supported whether invalidation works
         * @return this builder
         */
        public Builder remoteInvalidate(boolean supported) {
            this.remoteInvalidate = supported;
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#inlineLimit()}.
         *
         * @param bytes 0 or more
         * @return this builder
         */
        public Builder inlineLimit(int bytes) {
            this.inlineLimit = atLeast(bytes, 0, "inlineLimit");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxSge()}.
         *
         * @param count 1 or more
         * @return this builder
         */
        public Builder maxSge(int count) {
            this.maxSge = atLeast(count, 1, "maxSge");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxRegionSize()}.
         *
         * @param bytes 1 or more
         * @return this builder
         */
        public Builder maxRegionSize(long bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("maxRegionSize must be >= 1, was " + bytes);
            }
            this.maxRegionSize = bytes;
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxIrd()}.
         *
         * @param depth 0 or more
         * @return this builder
         */
        public Builder maxIrd(int depth) {
            this.maxIrd = atLeast(depth, 0, "maxIrd");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxOrd()}.
         *
         * @param depth 0 or more
         * @return this builder
         */
        public Builder maxOrd(int depth) {
            this.maxOrd = atLeast(depth, 0, "maxOrd");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxQueueDepth()}.
         *
         * @param depth 1 or more
         * @return this builder
         */
        public Builder maxQueueDepth(int depth) {
            this.maxQueueDepth = atLeast(depth, 1, "maxQueueDepth");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxCompletionQueueDepth()}.
         *
         * @param depth 1 or more
         * @return this builder
         */
        public Builder maxCompletionQueueDepth(int depth) {
            this.maxCompletionQueueDepth = atLeast(depth, 1, "maxCompletionQueueDepth");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#transportType()}.
         *
         * @param type the transport
         * @return this builder
         */
        public Builder transportType(TransportType type) {
            this.transportType = Objects.requireNonNull(type, "transportType");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#maxPrivateData()}.
         *
         * @param bytes 0 or more
         * @return this builder
         */
        public Builder maxPrivateData(int bytes) {
            this.maxPrivateData = atLeast(bytes, 0, "maxPrivateData");
            return this;
        }

        /**
         * Sets {@link ProviderCapabilities#linkSpeed()}.
         *
         * @param bitsPerSecond 0 (unknown) or more
         * @return this builder
         * @since 1.1
         */
        public Builder linkSpeed(long bitsPerSecond) {
            if (bitsPerSecond < 0) {
                throw new IllegalArgumentException("linkSpeed must not be negative, was " + bitsPerSecond);
            }
            this.linkSpeed = bitsPerSecond;
            return this;
        }

        /**
         * Builds the capabilities.
         *
         * @return the immutable capabilities
         */
        public ProviderCapabilities build() {
            return new ProviderCapabilities(this);
        }

        private static int atLeast(int value, int min, String name) {
            if (value < min) {
                throw new IllegalArgumentException(name + " must be >= " + min + ", was " + value);
            }
            return value;
        }
    }
}
