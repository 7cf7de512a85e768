package org.smbdirect.smbj.internal;

import java.util.concurrent.atomic.AtomicLong;

import org.smbdirect.smbj.RdmaChannelStatistics;

/** The live counters of one {@link SmbjTransportImpl}; {@link #snapshot()} is what users see. */
final class Statistics {
    final AtomicLong rdmaWrites = new AtomicLong();
    final AtomicLong rdmaWriteBytes = new AtomicLong();
    final AtomicLong rdmaReads = new AtomicLong();
    final AtomicLong rdmaReadBytes = new AtomicLong();
    final AtomicLong inlineWrites = new AtomicLong();
    final AtomicLong inlineWriteBytes = new AtomicLong();
    final AtomicLong inlineReads = new AtomicLong();
    final AtomicLong inlineReadBytes = new AtomicLong();
    final AtomicLong remoteInvalidations = new AtomicLong();
    final AtomicLong localInvalidations = new AtomicLong();
    final AtomicLong signatureFailures = new AtomicLong();
    final AtomicLong splitReads = new AtomicLong();
    final AtomicLong splitWrites = new AtomicLong();
    final AtomicLong readsRegisteredAhead = new AtomicLong();
    final AtomicLong writesRegisteredAhead = new AtomicLong();
    final AtomicLong toleratedReadSignatures = new AtomicLong();

    RdmaChannelStatistics snapshot() {
        return new Snapshot(rdmaWrites.get(), rdmaWriteBytes.get(), rdmaReads.get(), rdmaReadBytes.get(),
                inlineWrites.get(), inlineWriteBytes.get(), inlineReads.get(), inlineReadBytes.get(),
                remoteInvalidations.get(), localInvalidations.get(), signatureFailures.get(), splitReads.get(),
                splitWrites.get(), readsRegisteredAhead.get(), writesRegisteredAhead.get(), toleratedReadSignatures.get());
    }

    private static final class Snapshot implements RdmaChannelStatistics {
        private final long[] v;

        Snapshot(long... v) {
            this.v = v;
        }

        @Override
        public long rdmaWrites() {
            return v[0];
        }

        @Override
        public long rdmaWriteBytes() {
            return v[1];
        }

        @Override
        public long rdmaReads() {
            return v[2];
        }

        @Override
        public long rdmaReadBytes() {
            return v[3];
        }

        @Override
        public long inlineWrites() {
            return v[4];
        }

        @Override
        public long inlineWriteBytes() {
            return v[5];
        }

        @Override
        public long inlineReads() {
            return v[6];
        }

        @Override
        public long inlineReadBytes() {
            return v[7];
        }

        @Override
        public long remoteInvalidations() {
            return v[8];
        }

        @Override
        public long localInvalidations() {
            return v[9];
        }

        @Override
        public long signatureFailures() {
            return v[10];
        }

        @Override
        public long splitReads() {
            return v[11];
        }

        @Override
        public long splitWrites() {
            return v[12];
        }

        @Override
        public long readsRegisteredAhead() {
            return v[13];
        }

        @Override
        public long writesRegisteredAhead() {
            return v[14];
        }

        @Override
        public long toleratedReadSignatures() {
            return v[15];
        }

        @Override
        public String toString() {
            return String.format("RDMA channel: %d WRITEs (%d B, %d of smbj's split), %d READs (%d B, %d of smbj's split); inline: %d WRITEs (%d B), "
                    + "%d READs (%d B); registrations invalidated by the server %d, locally %d; registered ahead: READs %d, WRITEs %d; bad signatures %d; "
                    + "READ responses signed as ksmbd signs them %d",
                    v[0], v[1], v[12], v[2], v[3], v[11], v[4], v[5], v[6], v[7], v[8], v[9], v[13], v[14], v[10], v[15]);
        }
    }
}
