package org.smbdirect.rdma.sim.internal;

/**
 * The latency model's arithmetic: a request occupies its sender's link for its serialization time at
 * the configured bandwidth, one after the other, and arrives one latency after it left. The clock is
 * read only where the latency model or a timer needs it; a time of 0 means "not read".
 */
final class LatencyModel {
    private LatencyModel() {
    }

    /** The time {@code now}, or the clock's when {@code now} was not read (0). */
    static long clock(long now) {
        return now != 0 ? now : System.nanoTime();
    }

    static long serialization(int bytes, SimSettings live) {
        // 8 bits per byte at bandwidthMbps megabits per second: 8000 / Mbps nanoseconds per byte
        return bytes * 8000L / live.bandwidthMbps;
    }

    static long arrival(SimEndpoint x, int bytes, long now, SimSettings live) {
        long begin = x.linkFreeAt - now > 0 ? x.linkFreeAt : now;
        x.linkFreeAt = begin + serialization(bytes, live);
        return x.linkFreeAt + live.latencyMicros * 1000L;
    }
}
