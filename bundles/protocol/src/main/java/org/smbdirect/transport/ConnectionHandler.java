package org.smbdirect.transport;

import java.nio.ByteBuffer;
import java.util.OptionalInt;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The upper layer's receiver of one connection's notifications.
 *
 * <p>Calls for one connection are made one at a time, in order, on an engine thread: every
 * message in the order the peer sent it, then at most one {@link #onConnectionLost}. A handler
 * should return promptly: until it returns, the connection's receive buffer is not reposted, so a
 * slow handler throttles the peer through its credits (MS-SMBD 3.1.5.9) rather than through
 * unbounded buffering. An exception thrown by a handler is logged and otherwise ignored.
 */
@ConsumerType
public interface ConnectionHandler {

    /**
     * A complete upper-layer message arrived: a single Data Transfer message or a reassembled
     * fragmented sequence (MS-SMBD 3.1.5.8).
     *
     * @param connection the connection
     * @param message the message's bytes from position to limit; a read-only view valid only
     *        during this call: copy what you keep
     * @param invalidatedToken the local token the peer invalidated with this message
     *        (Connection.InvalidatedToken), if any
     */
    void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken);

    /**
     * The connection ended (MS-SMBD 3.1.7.1). Operations still pending have failed with {@link
     * ConnectionLostException}; registrations on the connection are gone.
     *
     * @param connection the connection
     * @param loss why
     */
    default void onConnectionLost(SmbDirectConnection connection, ConnectionLoss loss) {
    }
}
