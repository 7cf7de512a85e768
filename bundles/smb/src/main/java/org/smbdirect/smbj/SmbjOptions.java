package org.smbdirect.smbj;

import java.time.Duration;
import java.util.Objects;

/**
 * How an {@link SmbjTransport} uses SMB Direct. Immutable; {@link #builder()} checks each value
 * and names the field and its range when one is out of it.
 */
public final class SmbjOptions {
    /** The default threshold: 4 KiB, as the Linux client's rdma_readwrite_threshold. */
    public static final int DEFAULT_RDMA_THRESHOLD = 4096;
    /** The default of {@link #readParts()}: two READs in flight, as the Linux client keeps for one large read. */
    public static final int DEFAULT_READ_PARTS = 2;
    /** The default of {@link #writeParts()}: two WRITEs in flight, as for READs. */
    public static final int DEFAULT_WRITE_PARTS = 2;

    private static final SmbjOptions DEFAULTS = builder().build();

    private final boolean rdmaChannel;
    private final int rdmaThreshold;
    private final boolean remoteInvalidation;
    private final Duration connectTimeout;
    private final int readParts;
    private final int writeParts;
    private final boolean registerAhead;
    private final boolean strictSignatures;

    private SmbjOptions(Builder b) {
        rdmaChannel = b.rdmaChannel;
        rdmaThreshold = b.rdmaThreshold;
        remoteInvalidation = b.remoteInvalidation;
        connectTimeout = b.connectTimeout;
        readParts = b.readParts;
        writeParts = b.writeParts;
        registerAhead = b.registerAhead;
        strictSignatures = b.strictSignatures;
    }

