package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.smbdirect.bulk.BulkAcceptHandler;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * One session of the sockets-direct session protocol over one SMB Direct connection: its set-up
 * (HELLO, then the {@link SessionLimits}), the application's calls, the connection's events, the
 * control messages on their way to the transport and the session's end. The {@link SendingHalf}
 * moves the application's sends, in order, inline or by RDMA; the {@link ReceivingHalf} the peer's,
 * delivered in order.
 *
 * <p>Threading: every piece of state is guarded by {@link #lock}. Entry points (the application's
 * calls, the connection's messages and loss, completions of sends and RDMA operations) decide
 * under the lock and collect in {@link Actions} what calls out (completing stages, the handler,
 * deregistration, RDMA operations), which runs after the lock is released. The receiving half
 * changes only on the connection's engine thread, so deliveries reach the handler one at a time,
 * in order.
 *
 * <p>Memory: this side holds at most {@link BulkConfig#maxInFlight()} of the peer's large sends in
 * direct memory, moving or complete and waiting for order (a transfer keeps its slot until
 * delivered); the peer may start sends at most {@link Hello#receiveWindow} beyond the oldest one
 * not yet received completely, and have at most its announced MaxInFlight large transfers open. A
 * peer that exceeds either ends the session.
 */
final class Session implements BulkSession, ConnectionHandler {
    private static final System.Logger LOG = System.getLogger(Session.class.getName());
    /** Control messages handed to the transport at once; later ones wait in the outbox. */
    static final int TRANSPORT_WINDOW = 64;
    /** RDMA operations one transfer has outstanding at once. */
    static final int RDMA_WINDOW = 4;
    /** How long {@link #close()} waits for the sends already made before ending the connection. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(30);

    private final BulkTransferImpl owner;
    private final BulkConfig config;
    private final BulkAcceptHandler acceptHandler;
    private volatile BulkHandler handler;
    private final CompletableFuture<BulkSession> opened = new CompletableFuture<>();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    /** Guards the session and both halves. */
    final Object lock = new Object();
    private final SendCompletion sendCompletion = new SendCompletion();
    /**
     * Marks the threads the transport runs this layer's callbacks on (its engine threads): a
     * blocking call there could wait for work only that thread can do.
     */
    private static final ThreadLocal<Boolean> ENGINE_THREAD = new ThreadLocal<>();

    // ------------------------------------------------------------ guarded by lock
    /** Written under the lock; volatile for {@link #toString()}. */
    volatile SmbDirectConnection connection;
    Hello local;
    Hello peer;
    boolean ready;
    private boolean abandoned;
    private boolean closing;
    private boolean disconnecting;
    ConnectionLoss ended;
    /** Fixed once both HELLOs are known ({@code null} before). */
    SessionLimits limits;
    final SendingHalf sending;
    final ReceivingHalf receiving;
    private final ArrayDeque<Outbound> outbox = new ArrayDeque<>();
    private int handed;

    /**
     * Creates a session for a connection being made or accepted.
     *
     * @param owner the bulk-transfer layer that made it, told when it ends
     * @param config the configuration
     * @param allocator where transfer memory comes from
     * @param handler the data handler (initiator), or {@code null} until {@code acceptHandler} gives one
     * @param acceptHandler the listener's handler (listener side), or {@code null}
     */
    Session(BulkTransferImpl owner, BulkConfig config, Allocator allocator, BulkHandler handler,
            BulkAcceptHandler acceptHandler) {
        this.owner = owner;
        this.config = config;
        this.handler = handler;
        this.acceptHandler = acceptHandler;
        this.sending = new SendingHalf(this, config, allocator);
        this.receiving = new ReceivingHalf(this, config, allocator);
    }

    /** A control message waiting for, or handed to, the transport. */
    private static final class Outbound {
        final ByteBuffer message;
        /** The send this message completes once the transport has sent it (DATA, WRITE's COMPLETE). */
        final OutgoingSend completes;

        Outbound(ByteBuffer message, OutgoingSend completes) {
            this.message = message;
            this.completes = completes;
        }
    }

    /** Completes when the peer's HELLO arrived (and the application has the session). */
    CompletableFuture<BulkSession> opened() {
        return opened;
    }

    /** Completes when the connection has ended and the session is done. */
    CompletableFuture<Void> ended() {
        return closed.copy();
    }

    // ================================================================ life cycle

    /**
     * The connection is established: send HELLO (the session protocol's set-up).
     *
     * @param c the connection
     */
    void start(SmbDirectConnection c) {
        Actions a = new Actions();
        synchronized (lock) {
            if (abandoned) {
                connection = c;
                disconnecting = true;
                a.add(c::closeAsync);
            } else {
                attachLocked(c);
                settleLocked(a);
            }
        }
        a.run();
    }

    /** The connection could not be made. */
    void connectFailed(Throwable e) {
        opened.completeExceptionally(unwrap(e));
        owner.ended(this);
    }

    /**
     * Gives up before the session opened (the caller's wait timed out, or no HELLO came): the
     * connection, once there, is closed.
     */
    void abandon(SmbDirectException why) {
        Actions a = new Actions();
        synchronized (lock) {
            if (ready || abandoned) {
                return;
            }
            abandoned = true;
            opened.completeExceptionally(why);
            if (connection != null && !disconnecting) {
                ended = new ConnectionLoss(TerminationReason.LOCAL_CLOSE, why.getMessage());
                disconnecting = true;
                a.add(connection::closeAsync);
            }
        }
        a.run();
    }

    private void attachLocked(SmbDirectConnection c) {
        if (connection == null) {
            connection = c;
        }
        if (local == null) {
            ConnectionParameters p = c.parameters();
            // Announced: whether the peer may ask this side to RDMA Read, and this side's limits.
            local = new Hello(p.rdmaRead(), config.maxInFlight(), config.maxMessageSize(), p.maxReadWriteSize(),
                    config.maxQueuedSends());
            outbox.add(new Outbound(ControlMessage.hello(local), null));
        }
    }

    /** Both HELLOs are known: fix the session's limits and let sends flow. */
    private void becomeReadyLocked(Actions a) {
        ConnectionParameters p = connection.parameters();
        SessionLimits l = SessionLimits.of(p.rdmaRead(), p.maxReadWriteSize(), p.maxFragmentedSendSize(),
                p.maxSendSize(), peer, config.inlineThreshold(), config.maxMessageSize());
        limits = l;
        ready = true;
        LOG.log(System.Logger.Level.DEBUG, () -> this + " open: local " + local + ", peer " + peer + ", path "
                + (l.useRead() ? "READ" : "WRITE") + ", inline up to " + l.inlineLimit() + " bytes, RDMA in "
                + l.rdmaChunk() + "-byte operations");
        a.add(this::surface);
    }

    /** Hands the session to the application. */
    private void surface() {
        if (acceptHandler != null) {
            BulkHandler h = null;
            try {
                h = acceptHandler.onSession(this);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, this + ": accept handler failed", e);
            }
            if (h == null) {
                closeAsync();
                return;
            }
            handler = h;
            opened.complete(this);
        } else if (!opened.complete(this)) {
            closeAsync(); // the application stopped waiting
        }
    }

    // ================================================================ the application's calls

    @Override
    public SmbDirectConnection connection() {
        synchronized (lock) {
            return connection;
        }
    }

    @Override
    public CompletionStage<Void> send(ByteBuffer data) {
        int length = data.remaining();
        if (length > config.maxMessageSize()) {
            throw new IllegalArgumentException("a send of " + length + " bytes exceeds maxMessageSize "
                    + config.maxMessageSize());
        }
        OutgoingSend s = new OutgoingSend(data);
        Actions a = new Actions();
        synchronized (lock) {
            if (ended != null || closing) {
                ConnectionLoss why = ended != null ? ended
                        : new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "the bulk session is closing");
                s.future.completeExceptionally(new ConnectionLostException(why));
                return s.future;
            }
            if (ready && length > limits.sendLimit()) {
                throw new IllegalArgumentException("a send of " + length + " bytes exceeds the " + limits.sendLimit()
                        + " bytes the peer accepts (its maxMessageSize)");
            }
            if (sending.waitingCount() >= config.maxQueuedSends()) {
                throw new IllegalStateException(sending.waitingCount() + " sends already wait on " + this
                        + " (maxQueuedSends " + config.maxQueuedSends() + ")");
            }
            sending.enqueue(s);
            settleLocked(a);
        }
        a.run();
        return s.future;
    }

    @Override
    public void sendAndWait(ByteBuffer data, Duration timeout) throws SmbDirectException, InterruptedException {
        refuseOnEngineThread("sendAndWait");
        await(send(data).toCompletableFuture(), timeout, "bulk send");
    }

    @Override
    public boolean peerCanRdmaRead() {
        synchronized (lock) {
            return limits != null && limits.useRead();
        }
    }

    @Override
    public BulkStatistics statistics() {
        synchronized (lock) {
            SendingHalf out = sending;
            return new Statistics(out.inlineSends, out.readTransfers, out.writeTransfers, out.bytesSent,
                    receiving.bytesReceived, out.noBuffers, out.largeInTransfer());
        }
    }

    /** The most large sends this session had moving at once (for tests of pipelining). */
    int inFlightHighWater() {
        synchronized (lock) {
            return sending.inFlightHighWater;
        }
    }

    @Override
    public CompletionStage<Void> closeAsync() {
        Actions a = new Actions();
        synchronized (lock) {
            if (ended == null && !closing) {
                closing = true;
                settleLocked(a);
            }
        }
        a.run();
        return closed.copy();
    }

    @Override
    public void close() {
        CompletableFuture<Void> f = closeAsync().toCompletableFuture();
        if (onEngineThread()) {
            return; // cannot wait on the thread that must do the work; the close proceeds
        }
        try {
            f.get(CLOSE_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": sends still pending after " + CLOSE_WAIT
                    + "; closing the connection");
            SmbDirectConnection c = connection();
            if (c != null) {
                c.close();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> this + ": close: " + e.getCause());
        }
    }

    // ================================================================ the connection's events

    @Override
    public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
        ENGINE_THREAD.set(Boolean.TRUE);
        Actions a = new Actions();
        try {
            synchronized (lock) {
                if (ended == null && !abandoned) {
                    attachLocked(c);
                    try {
                        receiveLocked(ControlMessage.decode(message), a);
                    } catch (MalformedMessageException e) {
                        violationLocked(e.getMessage(), a);
                    }
                    settleLocked(a);
                }
            }
        } catch (RuntimeException e) {
            // Never into the engine: end the session with the reason.
            LOG.log(System.Logger.Level.ERROR, this + ": internal error on a control message", e);
            synchronized (lock) {
                endLocked(new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "bulk session internal error: " + e), a);
                disconnectLocked(a);
            }
        } finally {
            a.run();
        }
    }

    @Override
    public void onConnectionLost(SmbDirectConnection c, ConnectionLoss loss) {
        ENGINE_THREAD.set(Boolean.TRUE);
        Actions a = new Actions();
        ConnectionLoss why;
        boolean tell;
        synchronized (lock) {
            endLocked(loss, a);
            why = ended;
            tell = ready && handler != null;
        }
        a.run();
        if (tell) {
            try {
                handler.onClosed(this, why);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, this + ": onClosed handler failed", e);
            }
        }
        owner.ended(this);
        closed.complete(null);
    }

    /** The session protocol's processing of one control message. */
    private void receiveLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        if (peer == null) {
            if (m.type != Type.HELLO) {
                throw new MalformedMessageException(m.type + " before the peer's HELLO");
            }
            peer = m.hello();
            becomeReadyLocked(a);
            return;
        }
        switch (m.type) {
            case HELLO:
                throw new MalformedMessageException("a second HELLO");
            case DATA:
                receiving.receiveDataLocked(m, a);
                break;
            case READ_REQUEST:
            case WRITE_REQUEST:
                receiving.receiveRequestLocked(m, a);
                break;
            case TARGET:
                sending.receiveTargetLocked(m, a);
                break;
            case COMPLETE:
                if (m.fromSender()) {
                    receiving.receiveWriteCompleteLocked(m, a);
                } else {
                    sending.receiveReadCompleteLocked(m, a);
                }
                break;
            case NOBUFS:
                if (m.fromSender()) {
                    receiving.receiveSenderNoBuffersLocked(m, a);
                } else {
                    sending.receiveReceiverNoBuffersLocked(m, a);
                }
                break;
            default:
                throw new MalformedMessageException("unexpected " + m.type);
        }
    }

    /** Hands one send's data to the handler (outside the lock). */
    void deliver(ByteBuffer data) {
        BulkHandler h = handler;
        if (h == null) {
            return;
        }
        try {
            h.onData(this, data);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": data handler failed", e);
        }
    }

    // ================================================================ both halves

    /** Queues a control message for the transport; {@code completes} finishes once it is sent. */
    void queue(ByteBuffer message, OutgoingSend completes) {
        outbox.add(new Outbound(message, completes));
    }

    /** After every event: start what may start, hand messages to the transport, close when drained. */
    void settleLocked(Actions a) {
        sending.startSendsLocked(a);
        pumpLocked(a);
        if (closing && !disconnecting && ended == null && sending.idle() && outbox.isEmpty()) {
            disconnectLocked(a); // the sends already made are complete
        }
    }

    /** Hands control messages to the transport, in order, {@link #TRANSPORT_WINDOW} at most. */
    private void pumpLocked(Actions a) {
        while (!outbox.isEmpty() && handed < TRANSPORT_WINDOW && connection != null && !disconnecting) {
            Outbound o = outbox.peek();
            try {
                connection.send(o.message, o, sendCompletion);
            } catch (IllegalArgumentException e) {
                // Every control message fits MaxFragmentedSendSize by construction.
                LOG.log(System.Logger.Level.ERROR, this + ": control message refused", e);
                endLocked(new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "bulk session internal error: " + e), a);
                disconnectLocked(a);
                return;
            } catch (IllegalStateException e) {
                if (handed == 0) {
                    // Nothing of ours is in the transport's queue to make room: the queue is someone else's.
                    endLocked(new ConnectionLoss(TerminationReason.LOCAL_RESOURCES,
                            "the connection refuses control messages: " + e.getMessage()), a);
                    disconnectLocked(a);
                }
                return;
            }
            outbox.poll();
            handed++;
        }
    }

    /** The transport sent a control message. */
    private void sent(Outbound o) {
        Actions a = new Actions();
        synchronized (lock) {
            handed--;
            if (o.completes != null && ended == null) {
                sending.sentLocked(o.completes, a);
            }
            settleLocked(a);
        }
        a.run();
    }

    /** Reports the transport's completion of each control message. */
    private final class SendCompletion implements CompletionHandler<Void, Outbound> {
        @Override
        public void completed(Void result, Outbound o) {
            ENGINE_THREAD.set(Boolean.TRUE); // a success is only ever reported by an engine thread
            sent(o);
        }

        @Override
        public void failed(Throwable e, Outbound o) {
            // The transport fails a message only when the connection ends; onConnectionLost fails
            // what the session still holds (this may run inside connection.send, under the lock).
            LOG.log(System.Logger.Level.DEBUG, () -> Session.this + ": control message not sent: " + e);
        }
    }

    /** The peer broke the session protocol: end the connection with the reason. */
    private void violationLocked(String reason, Actions a) {
        ConnectionLoss loss = new ConnectionLoss(TerminationReason.LOCAL_CLOSE,
                "the peer broke the bulk session protocol: " + reason);
        LOG.log(System.Logger.Level.WARNING, () -> this + ": " + loss.detail());
        endLocked(loss, a);
        disconnectLocked(a);
    }

    private void disconnectLocked(Actions a) {
        if (!disconnecting && connection != null) {
            disconnecting = true;
            SmbDirectConnection c = connection;
            a.add(c::closeAsync);
        }
    }

    /**
     * The session ends: every send not complete fails with the reason, every registration is
     * released (after a connection loss the transport has already revoked them).
     */
    private void endLocked(ConnectionLoss loss, Actions a) {
        if (ended == null) {
            ended = loss;
        }
        ConnectionLostException failure = new ConnectionLostException(ended);
        sending.endLocked(failure, a);
        receiving.endLocked(a);
        outbox.clear();
        opened.completeExceptionally(failure);
    }

    // ================================================================ helpers

    /** Starts an RDMA operation and reports its outcome; an immediate refusal is an outcome too. */
    static void rdma(java.util.function.Supplier<CompletionStage<Void>> op,
            java.util.function.Consumer<Throwable> done) {
        CompletionStage<Void> f;
        try {
            f = op.get();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((v, e) -> done.accept(e));
    }

    /** Whether the current thread is one the transport runs callbacks on. */
    static boolean onEngineThread() {
        return ENGINE_THREAD.get() != null;
    }

    static void refuseOnEngineThread(String call) {
        if (onEngineThread()) {
            throw new IllegalStateException(call + " would block an SMB Direct engine thread (and could deadlock); "
                    + "use the asynchronous form from handlers and completion callbacks");
        }
    }

    static Throwable unwrap(Throwable e) {
        while (e instanceof CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    static <T> T await(CompletableFuture<T> f, Duration timeout, String what)
            throws SmbDirectException, InterruptedException {
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            Throwable c = unwrap(e.getCause());
            if (c instanceof SmbDirectException) {
                throw (SmbDirectException) c;
            }
            throw new SmbDirectException(what + " failed: " + c, c);
        } catch (TimeoutException e) {
            throw new SmbDirectException(what + " did not complete within " + timeout);
        }
    }

    @Override
    public String toString() {
        SmbDirectConnection c = connection;
        return "BulkSession[" + (c == null ? "connecting" : c.toString()) + "]";
    }
}
