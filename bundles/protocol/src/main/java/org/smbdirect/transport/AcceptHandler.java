package org.smbdirect.transport;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * Receives the connections arriving at a {@link SmbDirectListener} (MS-SMBD 3.1.7.2).
 */
@ConsumerType
@FunctionalInterface
public interface AcceptHandler {

    /**
     * A peer connected and negotiated successfully (MS-SMBD 3.1.5.6). Called on an engine thread
     * before any message of the connection is delivered.
     *
     * @param connection the new connection
     * @return the handler for its messages; {@code null} closes the connection
     */
    ConnectionHandler onConnection(SmbDirectConnection connection);
}
