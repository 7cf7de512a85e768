package org.smbdirect.bulk;

import org.osgi.annotation.versioning.ConsumerType;

/** Receives the sessions arriving at a {@link BulkListener}. */
@ConsumerType
@FunctionalInterface
public interface BulkAcceptHandler {

    /**
     * A peer connected and the capabilities were exchanged.
     *
     * @param session the new session
     * @return the handler for its data; {@code null} closes the session
     */
    BulkHandler onSession(BulkSession session);
}
