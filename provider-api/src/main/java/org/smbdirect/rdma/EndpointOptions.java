package org.smbdirect.rdma;

import java.net.InetAddress;
import java.util.Objects;

/**
 * The queues and limits of a new {@link Endpoint} (the queue-pair attributes). Immutable; build
 * one with {@link #builder(CompletionQueue, CompletionQueue)}.
 *
 * <p>The provider checks the values against its {@link ProviderCapabilities} when the endpoint is
 * created and rejects values beyond them with {@link RdmaStatus#INVALID_PARAMETER}.
 */
public final class EndpointOptions {
    private final CompletionQueue sendQueue;
    private final CompletionQueue receiveQueue;
    private final int sendQueueDepth;
    private final int receiveQueueDepth;
    private final int maxSendSge;
    private final int maxReceiveSge;
    private final int inlineThreshold;
    private final int rnrRetryCount;
    private final InetAddress localAddress;

    private EndpointOptions(Builder b) {
        this.sendQueue = b.sendQueue;
        this.receiveQueue = b.receiveQueue;
        this.sendQueueDepth = b.sendQueueDepth;
        this.receiveQueueDepth = b.receiveQueueDepth;
        this.maxSendSge = b.maxSendSge;
        this.maxReceiveSge = b.maxReceiveSge;
        this.inlineThreshold = b.inlineThreshold;
        this.rnrRetryCount = b.rnrRetryCount;
        this.localAddress = b.localAddress;
    }

    /**
     * Starts options for an endpoint whose send-side and receive-side completions go to the given
     * queues (they may be the same queue, and may be shared with other endpoints of the same
     * provider).
     *
     * @param sendQueue receives completions of sends, reads, writes and invalidates
     * @param receiveQueue receives completions of receives
     * @return a builder with defaults: depths 64, one scatter/gather element, no inline data, no RNR retry
     */
    public static Builder builder(CompletionQueue sendQueue, CompletionQueue receiveQueue) {
        return new Builder(sendQueue, receiveQueue);
    }

    /**
     * The completion queue for sends, RDMA Reads, RDMA Writes and local invalidates.
     *
     * @return the send completion queue
     */
    public CompletionQueue sendQueue() {
        return sendQueue;
    }

    /**
     * The completion queue for receives.
     *
     * @return the receive completion queue
     */
    public CompletionQueue receiveQueue() {
        return receiveQueue;
    }

    /**
     * How many send-side requests (sends, reads, writes, invalidates) may be outstanding at once;
     * a post beyond it fails with {@link RdmaStatus#INSUFFICIENT_RESOURCES}.
     *
     * @return the send queue depth
     */
    public int sendQueueDepth() {
        return sendQueueDepth;
    }

    /**
     * How many receives may be posted at once; a post beyond it fails with {@link
     * RdmaStatus#INSUFFICIENT_RESOURCES}.
     *
     * @return the receive queue depth
     */
    public int receiveQueueDepth() {
        return receiveQueueDepth;
    }

    /**
     * The most scatter/gather elements in one send, read or write (inline requests excepted).
     *
     * @return the send-side element limit
     */
    public int maxSendSge() {
        return maxSendSge;
    }

    /**
     * The most scatter/gather elements in one receive.
     *
     * @return the receive element limit
     */
    public int maxReceiveSge() {
        return maxReceiveSge;
    }

    /**
     * The most bytes one {@link RequestFlags#INLINE} request may carry; 0 disables inline requests.
     *
     * @return the inline threshold
     */
    public int inlineThreshold() {
        return inlineThreshold;
    }

