package org.smbdirect.bulk;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The configuration of the bulk-transfer layer (OSGi PID {@code org.smbdirect.bulk}). Immutable;
 * the builder refuses a value out of range with a message naming the field and the range.
 */
public final class BulkConfig {
    /** Property name of {@link #inlineThreshold()}. */
    public static final String INLINE_THRESHOLD = "inlineThreshold";
    /** Property name of {@link #maxInFlight()}. */
    public static final String MAX_IN_FLIGHT = "maxInFlight";
    /** Property name of {@link #maxMessageSize()}. */
    public static final String MAX_MESSAGE_SIZE = "maxMessageSize";
    /** Property name of {@link #maxQueuedSends()}. */
    public static final String MAX_QUEUED_SENDS = "maxQueuedSends";

    private static final BulkConfig DEFAULTS = builder().build();

    private final int inlineThreshold;
    private final int maxInFlight;
    private final int maxMessageSize;
    private final int maxQueuedSends;

    private BulkConfig(Builder b) {
        inlineThreshold = b.inlineThreshold;
        maxInFlight = b.maxInFlight;
        maxMessageSize = b.maxMessageSize;
        maxQueuedSends = b.maxQueuedSends;
    }

    /**
     * The defaults: inline threshold 8 KiB, 4 transfers in flight, 1 GiB messages, 64 queued sends.
     *
     * @return the default configuration
     */
    public static BulkConfig defaults() {
        return DEFAULTS;
    }

    /**
     * Starts from the defaults.
     *
     * @return a builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Sends up to this many bytes travel entirely inline, in one control message; larger ones by
     * RDMA. The inline part is further limited by what the connection can carry in one message.
     *
     * @return bytes, 0 to 1 MiB
     */
    public int inlineThreshold() {
        return inlineThreshold;
    }

    /**
     * Large transfers one session may have moving at once (pipelining).
     *
     * @return 1 to 64
     */
    public int maxInFlight() {
        return maxInFlight;
    }

    /**
     * The largest send, and the largest the receiving side accepts.
     *
     * @return bytes, 1 to 2^31 - 1
     */
    public int maxMessageSize() {
        return maxMessageSize;
    }

    /**
     * Sends that may wait for their turn per session before further sends are refused.
     *
     * @return 1 to 65536
     */
    public int maxQueuedSends() {
        return maxQueuedSends;
    }

    /**
     * The configuration as properties under the names of the OSGi configuration.
     *
     * @return a new mutable map
     */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(INLINE_THRESHOLD, inlineThreshold);
        m.put(MAX_IN_FLIGHT, maxInFlight);
        m.put(MAX_MESSAGE_SIZE, maxMessageSize);
        m.put(MAX_QUEUED_SENDS, maxQueuedSends);
        return m;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BulkConfig && toMap().equals(((BulkConfig) o).toMap());
    }

    @Override
    public int hashCode() {
        return toMap().hashCode();
    }

    @Override
    public String toString() {
        return "BulkConfig" + toMap();
    }

    /** Builds {@link BulkConfig}. */
    public static final class Builder {
        private int inlineThreshold = 8192;
        private int maxInFlight = 4;
        private int maxMessageSize = 1 << 30;
        private int maxQueuedSends = 64;

        private Builder() {
        }

        /**
         * Sets {@link BulkConfig#inlineThreshold()}.
         *
         * @param v 0 to 1048576
         * @return this builder
         */
        public Builder inlineThreshold(int v) {
            inlineThreshold = check(INLINE_THRESHOLD, v, 0, 1 << 20);
            return this;
        }

        /**
         * Sets {@link BulkConfig#maxInFlight()}.
         *
         * @param v 1 to 64
         * @return this builder
         */
        public Builder maxInFlight(int v) {
            maxInFlight = check(MAX_IN_FLIGHT, v, 1, 64);
            return this;
        }

        /**
         * Sets {@link BulkConfig#maxMessageSize()}.
         *
         * @param v 1 to 2147483647
         * @return this builder
         */
        public Builder maxMessageSize(int v) {
            maxMessageSize = check(MAX_MESSAGE_SIZE, v, 1, Integer.MAX_VALUE);
            return this;
        }

        /**
         * Sets {@link BulkConfig#maxQueuedSends()}.
         *
         * @param v 1 to 65536
         * @return this builder
         */
        public Builder maxQueuedSends(int v) {
            maxQueuedSends = check(MAX_QUEUED_SENDS, v, 1, 65536);
            return this;
        }

        /**
         * Builds the configuration.
         *
         * @return the configuration
         */
        public BulkConfig build() {
            return new BulkConfig(this);
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
