package org.smbdirect.transport;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The configuration of an SMB Direct transport. Defaults are the Windows product values of
 * MS-SMBD section 7 (notes 1-7). Immutable; {@link #builder()} checks every value against its
 * range and names the field and the range when one is out of it.
 *
 * <p>The property names (the keys of {@link #toMap()}) are those of the OSGi configuration
 * {@code org.smbdirect.protocol}.
 */
public final class SmbDirectConfig {
    /** Property name of {@link #receiveCreditMax()}. */
    public static final String RECEIVE_CREDIT_MAX = "receiveCreditMax";
    /** Property name of {@link #sendCreditTarget()}. */
    public static final String SEND_CREDIT_TARGET = "sendCreditTarget";
    /** Property name of {@link #maxSendSize()}. */
    public static final String MAX_SEND_SIZE = "maxSendSize";
    /** Property name of {@link #maxReceiveSize()}. */
    public static final String MAX_RECEIVE_SIZE = "maxReceiveSize";
    /** Property name of {@link #maxFragmentedRecvSize()}. */
    public static final String MAX_FRAGMENTED_RECV_SIZE = "maxFragmentedRecvSize";
    /** Property name of {@link #maxReadWriteSize()}. */
    public static final String MAX_READ_WRITE_SIZE = "maxReadWriteSize";
    /** Property name of {@link #keepaliveInterval()}, in seconds. */
    public static final String KEEPALIVE_INTERVAL = "keepaliveIntervalSeconds";
    /** Property name of {@link #keepaliveResponseTimeout()}, in seconds. */
    public static final String KEEPALIVE_RESPONSE_TIMEOUT = "keepaliveResponseTimeoutSeconds";
    /** Property name of {@link #activeNegotiationTimeout()}, in seconds. */
    public static final String ACTIVE_NEGOTIATION_TIMEOUT = "activeNegotiationTimeoutSeconds";
    /** Property name of {@link #passiveNegotiationTimeout()}, in seconds. */
    public static final String PASSIVE_NEGOTIATION_TIMEOUT = "passiveNegotiationTimeoutSeconds";
    /** Property name of {@link #preferredSendSizeLimit()}. */
    public static final String PREFERRED_SEND_SIZE_LIMIT = "preferredSendSizeLimit";
    /** Property name of {@link #irdOrdHeader()}. */
    public static final String IRD_ORD_HEADER = "irdOrdHeader";
    /** Property name of {@link #rnrRetryCount()}. */
    public static final String RNR_RETRY_COUNT = "rnrRetryCount";
    /** Property name of {@link #strictReassembly()}. */
    public static final String STRICT_REASSEMBLY = "strictReassembly";
    /** Property name of {@link #ird()}. */
    public static final String IRD = "ird";
    /** Property name of {@link #ord()}. */
    public static final String ORD = "ord";
    /** Property name of {@link #sendBuffers()}. */
    public static final String SEND_BUFFERS = "sendBuffers";
    /** Property name of {@link #maxPendingSends()}. */
    public static final String MAX_PENDING_SENDS = "maxPendingSends";
    /** Property name of {@link #engineThreads()}. */
    public static final String ENGINE_THREADS = "engineThreads";
    /** Property name of {@link #engineSpinMicroseconds()}. */
    public static final String ENGINE_SPIN_MICROSECONDS = "engineSpinMicroseconds";
    /** Property name of {@link #rdmaRegistrationCacheBytes()}. */
    public static final String RDMA_REGISTRATION_CACHE_BYTES = "rdmaRegistrationCacheBytes";
    /** Property name of {@link #receiveBufferBudget()}. */
    public static final String RECEIVE_BUFFER_BUDGET = "receiveBufferBudget";

    private static final SmbDirectConfig DEFAULTS = builder().build();

    private final int receiveCreditMax;
    private final int sendCreditTarget;
    private final int maxSendSize;
    private final int maxReceiveSize;
    private final int maxFragmentedRecvSize;
    private final int maxReadWriteSize;
    private final int keepaliveIntervalSeconds;
    private final int keepaliveResponseTimeoutSeconds;
    private final int activeNegotiationTimeoutSeconds;
    private final int passiveNegotiationTimeoutSeconds;
    private final int preferredSendSizeLimit;
    private final IrdOrdHeaderPolicy irdOrdHeader;
    private final int rnrRetryCount;
    private final boolean strictReassembly;
    private final int ird;
    private final int ord;
    private final int sendBuffers;
    private final int maxPendingSends;
    private final int engineThreads;
    private final int engineSpinMicroseconds;
    private final int rdmaRegistrationCacheBytes;
    private final int receiveBufferBudget;

    private SmbDirectConfig(Builder b) {
        receiveCreditMax = b.receiveCreditMax;
        sendCreditTarget = b.sendCreditTarget;
        maxSendSize = b.maxSendSize;
        maxReceiveSize = b.maxReceiveSize;
        maxFragmentedRecvSize = b.maxFragmentedRecvSize;
        maxReadWriteSize = b.maxReadWriteSize;
        keepaliveIntervalSeconds = b.keepaliveIntervalSeconds;
        keepaliveResponseTimeoutSeconds = b.keepaliveResponseTimeoutSeconds;
        activeNegotiationTimeoutSeconds = b.activeNegotiationTimeoutSeconds;
        passiveNegotiationTimeoutSeconds = b.passiveNegotiationTimeoutSeconds;
        preferredSendSizeLimit = b.preferredSendSizeLimit;
        irdOrdHeader = b.irdOrdHeader;
        rnrRetryCount = b.rnrRetryCount;
        strictReassembly = b.strictReassembly;
        ird = b.ird;
        ord = b.ord;
        sendBuffers = b.sendBuffers;
        maxPendingSends = b.maxPendingSends;
        engineThreads = b.engineThreads;
        engineSpinMicroseconds = b.engineSpinMicroseconds;
        rdmaRegistrationCacheBytes = b.rdmaRegistrationCacheBytes;
        receiveBufferBudget = b.receiveBufferBudget;
    }

    /**
     * The defaults (MS-SMBD section 7).
     *
     * @return the default configuration
     */
    public static SmbDirectConfig defaults() {
        return DEFAULTS;
    }

    /**
     * Starts a configuration from the defaults.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Starts a configuration from this one.
     *
     * @return a builder holding this configuration's values
     */
    public Builder toBuilder() {
        return new Builder().receiveCreditMax(receiveCreditMax).sendCreditTarget(sendCreditTarget)
                .maxSendSize(maxSendSize).maxReceiveSize(maxReceiveSize).maxFragmentedRecvSize(maxFragmentedRecvSize)
                .maxReadWriteSize(maxReadWriteSize).keepaliveIntervalSeconds(keepaliveIntervalSeconds)
                .keepaliveResponseTimeoutSeconds(keepaliveResponseTimeoutSeconds)
                .activeNegotiationTimeoutSeconds(activeNegotiationTimeoutSeconds)
                .passiveNegotiationTimeoutSeconds(passiveNegotiationTimeoutSeconds)
                .preferredSendSizeLimit(preferredSendSizeLimit).irdOrdHeader(irdOrdHeader).rnrRetryCount(rnrRetryCount)
                .strictReassembly(strictReassembly).ird(ird).ord(ord)
                .sendBuffers(sendBuffers).maxPendingSends(maxPendingSends).engineThreads(engineThreads)
                .rdmaRegistrationCacheBytes(rdmaRegistrationCacheBytes).engineSpinMicroseconds(engineSpinMicroseconds)
                .receiveBufferBudget(receiveBufferBudget);
    }

    /**
     * Connection.ReceiveCreditMax: the most receive credits granted to a peer (note 2: 255). A
     * ceiling rather than a reservation: a connection starts with 32 receive buffers (or this many
     * if fewer) and doubles them up to this number while its peer is busy.
     *
     * @return credits, 1 to 65535
     */
    public int receiveCreditMax() {
        return receiveCreditMax;
    }

    /**
     * Connection.SendCreditTarget: the send credits requested of a peer (note 2: 255).
     *
     * @return credits, 1 to 65535
     */
    public int sendCreditTarget() {
        return sendCreditTarget;
    }

    /**
     * The initial Connection.MaxSendSize (note 2: 1364).
     *
     * @return bytes, 128 to 16 MiB
     */
    public int maxSendSize() {
        return maxSendSize;
    }

    /**
     * The initial Connection.MaxReceiveSize (note 2: 8192).
     *
     * @return bytes, 128 to 16 MiB
     */
    public int maxReceiveSize() {
        return maxReceiveSize;
    }

    /**
     * Connection.MaxFragmentedRecvSize (note 2: 1 MiB).
     *
     * @return bytes, 131072 to 256 MiB
     */
    public int maxFragmentedRecvSize() {
        return maxFragmentedRecvSize;
    }

    /**
     * The local limit of Connection.MaxReadWriteSize (note 6/7: 8 MiB).
     *
     * @return bytes, 0 to 1 GiB
     */
    public int maxReadWriteSize() {
        return maxReadWriteSize;
    }

    /**
     * Connection.KeepaliveInterval, the Idle Connection Timer (note 1: 120 s); zero disables
     * keepalives.
     *
     * @return the interval
     */
    public Duration keepaliveInterval() {
        return Duration.ofSeconds(keepaliveIntervalSeconds);
    }

    /**
     * How long a keepalive may stay unanswered (note 3: 5 s).
     *
     * @return the timeout
     */
    public Duration keepaliveResponseTimeout() {
        return Duration.ofSeconds(keepaliveResponseTimeoutSeconds);
    }

    /**
     * The Negotiation Timer of the initiator (3.1.4.1: 120 s).
     *
     * @return the timeout
     */
    public Duration activeNegotiationTimeout() {
        return Duration.ofSeconds(activeNegotiationTimeoutSeconds);
    }

    /**
     * The Negotiation Timer of the listener (3.1.7.2: 5 s).
     *
     * @return the timeout
     */
    public Duration passiveNegotiationTimeout() {
        return Duration.ofSeconds(passiveNegotiationTimeoutSeconds);
    }

    /**
     * The largest PreferredSendSize a Negotiate Request may carry; above it the negotiation fails
     * with STATUS_INSUFFICIENT_RESOURCES (note 5: 8136); zero accepts any.
     *
     * @return bytes, 0 or 128 to 16 MiB
     */
    public int preferredSendSizeLimit() {
        return preferredSendSizeLimit;
    }

    /**
     * When to send, read and answer the IRD/ORD Negotiate Header of MS-SMBD section 6 in the RDMA
     * connection's private data (default {@link IrdOrdHeaderPolicy#AUTO}: on iWARP only).
     *
     * @return the policy
     */
    public IrdOrdHeaderPolicy irdOrdHeader() {
        return irdOrdHeader;
    }

    /**
     * How often the RDMA transport retries a send that finds no receive posted at the peer
     * (rdma_cm's {@code rnr_retry_count}; 7 retries until one is posted). The credits of 3.1.5.9
     * keep a conforming peer from ever needing it, but Windows and Linux connect with 7 and a
     * peer replenishing its receives a moment late must not lose the connection (default 7).
     *
     * @return 0 to 7
     */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * Whether a message with DataLength 0 and RemainingDataLength 0 ends the connection when it
     * arrives inside a fragmented sequence (3.1.5.8 reads as if the sequence had ended early).
     * Linux kernels before 2026 send such credit-only messages while a large upper-layer message
     * is being fragmented, so by default (false) they are taken as what they are, credits and
     * keepalive, and the sequence goes on.
     *
     * @return {@code true} to terminate on them
     */
    public boolean strictReassembly() {
        return strictReassembly;
    }

    /**
     * The incoming RDMA Read depth offered, limited by the provider's maximum.
     *
     * @return 1 to 255
     */
    public int ird() {
        return ird;
    }

    /**
     * The outgoing RDMA Read depth asked for, limited by the provider's maximum.
     *
     * @return 1 to 255
     */
    public int ord() {
        return ord;
    }

    /**
     * The most send buffers of MaxSendSize bytes a connection keeps registered: how many Data
     * Transfer messages can be in flight at once. Allocated as needed.
     *
     * @return 1 to 1024
     */
    public int sendBuffers() {
        return sendBuffers;
    }

    /**
     * The most upper-layer messages waiting to be sent on one connection; a send beyond it is
     * refused with {@link IllegalStateException}.
     *
     * @return 1 to 1048576
     */
    public int maxPendingSends() {
        return maxPendingSends;
    }

    /**
     * Engine threads running the connections' processing rules; 0 means one per processor.
     *
     * @return 0 to 256
     */
    public int engineThreads() {
        return engineThreads;
    }

    /**
     * How many bytes of the upper layer's RDMA Read and Write buffers a connection keeps registered
     * between operations (at most 16 buffers): an operation on a buffer used before costs no
     * registration (MS-SMBD 3.1.4.5, 3.1.4.6). Such buffers stay reachable while registered; 0
     * registers and deregisters around every operation (default 64 MiB).
     *
     * @return bytes, 0 to 1 GiB
     */
    public int rdmaRegistrationCacheBytes() {
        return rdmaRegistrationCacheBytes;
    }

    /**
     * The receive buffers the connections of one transport grow to together. A connection starts
     * with 32 and doubles them while its peer is busy, up to ReceiveCreditMax; with a budget it
     * grows only up to its share, the budget divided by the transport's connections (never below
     * the first 32). How many receives to post is the implementation's choice (MS-SMBD 3.1.5.9);
     * this keeps the memory that many busy connections cycle through bounded, which at 64
     * connections is what their aggregate throughput depends on. Buffers a connection already has
     * stay with it until it ends. 0: no budget, every connection grows to ReceiveCreditMax.
     * Default 4096 (16 connections at 255).
     *
     * @return receive buffers, 0 to 1048576
     */
    public int receiveBufferBudget() {
        return receiveBufferBudget;
    }

    /**
     * How long an idle engine thread keeps polling for work before it sleeps, in microseconds:
     * busy polling, which answers a message or a completion without a wake-up at the cost of a
     * processor core per engine thread while it polls. 0 (the default): it sleeps at once.
     * Applies when the transport starts.
     *
     * @return microseconds, 0 to 100000
     */
    public int engineSpinMicroseconds() {
        return engineSpinMicroseconds;
    }

    /**
     * The configuration as properties under the names of the OSGi configuration.
     *
     * @return a new mutable map
     */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(RECEIVE_CREDIT_MAX, receiveCreditMax);
        m.put(SEND_CREDIT_TARGET, sendCreditTarget);
        m.put(MAX_SEND_SIZE, maxSendSize);
        m.put(MAX_RECEIVE_SIZE, maxReceiveSize);
        m.put(MAX_FRAGMENTED_RECV_SIZE, maxFragmentedRecvSize);
        m.put(MAX_READ_WRITE_SIZE, maxReadWriteSize);
        m.put(KEEPALIVE_INTERVAL, keepaliveIntervalSeconds);
        m.put(KEEPALIVE_RESPONSE_TIMEOUT, keepaliveResponseTimeoutSeconds);
        m.put(ACTIVE_NEGOTIATION_TIMEOUT, activeNegotiationTimeoutSeconds);
        m.put(PASSIVE_NEGOTIATION_TIMEOUT, passiveNegotiationTimeoutSeconds);
        m.put(PREFERRED_SEND_SIZE_LIMIT, preferredSendSizeLimit);
        m.put(IRD_ORD_HEADER, irdOrdHeader.name());
        m.put(RNR_RETRY_COUNT, rnrRetryCount);
        m.put(STRICT_REASSEMBLY, strictReassembly);
        m.put(IRD, ird);
        m.put(ORD, ord);
        m.put(SEND_BUFFERS, sendBuffers);
        m.put(MAX_PENDING_SENDS, maxPendingSends);
        m.put(ENGINE_THREADS, engineThreads);
        m.put(ENGINE_SPIN_MICROSECONDS, engineSpinMicroseconds);
        m.put(RDMA_REGISTRATION_CACHE_BYTES, rdmaRegistrationCacheBytes);
        m.put(RECEIVE_BUFFER_BUDGET, receiveBufferBudget);
        return m;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SmbDirectConfig && toMap().equals(((SmbDirectConfig) o).toMap());
    }

    @Override
    public int hashCode() {
        return toMap().hashCode();
    }

    @Override
    public String toString() {
        return "SmbDirectConfig" + toMap();
    }

    /**
     * Builds {@link SmbDirectConfig}; each setter rejects a value outside its range with an
     * {@link IllegalArgumentException} naming the field and the range.
     */
    public static final class Builder {
        private int receiveCreditMax = 255;
        private int sendCreditTarget = 255;
        private int maxSendSize = 1364;
        private int maxReceiveSize = 8192;
        private int maxFragmentedRecvSize = 1048576;
        private int maxReadWriteSize = 8388608;
        private int keepaliveIntervalSeconds = 120;
        private int keepaliveResponseTimeoutSeconds = 5;
        private int activeNegotiationTimeoutSeconds = 120;
        private int passiveNegotiationTimeoutSeconds = 5;
        private int preferredSendSizeLimit = 8136;
        private IrdOrdHeaderPolicy irdOrdHeader = IrdOrdHeaderPolicy.AUTO;
        private int rnrRetryCount = 7;
        private boolean strictReassembly;
        private int ird = 16;
        private int ord = 16;
        private int sendBuffers = 32;
        private int maxPendingSends = 1024;
        private int engineThreads;
        private int rdmaRegistrationCacheBytes = 67108864;
        private int engineSpinMicroseconds;
        private int receiveBufferBudget = 4096;

        private Builder() {
        }

        /**
         * Sets {@link SmbDirectConfig#receiveCreditMax()}.
         *
         * @param v 1 to 65535
         * @return this builder
         */
        public Builder receiveCreditMax(int v) {
            receiveCreditMax = check(RECEIVE_CREDIT_MAX, v, 1, 65535);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#sendCreditTarget()}.
         *
         * @param v 1 to 65535
         * @return this builder
         */
        public Builder sendCreditTarget(int v) {
            sendCreditTarget = check(SEND_CREDIT_TARGET, v, 1, 65535);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#maxSendSize()}.
         *
         * @param v 128 to 16777216
         * @return this builder
         */
        public Builder maxSendSize(int v) {
            maxSendSize = check(MAX_SEND_SIZE, v, 128, 1 << 24);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#maxReceiveSize()}.
         *
         * @param v 128 to 16777216
         * @return this builder
         */
        public Builder maxReceiveSize(int v) {
            maxReceiveSize = check(MAX_RECEIVE_SIZE, v, 128, 1 << 24);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#maxFragmentedRecvSize()}.
         *
         * @param v 131072 to 268435456
         * @return this builder
         */
        public Builder maxFragmentedRecvSize(int v) {
            maxFragmentedRecvSize = check(MAX_FRAGMENTED_RECV_SIZE, v, 131072, 1 << 28);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#maxReadWriteSize()}.
         *
         * @param v 0 to 1073741824
         * @return this builder
         */
        public Builder maxReadWriteSize(int v) {
            maxReadWriteSize = check(MAX_READ_WRITE_SIZE, v, 0, 1 << 30);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#keepaliveInterval()}.
         *
         * @param seconds 0 (disabled) to 86400
         * @return this builder
         */
        public Builder keepaliveIntervalSeconds(int seconds) {
            keepaliveIntervalSeconds = check(KEEPALIVE_INTERVAL, seconds, 0, 86400);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#keepaliveResponseTimeout()}.
         *
         * @param seconds 1 to 3600
         * @return this builder
         */
        public Builder keepaliveResponseTimeoutSeconds(int seconds) {
            keepaliveResponseTimeoutSeconds = check(KEEPALIVE_RESPONSE_TIMEOUT, seconds, 1, 3600);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#activeNegotiationTimeout()}.
         *
         * @param seconds 1 to 3600
         * @return this builder
         */
        public Builder activeNegotiationTimeoutSeconds(int seconds) {
            activeNegotiationTimeoutSeconds = check(ACTIVE_NEGOTIATION_TIMEOUT, seconds, 1, 3600);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#passiveNegotiationTimeout()}.
         *
         * @param seconds 1 to 3600
         * @return this builder
         */
        public Builder passiveNegotiationTimeoutSeconds(int seconds) {
            passiveNegotiationTimeoutSeconds = check(PASSIVE_NEGOTIATION_TIMEOUT, seconds, 1, 3600);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#preferredSendSizeLimit()}.
         *
         * @param v 0 (no limit) or 128 to 16777216
         * @return this builder
         */
        public Builder preferredSendSizeLimit(int v) {
            if (v != 0) {
                check(PREFERRED_SEND_SIZE_LIMIT, v, 128, 1 << 24);
            }
            preferredSendSizeLimit = v;
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#irdOrdHeader()}.
         *
         * @param v when to use the section 6 header
         * @return this builder
         */
        public Builder irdOrdHeader(IrdOrdHeaderPolicy v) {
            irdOrdHeader = java.util.Objects.requireNonNull(v, IRD_ORD_HEADER);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#rnrRetryCount()}.
         *
         * @param v 0 to 7
         * @return this builder
         */
        public Builder rnrRetryCount(int v) {
            rnrRetryCount = check(RNR_RETRY_COUNT, v, 0, 7);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#strictReassembly()}.
         *
         * @param v whether an empty message inside a fragmented sequence ends the connection
         * @return this builder
         */
        public Builder strictReassembly(boolean v) {
            strictReassembly = v;
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#ird()}.
         *
         * @param v 1 to 255
         * @return this builder
         */
        public Builder ird(int v) {
            ird = check(IRD, v, 1, 255);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#ord()}.
         *
         * @param v 1 to 255
         * @return this builder
         */
        public Builder ord(int v) {
            ord = check(ORD, v, 1, 255);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#sendBuffers()}.
         *
         * @param v 1 to 1024
         * @return this builder
         */
        public Builder sendBuffers(int v) {
            sendBuffers = check(SEND_BUFFERS, v, 1, 1024);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#maxPendingSends()}.
         *
         * @param v 1 to 1048576
         * @return this builder
         */
        public Builder maxPendingSends(int v) {
            maxPendingSends = check(MAX_PENDING_SENDS, v, 1, 1 << 20);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#engineThreads()}.
         *
         * @param v 0 (one per processor) to 256
         * @return this builder
         */
        public Builder engineThreads(int v) {
            engineThreads = check(ENGINE_THREADS, v, 0, 256);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#rdmaRegistrationCacheBytes()}.
         *
         * @param v 0 to 1073741824
         * @return this builder
         */
        public Builder rdmaRegistrationCacheBytes(int v) {
            rdmaRegistrationCacheBytes = check(RDMA_REGISTRATION_CACHE_BYTES, v, 0, 1073741824);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#engineSpinMicroseconds()}.
         *
         * @param v 0 to 100000
         * @return this builder
         */
        public Builder engineSpinMicroseconds(int v) {
            engineSpinMicroseconds = check(ENGINE_SPIN_MICROSECONDS, v, 0, 100000);
            return this;
        }

        /**
         * Sets {@link SmbDirectConfig#receiveBufferBudget()}.
         *
         * @param v 0 (no budget) to 1048576
         * @return this builder
         */
        public Builder receiveBufferBudget(int v) {
            receiveBufferBudget = check(RECEIVE_BUFFER_BUDGET, v, 0, 1048576);
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         */
        public SmbDirectConfig build() {
            return new SmbDirectConfig(this);
        }

        private static int check(String field, int value, int min, int max) {
            if (value < min || value > max) {
                throw new IllegalArgumentException(
                        field + " must be between " + min + " and " + max + " (inclusive), was " + value);
            }
            return value;
        }
    }
}
