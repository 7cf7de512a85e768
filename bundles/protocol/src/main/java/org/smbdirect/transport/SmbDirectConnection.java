package org.smbdirect.transport;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

import org.osgi.annotation.versioning.ProviderType;

/**
 * An established SMB Direct connection (the upper layer's view of MS-SMBD's Connection).
 *
 * <p>All methods are thread-safe. Messages are sent in the order the send calls were made (from
 * one thread; across threads, in the order they reach the connection). Operations on a
 * connection that has ended fail with {@link ConnectionLostException}; misuse is rejected at once
 * with {@link IllegalArgumentException} or {@link IllegalStateException} and leaves the
 * connection as it was.
 */
@ProviderType
public interface SmbDirectConnection extends AutoCloseable {

    /**
     * The local address.
     *
     * @return the address
     */
    InetSocketAddress localAddress();

    /**
     * The peer's address.
     *
     * @return the address
     */
    InetSocketAddress remoteAddress();

    /**
     * The negotiated parameters (MS-SMBD 3.1.4.7).
     *
     * @return a snapshot
     */
    ConnectionParameters parameters();

    /**
     * The connection's counters.
     *
     * @return a snapshot
     */
    ConnectionStatistics statistics();

    /**
     * Whether the connection is still open.
     *
     * @return {@code false} once lost or closed
     */
    boolean isOpen();

    /**
     * Why the connection ended.
     *
     * @return the loss, empty while open
     */
    Optional<ConnectionLoss> loss();

    /**
     * Sends an upper-layer message (MS-SMBD 3.1.4.2): the bytes from the buffer's position to its
     * limit, fragmented as needed. The buffer's position and limit are not changed; its content
     * must not change until the returned stage completes.
     *
     * @param message at most {@link ConnectionParameters#maxFragmentedSendSize()} bytes
     * @return completes when the RDMA provider reports every fragment sent, or exceptionally with
     *         {@link ConnectionLostException} or {@link SmbDirectException}
     * @throws IllegalArgumentException when the message is empty (the peer would drop it) or longer
     *         than MaxFragmentedSendSize
     * @throws IllegalStateException when too many messages are already waiting to be sent (see
     *         {@link #isWritable()} and {@link #writable()})
     */
    CompletionStage<Void> send(ByteBuffer message);

    /**
     * Sends one upper-layer message made of the bytes of several buffers, each from its position to
     * its limit, in order (a gathering send: a header and a payload need not be copied together
     * first). Otherwise as {@link #send(ByteBuffer)}; the array may be reused at once, the buffers'
     * contents not until the stage completes.
     *
     * @param message the parts; their total at most {@link ConnectionParameters#maxFragmentedSendSize()}
     * @return as for {@link #send(ByteBuffer)}
     * @throws IllegalArgumentException when the parts hold no byte or too many
     * @throws IllegalStateException when too many messages are already waiting to be sent
     * @since 1.1
     */
    CompletionStage<Void> sendGathering(ByteBuffer... message);

    /**
     * Whether a send would be accepted now: fewer than the configured maximum of messages are
     * waiting to be sent ({@link SmbDirectConfig#maxPendingSends()}).
     *
     * @return {@code true} when there is room for another message
     * @since 1.1
     */
    boolean isWritable();

    /**
     * A writability signal: completes once a send would be accepted, at once when one would be
     * now, or exceptionally with {@link ConnectionLostException} when the connection ends first.
     * A sender that keeps many messages in flight waits for it instead of catching the {@link
     * IllegalStateException} of a full connection. Completes on an engine thread when it does not
     * complete at once: do not block in its callbacks.
     *
     * @return the stage
     * @since 1.1
     */
    CompletionStage<Void> writable();

    /**
     * Keeps the message being delivered: called from within {@link ConnectionHandler#onMessage},
     * it returns the message as a {@link HeldMessage} whose bytes stay valid until released. Its
     * receive buffer, and the peer's credit for it, return on {@link HeldMessage#release()}.
     * Calling it again during the same delivery returns the same held message.
     *
     * @return the held message
     * @throws IllegalStateException when not called from within this connection's {@code onMessage}
     * @since 1.1
     */
    HeldMessage holdMessage();

    /**
     * Sends an upper-layer message and asks the peer's RDMA provider to invalidate one of the
     * peer's memory tokens with it (MS-SMBD 3.1.4.2, send with invalidate). Where the provider
     * cannot send with invalidate the token is ignored (3.1.5.1 allows this).
     *
     * @param message the message, as for {@link #send(ByteBuffer)}
     * @param remoteToken the peer's token to invalidate
     * @return as for {@link #send(ByteBuffer)}
     */
    CompletionStage<Void> sendAndInvalidate(ByteBuffer message, int remoteToken);

