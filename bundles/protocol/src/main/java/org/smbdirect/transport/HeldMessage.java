package org.smbdirect.transport;

import java.nio.ByteBuffer;
import java.util.OptionalInt;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A received message the upper layer keeps beyond {@link ConnectionHandler#onMessage}, obtained
 * there with {@link SmbDirectConnection#holdMessage()}. Its bytes stay valid, and its receive
 * buffer stays out of use, until {@link #release()}: while held, the buffer is not posted again
 * and the peer gets no credit for it (MS-SMBD 3.1.5.9), so an upper layer that holds messages
 * slows its peer down instead of buffering without bound. Release it exactly once, from any
 * thread; later releases do nothing.
 */
@ProviderType
public interface HeldMessage extends AutoCloseable {

    /**
     * The message: the same read-only view {@link ConnectionHandler#onMessage} received, with the
     * position and limit it had when it was held.
     *
     * @return the message's bytes from position to limit
     */
    ByteBuffer message();

    /**
     * The local token the peer invalidated with this message (Connection.InvalidatedToken), if any.
     *
     * @return the token or empty
     */
    OptionalInt invalidatedToken();

    /**
     * Gives the message's buffer back to the connection; the credit returns to the peer with it.
     * The bytes must not be read afterwards.
     */
    void release();

    /** {@link #release()}. */
    @Override
    default void close() {
        release();
    }
}
