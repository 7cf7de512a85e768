package org.smbdirect.transport;

import java.util.Map;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Counters of a whole transport: the sums over every connection it has carried, open or ended,
 * plus connection counts and terminations by reason. A snapshot.
 */
@ProviderType
public interface TransportStatistics extends ConnectionStatistics {

    /**
     * Connections currently open.
     *
     * @return the count
     */
    long connectionsOpen();

    /**
     * Connections established since the transport started.
     *
     * @return the count
     */
    long connectionsEstablished();

    /**
     * Connection attempts (both directions) that failed before establishment.
     *
     * @return the count
     */
    long connectionsFailed();

    /**
     * Ended connections by reason; reasons that never occurred are absent.
     *
     * @return an immutable map
     */
    Map<TerminationReason, Long> terminations();
}
