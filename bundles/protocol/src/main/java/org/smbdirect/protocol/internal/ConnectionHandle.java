package org.smbdirect.protocol.internal;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.HeldMessage;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * The upper layer's {@link SmbDirectConnection}: a thin handle on the connection's engine. When
 * the connection ends, the engine hands over what outlives it (why it ended, the negotiated
 * parameters, the last statistics) and the handle lets go of it, so that a closed connection
 * releases its endpoint, buffers and queues at once even while the upper layer keeps the handle.
 */
final class ConnectionHandle implements SmbDirectConnection {
    private static final System.Logger LOG = ConnectionLog.LOG;

    private final int id;
    private final boolean initiator;
    private final InetSocketAddress remote;
    private final Duration closeWait;
    /** The engine while the connection lives; {@code null} once it has ended. */
    private volatile Connection engine;
    private volatile InetSocketAddress local;
    private volatile ConnectionParameters parameters;
    private volatile ConnectionLoss loss;
    private volatile ConnectionStatistics lastStatistics;
    private final CompletableFuture<Void> ended;

    ConnectionHandle(Connection engine, int id, boolean initiator, InetSocketAddress remote, Duration closeWait,
            CompletableFuture<Void> ended) {
        this.engine = engine;
        this.id = id;
        this.initiator = initiator;
        this.remote = remote;
        this.closeWait = closeWait;
        this.ended = ended;
    }

    /** Negotiation completed: the parameters of 3.1.4.7 and the local address are fixed. */
    void established(ConnectionParameters p, InetSocketAddress localAddress) {
        local = localAddress;
        parameters = p;
    }

    /**
     * The connection ended (3.1.7.1): the handle keeps what the upper layer may still ask and lets
     * go of the engine.
     */
    void ended(ConnectionLoss why, ConnectionStatistics last) {
        loss = why;
        lastStatistics = last;
        engine = null;
    }

    /**
     * The engine, for tests and diagnostics.
     *
     * @return the engine, or {@code null} once the connection has ended
     */
    Connection engine() {
        return engine;
    }

    /**
     * Runs a query on the engine's state on its thread (tests and tools).
     *
     * @param query reads the state
     * @param <T> the result type
     * @return its result; fails once the connection has ended
     */
    <T> CompletableFuture<T> inspect(Function<Connection, T> query) {
        Connection e = engine;
        return e == null ? CompletableFuture.failedFuture(lost()) : e.inspect(query);
    }

    int id() {
        return id;
    }

    private ConnectionLostException lost() {
        return new ConnectionLostException(loss().orElseThrow());
    }

    // ---------------------------------------------------------------- SmbDirectConnection

    @Override
    public InetSocketAddress localAddress() {
        Connection e = engine;
        InetSocketAddress l = local;
        return l != null || e == null ? l : e.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    /** MS-SMBD 3.1.4.7 Query Connection Parameters. */
    @Override
    public ConnectionParameters parameters() {
        return parameters;
    }

    @Override
    public ConnectionStatistics statistics() {
        Connection e = engine;
        return e != null ? e.statistics() : lastStatistics;
    }

    @Override
    public boolean isOpen() {
        return loss().isEmpty();
    }

    @Override
    public Optional<ConnectionLoss> loss() {
        // The loss is latched before the engine hands over and lets go, so either source is current.
        Connection e = engine;
        return Optional.ofNullable(e != null ? e.lifecycle.loss() : loss);
    }

    @Override
    public CompletionStage<Void> send(ByteBuffer message) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        enqueue(message, null, false, 0, f, null, null);
        return f;
    }

    @Override
    public CompletionStage<Void> sendGathering(ByteBuffer... message) {
        for (ByteBuffer b : message) {
            java.util.Objects.requireNonNull(b, "message part");
        }
        CompletableFuture<Void> f = new CompletableFuture<>();
        enqueue(null, message, false, 0, f, null, null);
        return f;
    }

    @Override
    public CompletionStage<Void> sendAndInvalidate(ByteBuffer message, int remoteToken) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        enqueue(message, null, true, remoteToken, f, null, null);
        return f;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A> void send(ByteBuffer message, A attachment, CompletionHandler<Void, ? super A> handler) {
        java.util.Objects.requireNonNull(handler, "handler");
        enqueue(message, null, false, 0, null, (CompletionHandler<Void, Object>) handler, attachment);
    }

    @Override
    public void sendAndWait(ByteBuffer message, Duration timeout) throws SmbDirectException, InterruptedException {
        refuseOnEngineThread("sendAndWait");
        await(send(message).toCompletableFuture(), timeout, "send");
    }

    /** MS-SMBD 3.1.4.2 Send Message. */
    private void enqueue(ByteBuffer message, ByteBuffer[] parts, boolean hasToken, int token,
            CompletableFuture<Void> future, CompletionHandler<Void, Object> h, Object attachment) {
        if (parts == null) {
            java.util.Objects.requireNonNull(message, "message");
        }
        Connection e = engine;
        if (e == null) {
            ConnectionLostException failure = lost();
            if (future != null) {
                future.completeExceptionally(failure);
            } else {
                h.failed(failure, attachment);
            }
            return;
        }
        ConnectionParameters p = parameters;
        e.send(message, parts, hasToken, token, future, h, attachment, p == null ? -1 : p.maxFragmentedSendSize());
    }

