package org.smbdirect.transport;

import java.nio.ByteBuffer;
import java.util.OptionalInt;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The upper layer's receiver of one connection's notifications.
 *
 * <p>Calls for one connection are made one at a time, in order: every message in the order the
 * peer sent it, then at most one {@link #onConnectionLost}. A handler should return promptly:
 * until it returns, the connection's receive buffer is not reposted, so a slow handler throttles
 * the peer through its credits (MS-SMBD 3.1.5.9) rather than through unbounded buffering. An
 * exception thrown by a handler is logged and otherwise ignored.
 *
 * <p>Which thread: by default an engine thread, where a handler may block (waiting for a lock,
 * for I/O, for another connection): the engine then moves its other connections to another thread
 * and only this connection waits. A handler that never blocks can say so ({@link #nonBlocking()},
 * or wrap it with {@link #nonBlocking(ConnectionHandler)}): its connection's completions are then
 * processed, and its calls made, on whichever thread takes them, often the RDMA provider's
 * completion thread, which saves a hand-over between threads (a wake-up) per message each way; when
 * they arrive while a thread of the upper layer is inside a send or an RDMA operation on the
 * connection, that thread may process them before the call returns.
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

    /**
     * Whether this handler never blocks: its calls return without waiting for anything (no lock
     * held for long, no I/O, no blocking call of the transport such as {@link
     * SmbDirectConnection#sendAndWait}, which is refused there). Then the connection's work runs on
     * the thread that takes its completions, a provider's thread shared with other connections (or
     * on a thread sending on the connection, when they arrive during its send), and so do the
     * completions of its sends and RDMA operations, with whatever the upper layer chained to them:
     * those must not block either. A handler that blocks all the same is noticed
     * within about 100 ms; its connection goes back to the engine's threads, with a warning. Until
     * it returns, though, it holds the provider's thread, and with it the completions of the
     * provider's other connections.
     *
     * <p>Asked once, when the connection is established (for an accepted connection, once the
     * {@link AcceptHandler} returned the handler).
     *
     * @return {@code false} by default
     */
    default boolean nonBlocking() {
        return false;
    }

    /**
     * A handler that calls {@code handler} and says it never blocks ({@link #nonBlocking()}).
     *
     * @param handler what to call; it must not block
     * @return the handler to pass to {@link SmbDirect#connect} or return from an {@link
     *         AcceptHandler}
     */
    static ConnectionHandler nonBlocking(ConnectionHandler handler) {
        java.util.Objects.requireNonNull(handler, "handler");
        return new ConnectionHandler() {
            @Override
            public void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken) {
                handler.onMessage(connection, message, invalidatedToken);
            }

            @Override
            public void onConnectionLost(SmbDirectConnection connection, ConnectionLoss loss) {
                handler.onConnectionLost(connection, loss);
            }

            @Override
            public boolean nonBlocking() {
                return true;
            }

            @Override
            public String toString() {
                return "nonBlocking(" + handler + ")";
            }
        };
    }
}