    /**
     * How often a send that finds no receive posted at the peer is retried before it fails with
     * {@link RdmaStatus#RECEIVER_NOT_READY} (rdma_cm's {@code rnr_retry_count}): 0 fails at once,
     * 1 to 6 retry that many times after the receiver-not-ready timer, 7 retries until a receive is
     * posted or the connection ends. Windows and Linux SMB Direct peers connect with 7.
     *
     * @return 0 to 7
     */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * The local address an active endpoint connects from: one of {@link RdmaProvider#addresses()},
     * which must be of the peer's address family (an IPv6 peer needs an IPv6 local address). The
     * provider refuses another address with {@link RdmaStatus#INVALID_PARAMETER} when the endpoint
     * is created. Passive endpoints take the address the request arrived on and ignore it.
     *
     * @return the address, or {@code null} for the provider's first address
     */
    public InetAddress localAddress() {
        return localAddress;
    }

    @Override
    public String toString() {
        return "EndpointOptions[sendQueueDepth=" + sendQueueDepth + ", receiveQueueDepth=" + receiveQueueDepth
                + ", maxSendSge=" + maxSendSge + ", maxReceiveSge=" + maxReceiveSge
                + ", inlineThreshold=" + inlineThreshold + ", rnrRetryCount=" + rnrRetryCount
                + (localAddress == null ? "" : ", localAddress=" + localAddress.getHostAddress()) + "]";
    }

    /** Builds {@link EndpointOptions}. */
    public static final class Builder {
        private final CompletionQueue sendQueue;
        private final CompletionQueue receiveQueue;
        private int sendQueueDepth = 64;
        private int receiveQueueDepth = 64;
        private int maxSendSge = 1;
        private int maxReceiveSge = 1;
        private int inlineThreshold;
        private int rnrRetryCount;
        private InetAddress localAddress;

        private Builder(CompletionQueue sendQueue, CompletionQueue receiveQueue) {
            this.sendQueue = Objects.requireNonNull(sendQueue, "sendQueue");
            this.receiveQueue = Objects.requireNonNull(receiveQueue, "receiveQueue");
        }

        /**
         * Sets {@link EndpointOptions#sendQueueDepth()}.
         *
         * @param depth at least 1
         * @return this builder
         */
        public Builder sendQueueDepth(int depth) {
            this.sendQueueDepth = positive(depth, "sendQueueDepth");
            return this;
        }

        /**
         * Sets {@link EndpointOptions#receiveQueueDepth()}.
         *
         * @param depth at least 1
         * @return this builder
         */
        public Builder receiveQueueDepth(int depth) {
            this.receiveQueueDepth = positive(depth, "receiveQueueDepth");
            return this;
        }

        /**
         * Sets {@link EndpointOptions#maxSendSge()}.
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder maxSendSge(int count) {
            this.maxSendSge = positive(count, "maxSendSge");
            return this;
        }

        /**
         * Sets {@link EndpointOptions#maxReceiveSge()}.
         *
         * @param count at least 1
         * @return this builder
         */
        public Builder maxReceiveSge(int count) {
            this.maxReceiveSge = positive(count, "maxReceiveSge");
            return this;
        }

        /**
         * Sets {@link EndpointOptions#rnrRetryCount()}.
         *
         * @param count 0 to 7 (7: retry until a receive is posted)
         * @return this builder
         */
        public Builder rnrRetryCount(int count) {
            if (count < 0 || count > 7) {
                throw new IllegalArgumentException("rnrRetryCount must be 0 to 7, was " + count);
            }
            this.rnrRetryCount = count;
            return this;
        }

        /**
         * Sets {@link EndpointOptions#inlineThreshold()}.
         *
         * @param bytes 0 or more
         * @return this builder
         */
        public Builder inlineThreshold(int bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("inlineThreshold must be >= 0, was " + bytes);
            }
            this.inlineThreshold = bytes;
            return this;
        }

        /**
         * Sets {@link EndpointOptions#localAddress()}.
         *
         * @param address one of the provider's addresses, or {@code null} for its first
         * @return this builder
         */
        public Builder localAddress(InetAddress address) {
            this.localAddress = address;
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the immutable options
         */
        public EndpointOptions build() {
            return new EndpointOptions(this);
        }

        private static int positive(int value, String name) {
            if (value < 1) {
                throw new IllegalArgumentException(name + " must be >= 1, was " + value);
            }
            return value;
        }
    }
}