    @Override
    public boolean isWritable() {
        Connection e = engine;
        return e != null && e.sender.isWritable();
    }

    @Override
    public CompletionStage<Void> writable() {
        Connection e = engine;
        return e == null ? CompletableFuture.failedFuture(lost()) : e.sender.writable();
    }

    @Override
    public HeldMessage holdMessage() {
        Connection e = engine;
        if (e == null || !e.receiver.delivering()) {
            throw new IllegalStateException("holdMessage() is called from within ConnectionHandler.onMessage of "
                    + this + ", for the message being delivered");
        }
        return e.receiver.hold();
    }

    /** MS-SMBD 3.1.4.3 Register Buffer. */
    @Override
    public RegisteredBuffer register(ByteBuffer buffer, RemoteAccess access) throws SmbDirectException {
        return register(buffer, access, false);
    }

    /** MS-SMBD 3.1.4.3 Register Buffer, handed to the device with the connection's next request. */
    @Override
    public RegisteredBuffer registerForNextSend(ByteBuffer buffer, RemoteAccess access) throws SmbDirectException {
        return register(buffer, access, true);
    }

    private RegisteredBuffer register(ByteBuffer buffer, RemoteAccess access, boolean withNextRequest)
            throws SmbDirectException {
        java.util.Objects.requireNonNull(buffer, "buffer");
        java.util.Objects.requireNonNull(access, "access");
        Connection e = engine;
        if (e == null) {
            throw lost();
        }
        return e.registrations.register(buffer, access, withNextRequest);
    }

    /** MS-SMBD 3.1.4.4 Deregister Buffer. */
    @Override
    public void deregister(List<BufferDescriptorV1> descriptors) throws SmbDirectException {
        java.util.Objects.requireNonNull(descriptors, "descriptors");
        Connection e = engine;
        if (e == null) {
            // The endpoint's close released every registration: none is known any more.
            if (!descriptors.isEmpty()) {
                throw new IllegalArgumentException(descriptors.get(0) + " was not registered on " + this
                        + " (the connection has ended; its registrations went with it)");
            }
            return;
        }
        e.registrations.deregister(descriptors);
    }

    /** MS-SMBD 3.1.4.5 RDMA Write to Peer Buffer. */
    @Override
    public CompletionStage<Void> rdmaWrite(ByteBuffer source, List<BufferDescriptorV1> remoteBuffer, long offset) {
        return rdma(false, source, remoteBuffer, offset);
    }

    /** MS-SMBD 3.1.4.6 RDMA Read from Peer Buffer. */
    @Override
    public CompletionStage<Void> rdmaRead(ByteBuffer destination, List<BufferDescriptorV1> remoteBuffer, long offset) {
        if (destination.isReadOnly()) {
            throw new IllegalArgumentException("an RDMA Read needs a writable destination");
        }
        return rdma(true, destination, remoteBuffer, offset);
    }

    private CompletionStage<Void> rdma(boolean read, ByteBuffer local, List<BufferDescriptorV1> remoteBuffer,
            long offset) {
        java.util.Objects.requireNonNull(local, "buffer");
        java.util.Objects.requireNonNull(remoteBuffer, "descriptors");
        Connection e = engine;
        ConnectionParameters p = parameters;
        int maxReadWriteSize = p == null ? -1 : p.maxReadWriteSize();
        if (e == null) {
            if (!local.isDirect()) {
                throw new IllegalArgumentException("RDMA needs a direct local buffer");
            }
            RdmaTransfer.peerRanges(remoteBuffer, offset, local.remaining());
            return CompletableFuture.failedFuture(lost());
        }
        return e.rdma(read, local, remoteBuffer, offset, maxReadWriteSize);
    }

    @Override
    public CompletionStage<Void> closeAsync() {
        Connection e = engine;
        if (e != null) {
            e.closeAsync();
        }
        return ended;
    }

    @Override
    public void close() {
        CompletableFuture<Void> f = closeAsync().toCompletableFuture();
        if (Actor.inStep()) {
            return; // cannot wait on the thread that must do the work; the close proceeds asynchronously
        }
        try {
            f.get(closeWait.toMillis() * 2 + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException ex) {
            LOG.log(System.Logger.Level.WARNING, this + ": close did not complete: " + ex);
        }
    }

    @Override
    public String toString() {
        return "SmbDirectConnection#" + id + "[" + (initiator ? "to " : "from ") + remote + "]";
    }

    // ---------------------------------------------------------------- blocking helpers

    static void refuseOnEngineThread(String call) {
        if (Actor.inStep()) {
            throw new IllegalStateException(call + " would block an SMB Direct engine thread (and deadlock); "
                    + "use the asynchronous form from handlers and completion callbacks");
        }
    }

    static <T> T await(CompletableFuture<T> f, Duration timeout, String what)
            throws SmbDirectException, InterruptedException {
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof SmbDirectException) {
                throw (SmbDirectException) c;
            }
            throw new SmbDirectException(what + " failed: " + c, c);
        } catch (TimeoutException e) {
            throw new SmbDirectException(what + " did not complete within " + timeout);
        }
    }
}
