package org.smbdirect.bulk;

import org.osgi.annotation.versioning.ProviderType;

/** Counters of one bulk session. A snapshot. */
@ProviderType
public interface BulkStatistics {

    /**
     * Sends completed entirely inline.
     *
     * @return the count
     */
    long inlineSends();

    /**
     * Sends completed by the peer's RDMA Read.
     *
     * @return the count
     */
    long readTransfers();

    /**
     * Sends completed by RDMA Write into the peer's memory.
     *
     * @return the count
     */
    long writeTransfers();

    /**
     * Application bytes sent and acknowledged.
     *
     * @return the count
     */
    long bytesSent();

    /**
     * Application bytes delivered to the handler.
     *
     * @return the count
     */
    long bytesReceived();

    /**
     * Sends that failed with {@link NoBuffersException}, on this side or the peer's.
     *
     * @return the count
     */
    long noBuffers();

    /**
     * Large transfers currently moving.
     *
     * @return the current number
     */
    long transfersInFlight();
}