    /**
     * Sends an upper-layer message, reporting to a completion handler: the allocation-free form
     * of {@link #send(ByteBuffer)}.
     *
     * @param <A> the attachment type
     * @param message the message, as for {@link #send(ByteBuffer)}
     * @param attachment passed back to the handler
     * @param handler called once, on an engine thread, when the send completes or fails
     * @throws IllegalArgumentException when the message is longer than MaxFragmentedSendSize
     * @throws IllegalStateException when too many messages are already waiting to be sent
     */
    <A> void send(ByteBuffer message, A attachment, CompletionHandler<Void, ? super A> handler);

    /**
     * Sends an upper-layer message and waits until it is sent.
     *
     * @param message the message, as for {@link #send(ByteBuffer)}
     * @param timeout how long to wait
     * @throws SmbDirectException when the send failed or did not complete in time
     * @throws InterruptedException when interrupted while waiting
     */
    void sendAndWait(ByteBuffer message, Duration timeout) throws SmbDirectException, InterruptedException;

    /**
     * Registers a local buffer for RDMA by the peer (MS-SMBD 3.1.4.3): the bytes from position to
     * limit of a direct buffer, split into several registrations where the RDMA provider's region
     * size limit requires it. If any registration fails, none remains.
     *
     * @param buffer a direct buffer
     * @param access what the peer may do
     * @return the registration with its descriptors
     * @throws IllegalArgumentException for a heap buffer, an empty buffer, or write access to a
     *         read-only buffer
     * @throws SmbDirectException when the RDMA provider refuses, or the connection is lost
     */
    RegisteredBuffer register(ByteBuffer buffer, RemoteAccess access) throws SmbDirectException;

    /**
     * Registers a local buffer whose descriptors the peer learns from a message this connection
     * sends next (MS-SMBD 3.1.4.3), as an SMB2 READ or WRITE request through the RDMA channel
     * carries them. As {@link #register}, except that the RDMA provider may make the registration
     * usable together with the connection's next request to its device (a message sent, an RDMA
     * Read or Write) instead of at once: on a verbs device the memory window's bind goes to the
     * device in one post with that request, which saves a post per registration. The descriptors
     * are usable by the peer in every message this connection sends after this returns; they must
     * not reach the peer any other way. {@link #deregister} works as for any registration.
     *
     * @param buffer a direct buffer
     * @param access what the peer may do
     * @return the registration with its descriptors
     * @throws IllegalArgumentException as {@link #register}
     * @throws SmbDirectException as {@link #register}
     * @since 1.4
     */
    RegisteredBuffer registerForNextSend(ByteBuffer buffer, RemoteAccess access) throws SmbDirectException;

    /**
     * Deregisters buffers by their descriptors (MS-SMBD 3.1.4.4). When this returns, no remote
     * access to them is in progress and none is possible.
     *
     * @param descriptors descriptors returned by {@link #register} on this connection
     * @throws IllegalArgumentException for a descriptor not registered on this connection
     * @throws SmbDirectException when the RDMA provider reports an error
     */
    void deregister(List<BufferDescriptorV1> descriptors) throws SmbDirectException;

    /**
     * RDMA-writes the bytes from the source's position to its limit into the peer's buffer
     * described by {@code remote}, starting {@code offset} bytes into it (MS-SMBD 3.1.4.5). The
     * source must be direct; its position and limit are not changed.
     *
     * @param source the data, at most {@link ConnectionParameters#maxReadWriteSize()} bytes
     * @param remote the peer's descriptors, in order
     * @param offset where in the peer's buffer to start
     * @return completes when the RDMA provider reports every write done
     * @throws IllegalArgumentException when the range falls outside the descriptors, exceeds
     *         MaxReadWriteSize, or the source is a heap buffer
     */
    CompletionStage<Void> rdmaWrite(ByteBuffer source, List<BufferDescriptorV1> remote, long offset);

    /**
     * RDMA-reads from the peer's buffer described by {@code remote}, starting {@code offset} bytes
     * into it, into the destination from its position to its limit (MS-SMBD 3.1.4.6). The
     * destination must be direct and writable; its position and limit are not changed.
     *
     * @param destination where the data goes, at most MaxReadWriteSize bytes
     * @param remote the peer's descriptors, in order
     * @param offset where in the peer's buffer to start
     * @return completes when the RDMA provider reports every read done
     * @throws IllegalArgumentException as for {@link #rdmaWrite}, or a read-only destination
     */
    CompletionStage<Void> rdmaRead(ByteBuffer destination, List<BufferDescriptorV1> remote, long offset);

    /**
     * Closes gracefully: messages already accepted by {@link #send} are transmitted first, then
     * the RDMA connection is disconnected and the handler's {@link
     * ConnectionHandler#onConnectionLost} reports {@link TerminationReason#LOCAL_CLOSE}.
     *
     * @return completes when the connection has ended
     */
    CompletionStage<Void> closeAsync();

    /**
     * {@link #closeAsync()}, waiting for the connection to end (at most the keepalive response
     * timeout, after which it is aborted).
     */
    @Override
    void close();
}
