package org.smbdirect.protocol.internal;

import org.smbdirect.transport.ConnectionStatistics;

/**
 * The counters of one connection. Written only by the connection's actor thread; read by
 * {@link #snapshot()} from any thread (values may lag by a few operations).
 */
final class ConnectionCounters {
    long messagesSent;
    long bytesSent;
    long messagesReceived;
    long bytesReceived;
    long fragmentsSent;
    long fragmentsReceived;
    long creditsGranted;
    long creditsReceived;
    long creditStalls;
    long keepalivesSent;
    long keepalivesReceived;
    long keepalivesAnswered;
    long rdmaReads;
    long rdmaReadBytes;
    long rdmaWrites;
    long rdmaWriteBytes;

    Snapshot snapshot(long registrationsLive, long sendCredits, long receiveCredits) {
        return new Snapshot(new long[] {messagesSent, bytesSent, messagesReceived, bytesReceived, fragmentsSent,
            fragmentsReceived, creditsGranted, creditsReceived, creditStalls, keepalivesSent, keepalivesReceived,
            rdmaReads, rdmaReadBytes, rdmaWrites, rdmaWriteBytes, registrationsLive, sendCredits, receiveCredits,
            keepalivesAnswered});
    }

    /** An immutable {@link ConnectionStatistics}, also usable as an accumulator of sums. */
    static class Snapshot implements ConnectionStatistics {
        static final int FIELDS = 19;
        final long[] v;

        Snapshot(long[] values) {
            this.v = values;
        }

        /**
         * Adds the counters of another snapshot (the current values, registrations and credits
         * excepted when {@code countersOnly}).
         */
        static long[] sum(Iterable<? extends Snapshot> snapshots, long[] base) {
            long[] s = base.clone();
            for (Snapshot x : snapshots) {
                for (int i = 0; i < FIELDS; i++) {
                    s[i] += x.v[i];
                }
            }
            return s;
        }

        @Override
        public long messagesSent() {
            return v[0];
        }

        @Override
        public long bytesSent() {
            return v[1];
        }

        @Override
        public long messagesReceived() {
            return v[2];
        }

        @Override
        public long bytesReceived() {
            return v[3];
        }

        @Override
        public long fragmentsSent() {
            return v[4];
        }

        @Override
        public long fragmentsReceived() {
            return v[5];
        }

        @Override
        public long creditsGranted() {
            return v[6];
        }

        @Override
        public long creditsReceived() {
            return v[7];
        }

        @Override
        public long creditStalls() {
            return v[8];
        }

        @Override
        public long keepalivesSent() {
            return v[9];
        }

        @Override
        public long keepalivesReceived() {
            return v[10];
        }

        @Override
        public long keepalivesAnswered() {
            return v[18];
        }

        @Override
        public long rdmaReads() {
            return v[11];
        }

        @Override
        public long rdmaReadBytes() {
            return v[12];
        }

        @Override
        public long rdmaWrites() {
            return v[13];
        }

        @Override
        public long rdmaWriteBytes() {
            return v[14];
        }

        @Override
        public long registrationsLive() {
            return v[15];
        }

        @Override
        public long sendCredits() {
            return v[16];
        }

        @Override
        public long receiveCredits() {
            return v[17];
        }

        @Override
        public String toString() {
            return "messages sent/received " + v[0] + "/" + v[2] + ", bytes " + v[1] + "/" + v[3] + ", fragments "
                    + v[4] + "/" + v[5] + ", credits granted/received " + v[6] + "/" + v[7] + ", credit stalls "
                    + v[8] + ", keepalives sent/received/answered " + v[9] + "/" + v[10] + "/"
                    + v[18] + ", RDMA reads " + v[11] + " ("
                    + v[12] + " B), writes " + v[13] + " (" + v[14] + " B), registrations " + v[15]
                    + ", send credits " + v[16] + ", receive credits " + v[17];
        }
    }
}