    /**
     * The defaults: RDMA channel on, threshold 4 KiB, remote invalidation on, 60 s to connect, large
     * READs and WRITEs in two parts, registrations made ahead where they are memory regions of their own,
     * ksmbd's signature of READ responses without data accepted.
     *
     * @return the default options
     */
    public static SmbjOptions defaults() {
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
     * Starts from these options.
     *
     * @return a builder holding these values
     */
    public Builder toBuilder() {
        return new Builder().rdmaChannel(rdmaChannel).rdmaThreshold(rdmaThreshold)
                .remoteInvalidation(remoteInvalidation).connectTimeout(connectTimeout).readParts(readParts)
                .writeParts(writeParts).registerAhead(registerAhead).strictSignatures(strictSignatures);
    }

    /**
     * Whether READ and WRITE data may go through the RDMA channel at all; when {@code false}
     * everything travels inline in SMB Direct messages.
     *
     * @return {@code true} by default
     */
    public boolean rdmaChannel() {
        return rdmaChannel;
    }

    /**
     * READ and WRITE requests of at least this many bytes move their data through the RDMA channel;
     * smaller ones travel inline, unless they do not fit an SMB Direct message.
     *
     * @return bytes, 4096 by default
     */
    public int rdmaThreshold() {
        return rdmaThreshold;
    }

    /**
     * Whether to ask the server to invalidate the registration with its response
     * (SMB2_CHANNEL_RDMA_V1_INVALIDATE, dialects 3.0.2 and 3.1.1); SMB 3.0 has only
     * SMB2_CHANNEL_RDMA_V1, after which the client invalidates the registration itself.
     *
     * @return {@code true} by default
     */
    public boolean remoteInvalidation() {
        return remoteInvalidation;
    }

    /**
     * How long connecting and negotiating SMB Direct may take.
     *
     * @return 60 s by default
     */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /**
     * Into how many READs in flight at once a READ through the RDMA channel is split: smbj's
     * {@code File.read} sends one READ and waits for it, so the server would move the data of one
     * request at a time. Each part is at least 1 MiB and a whole number of 64 KiB credits, so READs
     * below 2 MiB stay whole; smbj sees one request and one response as before. 1 turns it off.
     *
     * @return 1 to 16, {@value #DEFAULT_READ_PARTS} by default
     */
    public int readParts() {
        return readParts;
    }

    /**
     * Into how many WRITEs in flight at once a WRITE through the RDMA channel is split, as
     * {@link #readParts()} for READs: smbj's {@code File.write} sends one WRITE and waits for it.
     * smbj sees one request and one response; when a part fails, the response says so, whichever
     * part it was. 1 turns it off.
     *
     * @return 1 to 16, {@value #DEFAULT_WRITE_PARTS} by default
     */
    public int writeParts() {
        return writeParts;
    }

    /**
     * Whether, where registrations are memory regions of their own (a provider without memory
     * windows, which cannot send with invalidate: soft-iWARP), the buffers of a connection's next
     * READ and next WRITE through the RDMA channel are registered while the server serves the last
     * ones, so that registering (a system call pinning every page) is off the request's path. The
     * price: between requests each such connection keeps up to one READ's and one WRITE's buffer
     * registered (the size of smbj's last request of each, several MiB for large transfers). Where
     * registrations are memory windows bound with the request, nothing is made ahead either way.
     *
     * @return {@code true} by default
     */
    public boolean registerAhead() {
        return registerAhead;
    }

    /**
     * Whether a signed response must be signed exactly as MS-SMB2 3.3.4.1.1 says. By default one
     * server defect is lived with: Linux ksmbd (6.1 through 7.2 at least) signs a READ response
     * that carries no data (every READ through the RDMA channel, and a failed READ) over the 4-byte
     * transport length followed by the response, instead of the response alone. Such a signature
     * is still a MAC under the session's signing key, and its signed bytes can never be those of a
     * message signed by the rule (they start with a zero byte, an SMB2 message with 0xFE), so
     * accepting it lets nothing be forged; without it no signing client reads a file from stock
     * ksmbd through the RDMA channel. It is logged once per connection and counted
     * ({@link RdmaChannelStatistics#toleratedReadSignatures()}). {@code true} refuses it: the
     * response is discarded and the connection ends, as for any bad signature.
     *
     * @return {@code false} by default
     * @since 1.3
     */
    public boolean strictSignatures() {
        return strictSignatures;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof SmbjOptions)) {
            return false;
        }
        SmbjOptions other = (SmbjOptions) o;
        return rdmaChannel == other.rdmaChannel && rdmaThreshold == other.rdmaThreshold
                && remoteInvalidation == other.remoteInvalidation && connectTimeout.equals(other.connectTimeout)
                && readParts == other.readParts && writeParts == other.writeParts
                && registerAhead == other.registerAhead && strictSignatures == other.strictSignatures;
    }

    @Override
    public int hashCode() {
        return Objects.hash(rdmaChannel, rdmaThreshold, remoteInvalidation, connectTimeout, readParts, writeParts,
                registerAhead, strictSignatures);
    }

    @Override
    public String toString() {
        return "SmbjOptions[rdmaChannel=" + rdmaChannel + ", rdmaThreshold=" + rdmaThreshold
                + ", remoteInvalidation=" + remoteInvalidation + ", connectTimeout=" + connectTimeout + ", readParts=" + readParts
                + ", writeParts=" + writeParts + ", registerAhead=" + registerAhead
                + ", strictSignatures=" + strictSignatures + "]";
    }

    /** Builds {@link SmbjOptions}. */
    public static final class Builder {
        private boolean rdmaChannel = true;
        private int rdmaThreshold = DEFAULT_RDMA_THRESHOLD;
        private boolean remoteInvalidation = true;
        private Duration connectTimeout = Duration.ofSeconds(60);
        private int readParts = DEFAULT_READ_PARTS;
        private int writeParts = DEFAULT_WRITE_PARTS;
        private boolean registerAhead = true;
        private boolean strictSignatures;

        private Builder() {
        }

        /**
         * Sets {@link SmbjOptions#rdmaChannel()}.
         *
         * @param value whether the RDMA channel may be used
         * @return this builder
         */
        public Builder rdmaChannel(boolean value) {
            rdmaChannel = value;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#rdmaThreshold()}.
         *
         * @param bytes at least 1
         * @return this builder
         * @throws IllegalArgumentException when below 1
         */
        public Builder rdmaThreshold(int bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("rdmaThreshold must be at least 1 byte, was " + bytes);
            }
            rdmaThreshold = bytes;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#remoteInvalidation()}.
         *
         * @param value whether to ask for remote invalidation where the dialect has it
         * @return this builder
         */
        public Builder remoteInvalidation(boolean value) {
            remoteInvalidation = value;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#connectTimeout()}.
         *
         * @param timeout between 1 s and 1 hour
         * @return this builder
         * @throws IllegalArgumentException when out of range
         */
        public Builder connectTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "connectTimeout");
            if (timeout.compareTo(Duration.ofSeconds(1)) < 0 || timeout.compareTo(Duration.ofHours(1)) > 0) {
                throw new IllegalArgumentException("connectTimeout must be between 1 s and 1 hour, was " + timeout);
            }
            connectTimeout = timeout;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#readParts()}.
         *
         * @param parts 1 (no split) to 16
         * @return this builder
         * @throws IllegalArgumentException when out of range
         */
        public Builder readParts(int parts) {
            if (parts < 1 || parts > 16) {
                throw new IllegalArgumentException("readParts must be between 1 and 16, was " + parts);
            }
            readParts = parts;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#writeParts()}.
         *
         * @param parts 1 (no split) to 16
         * @return this builder
         * @throws IllegalArgumentException when out of range
         */
        public Builder writeParts(int parts) {
            if (parts < 1 || parts > 16) {
                throw new IllegalArgumentException("writeParts must be between 1 and 16, was " + parts);
            }
            writeParts = parts;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#registerAhead()}.
         *
         * @param ahead whether registrations are made ahead where they are memory regions of their own
         * @return this builder
         */
        public Builder registerAhead(boolean ahead) {
            registerAhead = ahead;
            return this;
        }

        /**
         * Sets {@link SmbjOptions#strictSignatures()}.
         *
         * @param strict whether ksmbd's signature of READ responses without data is refused
         * @return this builder
         * @since 1.3
         */
        public Builder strictSignatures(boolean strict) {
            strictSignatures = strict;
            return this;
        }

        /**
         * Builds the options.
         *
         * @return the options
         */
        public SmbjOptions build() {
            return new SmbjOptions(this);
        }
    }
}
