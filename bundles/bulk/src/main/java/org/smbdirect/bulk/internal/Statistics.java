package org.smbdirect.bulk.internal;

import org.smbdirect.bulk.BulkStatistics;

/** A snapshot of a session's counters. */
final class Statistics implements BulkStatistics {
    private final long inlineSends;
    private final long readTransfers;
    private final long writeTransfers;
    private final long bytesSent;
    private final long bytesReceived;
    private final long noBuffers;
    private final long transfersInFlight;

    Statistics(long inlineSends, long readTransfers, long writeTransfers, long bytesSent, long bytesReceived,
            long noBuffers, long transfersInFlight) {
        this.inlineSends = inlineSends;
        this.readTransfers = readTransfers;
        this.writeTransfers = writeTransfers;
        this.bytesSent = bytesSent;
        this.bytesReceived = bytesReceived;
        this.noBuffers = noBuffers;
        this.transfersInFlight = transfersInFlight;
    }

    @Override
    public long inlineSends() {
        return inlineSends;
    }

    @Override
    public long readTransfers() {
        return readTransfers;
    }

    @Override
    public long writeTransfers() {
        return writeTransfers;
    }

    @Override
    public long bytesSent() {
        return bytesSent;
    }

    @Override
    public long bytesReceived() {
        return bytesReceived;
    }

    @Override
    public long noBuffers() {
        return noBuffers;
    }

    @Override
    public long transfersInFlight() {
        return transfersInFlight;
    }

    @Override
    public String toString() {
        return "BulkStatistics[inlineSends=" + inlineSends + ", readTransfers=" + readTransfers + ", writeTransfers="
                + writeTransfers + ", bytesSent=" + bytesSent + ", bytesReceived=" + bytesReceived + ", noBuffers="
                + noBuffers + ", transfersInFlight=" + transfersInFlight + "]";
    }
}
