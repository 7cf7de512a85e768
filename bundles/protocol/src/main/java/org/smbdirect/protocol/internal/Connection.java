package org.smbdirect.protocol.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * The engine of one SMB Direct connection: it holds the connection's {@link DataModel} (MS-SMBD
 * 3.1.1.1) and its endpoint, wires the rule classes together, and runs them one at a time.
 *
 * <p>What lives where: the life cycle in {@link ConnectionStateMachine}; connecting, arrival,
 * negotiation and its timer (3.1.4.1, 3.1.7.2, 3.1.5.2, 3.1.5.3, 3.1.5.6, 3.1.5.7, 3.1.6.1,
 * section 6) in {@link Establishment}; the completion queue and what each completion leads to
 * (3.1.5.5) in {@link Completions}; credits (3.1.5.9, 3.1.5.1) in {@link CreditLedger}; sending
 * (3.1.4.2, 3.1.5.1, 3.1.5.4) in {@link Sender}; receiving (3.1.5.8, reassembly) in {@link
 * Receiver}, {@link DataTransferChecks} and {@link Reassembly}; timers and keepalives (3.1.6) in
 * {@link KeepaliveTimers}; registrations (3.1.4.3, 3.1.4.4) in {@link Registrations}; RDMA Read and
 * Write (3.1.4.5, 3.1.4.6) in {@link RdmaOperations} over {@link LocalRegistrations}; the upper
 * layer's close in {@link GracefulClose}, its handle in {@link ConnectionHandle}. Here: creating
 * the connection, running its steps, and Connection Loss (3.1.7.1) with its one teardown order.
 * The parts call back through {@link Terminator}, {@link Establishment.Owner} and {@link
 * Completions.Owner}.
 *
 * <p>Threading: the connection is an {@link Actor}. Its rules run in {@link #process()}, on its
 * engine thread, one at a time; provider callbacks, timers and the upper layer's calls enqueue
 * work and signal it, so they never block and never run another connection's rules. One shortcut:
 * a send from an upper-layer thread runs the sending rules itself when the connection is idle
 * ({@link Actor#tryRunHere}), so that a message with credits to go is posted without waking the
 * engine thread. Completions, deliveries and every upper-layer callback stay on the engine thread,
 * unless the handler never blocks ({@link ConnectionHandler#nonBlocking()}): then the whole step runs
 * on the thread that took the completion notification, or on the sending thread when the
 * notification came during a post too long to wait for ({@link Actor#takesOverFromCaller}).
 */
final class Connection extends Actor
        implements ConnectionListener, Terminator, Establishment.Owner, Completions.Owner {
    private static final System.Logger LOG = ConnectionLog.LOG;
    private static final AtomicInteger IDS = new AtomicInteger();

    final int id = IDS.incrementAndGet();
    private final SmbDirectTransport transport;
    final RdmaProvider provider;
    private final ProviderCapabilities capabilities;
    private final boolean initiator;

    final ConnectionStateMachine lifecycle = new ConnectionStateMachine();
    final DataModel model = new DataModel();
    private final ConnectionCounters counters = new ConnectionCounters();
    final ConnectionHandle handle;
    final KeepaliveTimers timers;
    final Registrations registrations;
    private final LocalRegistrations locals;
    final RdmaOperations rdmaOperations;
    final Sender sender;
    final Receiver receiver;
    private final Establishment establishment;
    private final Completions completions;
    private final GracefulClose gracefulClose;

    // ---- the connection's thread
    /** Connection.Endpoint. */
    Endpoint endpoint;
    /** Whether the upper layer asked to close (a disconnect that follows is its close). */
    private boolean closeRequested;
    /** The thread that ran {@link #connectionLoss()}, for diagnosing internal errors. */
    private String closedBy;

    // ---- shared with other threads
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private volatile boolean cqNotified;
    /**
     * Whether the connection's steps run on the thread that takes its completion notifications
     * (its handler said it never blocks, {@link ConnectionHandler#nonBlocking()}), rather than on
     * its engine loop; cleared for good when a step held such a thread too long.
     */
    private volatile boolean inline;
    private volatile Runnable start;
    private final Runnable sendPath = this::sendPath;

    private Connection(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, boolean initiator, InetSocketAddress remote, ConnectionHandler handler) {
        super(loop);
        this.transport = transport;
        this.provider = provider;
        this.capabilities = provider.capabilities();
        this.initiator = initiator;
        Scheduler scheduler = transport.scheduler();
        this.handle = new ConnectionHandle(this, id, initiator, remote, config.keepaliveResponseTimeout(),
                lifecycle.endedFuture());
        this.timers = new KeepaliveTimers(scheduler, this::signal, model, config.keepaliveResponseTimeout());
        this.registrations = new Registrations(handle, lifecycle, capabilities.maxRegionSize());
        this.locals = new LocalRegistrations(config.rdmaRegistrationCacheBytes(), capabilities.maxRegionSize());
        this.rdmaOperations = new RdmaOperations(provider, lifecycle, locals, counters, this::postNowOrSignal);
        this.sender = new Sender(handle, model, lifecycle, counters, this, config.maxPendingSends(),
                capabilities.remoteInvalidate());
        this.receiver = new Receiver(handle, handle, model, lifecycle, counters, registrations, timers, scheduler,
                this::execute, this, config.strictReassembly(),
                () -> Receiver.receiveBufferShare(config.receiveBufferBudget(), transport.connectionCount()));
        this.establishment = new Establishment(this, provider, config, initiator, model, lifecycle, counters, handle,
                timers, registrations, sender, receiver, rdmaOperations);
        this.completions = new Completions(this, model, lifecycle, counters, timers, sender, receiver,
                rdmaOperations, establishment);
        this.gracefulClose = new GracefulClose(lifecycle, sender, rdmaOperations, timers, this::execute, this);
        receiver.handler(handler);
        inline = handler != null && handler.nonBlocking();
    }

    // ================================================================ creation

    /**
     * MS-SMBD 3.1.4.1 Connecting to the Peer: creates the Connection; {@link #start} begins.
     *
     * @param local the provider's address to connect from, {@code null} for one of the peer's family
     */
    static Connection connect(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, InetSocketAddress remote, InetAddress local, ConnectionHandler handler) {
        Connection c = new Connection(transport, provider, config, loop, true, remote, handler);
        c.start = () -> c.establishment.connectingToThePeer(remote, local);
        return c;
    }

    /** MS-SMBD 3.1.7.2 Connection Arrival: creates the Connection for a peer's request; {@link #start} begins. */
    static Connection arrive(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, ConnectionRequest request, AcceptHandler acceptHandler) {
        Connection c = new Connection(transport, provider, config, loop, false, request.remoteAddress(), null);
        c.start = () -> c.establishment.connectionArrival(request, acceptHandler);
        return c;
    }

    /**
     * Starts the connection's processing. The transport calls this only after it holds the
     * connection, so that an early end always finds it there to remove.
     */
    void start() {
        Runnable s = start;
        start = null;
        execute(s);
    }

    /** Completes with the upper layer's handle once established, or fails with the loss. */
    CompletableFuture<org.smbdirect.transport.SmbDirectConnection> connectFuture() {
        return lifecycle.establishedFuture();
    }

    /** Completes when the connection has ended and released its endpoint and completion queue. */
    CompletableFuture<Void> ended() {
        return lifecycle.endedFuture();
    }

    /** Runs a task on the connection's thread. Any thread. */
    void execute(Runnable task) {
        tasks.add(task);
        signal();
    }

    /**
     * Runs a function on the connection's state on its thread, for tests and tools.
     *
     * @param query reads the state
     * @param <T> the result type
     * @return its result
     */
    <T> CompletableFuture<T> inspect(Function<Connection, T> query) {
        CompletableFuture<T> f = new CompletableFuture<>();
        execute(() -> {
            try {
                f.complete(query.apply(this));
            } catch (RuntimeException e) {
                f.completeExceptionally(e);
            }
        });
        return f;
    }

    // ================================================================ what the parts ask of it

    /**
     * The completion queue. Its notifications run the connection's step; on the thread that takes
     * them when the handler never blocks.
     */
    @Override
    public CompletionQueue createCompletionQueue(int depth) throws RdmaException {
        return completions.create(provider, depth, q -> {
            cqNotified = true;
            // Completions are processed on the thread that polls them when the handler never
            // blocks: no hand-over to the engine loop, no wake-up.
            if (!inline || !runInline()) {
                signal();
            }
        });
    }

    @Override
    public void pollOnLoop() {
        cqNotified = true;
        signal();
    }

    @Override
    public void endpointCreated(Endpoint ep) {
        endpoint = ep;
    }

    @Override
    public void handler(ConnectionHandler h) {
        receiver.handler(h);
        inline = h.nonBlocking();
    }

    @Override
    public void connectionEstablished() {
        transport.connectionEstablished(this);
    }

    // ================================================================ provider callbacks (any thread)

    @Override
    public void onEstablished(Endpoint ep) {
        execute(establishment::rdmaEstablished);
    }

    @Override
    public void onDisconnected(Endpoint ep) {
        execute(() -> rdmaConnectionEnded(TerminationReason.PEER_DISCONNECTED, "RDMA connection disconnected"));
    }

    @Override
    public void onError(Endpoint ep, RdmaStatus status, String reason) {
        execute(() -> {
            boolean connecting = lifecycle.state() == ConnectionStateMachine.State.CONNECTING && initiator;
            rdmaConnectionEnded(connecting ? TerminationReason.CONNECT_FAILED : TerminationReason.TRANSPORT_ERROR,
                    status + ": " + (connecting && ep.remoteAddress() != null ? ConnectRefusal.explain(status, reason,
                            capabilities.transportType(), ep.remoteAddress().getPort()) : reason));
        });
    }

    /** The provider ended the RDMA connection (MS-SMBD 3.1.7.1). */
    private void rdmaConnectionEnded(TerminationReason reason, String detail) {
        if (lifecycle.isClosed()) {
            return;
        }
        if (closeRequested && reason == TerminationReason.PEER_DISCONNECTED) {
            reason = TerminationReason.LOCAL_CLOSE;
        }
        lifecycle.latch(reason, detail);
        if (lifecycle.carriesMessages()) {
            // The messages the peer sent before the end are already received, in the completion
            // queue: they reach the upper layer before the loss does (a peer's last message before
            // its disconnect is not dropped). Nothing is posted meanwhile, and failed or flushed
            // work does not stop the hand-over: the connection is gone either way.
            lifecycle.rdmaEnded();
            completions.poll();
        }
        connectionLoss();
    }

    // ================================================================ the actor

    @Override
    protected void process() {
        Runnable t;
        while ((t = tasks.poll()) != null) {
            try {
                t.run();
            } catch (RuntimeException e) {
                internalError("task", e);
            }
        }
        if (lifecycle.isClosed()) {
            return;
        }
        if (cqNotified) {
            cqNotified = false;
            completions.poll();
            if (!lifecycle.isClosed()) {
                completions.arm();
            }
        }
        if (timers.negotiationTimerExpired()) {
            establishment.negotiationTimerExpired();
        }
        if (lifecycle.carriesMessages()) {
            ConnectionLoss idle = timers.idleTimerFired();
            if (idle != null) {
                terminate(idle.reason(), idle.detail());
            }
        }
        sendPath();
    }

    /**
     * The sending rules: what the upper layer queued, 3.1.5.1, RDMA work, and a graceful close once
     * everything went. On the connection's thread, or on an upper-layer thread that found the
     * connection idle.
     */
    private void sendPath() {
        if (!lifecycle.maySend()) {
            return;
        }
        try {
            sender.drainInbox();
            sender.sendUpperLayerMessages(endpoint, receiver, timers);
            RdmaException refused = lifecycle.maySend() ? rdmaOperations.pump(endpoint) : null;
            if (refused != null) {
                postFailed("RDMA work request failed", refused);
            }
            if (closeRequested && lifecycle.maySend()) {
                gracefulClose.check();
            }
        } catch (RuntimeException e) {
            // Never into the engine loop or the caller: end this connection with a readable reason.
            internalError("sending", e);
        }
    }

    // ================================================================ ending: 3.1.7.1

    /**
     * Ends the connection: the receiver "MUST terminate the connection" of 3.1.5.6 - 3.1.5.8 and the
     * timers of 3.1.6. The RDMA connection is disconnected; the provider's terminal event then
     * completes {@link #connectionLoss()}. The first reason latched is the one reported.
     */
    @Override
    public void terminate(TerminationReason reason, String detail) {
        if (lifecycle.isEnding()) {
            return;
        }
        ConnectionLoss l = lifecycle.latch(reason, detail);
        LOG.log(ConnectionStateMachine.isFailure(l.reason()) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                () -> handle + " terminating: " + l.message());
        lifecycle.moveTo(ConnectionStateMachine.State.TERMINATING);
        timers.cancelProtocolTimers();
        if (endpoint == null || endpoint.state() == EndpointState.IDLE
                || endpoint.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            // Nothing to wait for; on the connection's own thread (a terminate may run on a caller's).
            execute(this::connectionLoss);
            return;
        }
        endpoint.disconnect();
        timers.awaitTerminalEvent(() -> execute(this::connectionLoss));
    }

    /**
     * A post was refused. When the endpoint has disconnected underneath (the provider's event is
     * on its way), this is the RDMA connection's end, not a transport error: the messages already
     * received are handed over and the loss is the one the event reports (3.1.7.1), as when the
     * event comes first. Otherwise the provider failed (3.1.4.2).
     */
    @Override
    public void postFailed(String what, RdmaException e) {
        if (endpoint.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            // Nothing more is posted; the rest of this batch is delivered, and the provider's
            // terminal event, on its way, latches why the connection ended (a reset is not a
            // disconnect) and hands over what was received before it.
            lifecycle.rdmaEnded();
            return;
        }
        terminate(TerminationReason.TRANSPORT_ERROR, what + ": " + e.getMessage());
    }

    /**
     * A step of this connection held a thread outside the engine's loops too long: its handler,
     * which said it never blocks, did. From now on the connection's steps run on its engine loop,
     * where a waiting step moves the loop's other connections to another thread.
     */
    @Override
    void heldInline(Thread thread, long heldNanos) {
        if (inline) {
            inline = false;
            LOG.log(System.Logger.Level.WARNING, () -> handle + ": a step of this connection has held thread "
                    + thread.getName() + " for " + heldNanos / 1_000_000 + " ms, though its handler "
                    + receiver.handler() + " says it never blocks (ConnectionHandler.nonBlocking()); its "
                    + "messages and completions now go through the engine's threads");
        }
    }

    /** Whether the connection's steps run where its completions are taken. */
    @Override
    public boolean staysInline() {
        return inline;
    }

    /**
     * Whether a sending thread does the step that completions notified during its post need, when
     * the completion thread gave up waiting for it (on Soft-RoCE the kernel completes a send inside
     * the post's system call, which outlasts that wait): with a handler that never blocks, where the
     * completion thread would have done it, and without waking the engine thread.
     */
    @Override
    boolean takesOverFromCaller() {
        return inline;
    }

    /** A bug of ours: logged, counted, and the connection ends rather than the thread. */
    @Override
    public void internalError(String where, RuntimeException e) {
        transport.internalError();
        LOG.log(System.Logger.Level.ERROR, handle + ": internal error in " + where + " (" + lifecycle + ", role "
                + model.role + ", endpoint " + (endpoint == null ? null : endpoint.state()) + ", closed by " + closedBy
                + ", on " + Thread.currentThread().getName() + ")", e);
        terminate(TerminationReason.LOCAL_RESOURCES, "internal error: " + e);
    }

    /**
     * The provider carrying this connection is going away (its service is being unregistered,
     * before it closes): whatever ends the connection from now on is reported as {@link
     * TerminationReason#PROVIDER_STOPPED}. Any thread; the caller then terminates it.
     *
     * @param detail which provider
     */
    void providerStopping(String detail) {
        lifecycle.providerStopping(detail);
    }

    /**
     * MS-SMBD 3.1.7.1 Connection Loss: the upper layer is notified, then the endpoint and the
     * Connection are terminated. The one teardown order:
     * <ol>
     * <li>CLOSED, every timer stopped, the loss latched (the first reason stands);</li>
     * <li>every message and RDMA operation not complete fails with the loss;</li>
     * <li>registrations are gone, so that none is left when the upper layer hears of the loss;</li>
     * <li>a connect still waiting fails; the transport forgets the connection;</li>
     * <li>the upper layer is told, once;</li>
     * <li>the endpoint and the completion queue are closed (the provider releases every region);</li>
     * <li>buffers are dropped and the upper layer's handle lets go of the engine;</li>
     * <li>those waiting for the end are woken.</li>
     * </ol>
     */
    private void connectionLoss() {
        if (!lifecycle.moveTo(ConnectionStateMachine.State.CLOSED)) {
            return;
        }
        closedBy = Thread.currentThread().getName();
        boolean wasEstablished = handle.parameters() != null;
        timers.cancelAll();
        ConnectionLoss why = lifecycle.latch(TerminationReason.PEER_DISCONNECTED, "RDMA connection ended");
        ConnectionLostException failure = new ConnectionLostException(why);

        sender.failAll(failure);
        rdmaOperations.failAll(failure);

        registrations.dropAll();
        locals.dropAll();

        lifecycle.failEstablishment(failure);
        transport.connectionEnded(this, why, wasEstablished);

        ConnectionHandler h = receiver.handler();
        if (h != null && establishment.delivered()) {
            try {
                h.onConnectionLost(handle, why);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, handle + ": connection-loss handler failed", e);
            }
        }

        if (endpoint != null) {
            endpoint.close();
        }
        completions.close();

        ConnectionStatistics last = statistics();
        receiver.release();
        model.reassembly.clear();
        establishment.release();
        completions.release();
        handle.ended(why, last);

        lifecycle.ended();
    }

    // ================================================================ the upper layer's calls (any thread)

    /**
     * MS-SMBD 3.1.4.2: queues a message; when the connection is idle, the calling thread runs the
     * sending rules itself, so that a message with credits to go is posted at once. A message
     * queued behind messages that wait for a credit or a send buffer is left to the completion
     * that brings one: running the rules for it would only find the wait again.
     */
    void send(ByteBuffer message, ByteBuffer[] parts, boolean hasToken, int token, CompletableFuture<Void> future,
            CompletionHandler<Void, Object> h, Object attachment, int maxFragmentedSendSize) {
        if (sender.enqueue(message, parts, hasToken, token, future, h, attachment, maxFragmentedSendSize)
                == Sender.QUEUED) {
            postNowOrSignal();
        }
    }

    /**
     * New work for the sending rules: run them on the calling thread when the connection is idle,
     * else leave them to the connection's thread.
     */
    private void postNowOrSignal() {
        if (!tryRunHere(sendPath)) {
            signal();
        }
    }

    /** MS-SMBD 3.1.4.5 and 3.1.4.6: an RDMA operation, posted from the calling thread like a send. */
    CompletionStage<Void> rdma(boolean read, ByteBuffer local, List<BufferDescriptorV1> remoteBuffer, long offset,
            int maxReadWriteSize) {
        Endpoint ep = handle.parameters() == null ? null : endpoint;
        return rdmaOperations.start(read, local, remoteBuffer, offset, maxReadWriteSize, ep);
    }

    /**
     * Closes gracefully: what the upper layer queued is sent first (within the keepalive response
     * timeout), then the RDMA connection is disconnected; before establishment, at once.
     */
    @Override
    public void closeAsync() {
        execute(() -> {
            if (gracefulClose.begin()) {
                closeRequested = true;
            }
        });
    }

    /**
     * Ends the connection at once with the given reason (transport shutdown).
     *
     * @return completes when it has ended
     */
    CompletableFuture<Void> closeAsyncNow(TerminationReason reason, String detail) {
        execute(() -> terminate(reason, detail));
        return lifecycle.endedFuture();
    }

    ConnectionCounters.Snapshot statistics() {
        return counters.snapshot(registrations.live(), model.credits.sendCredits, model.credits.receiveCredits);
    }

    ConnectionCounters.Snapshot finalCounters() {
        return counters.snapshot(0, 0, 0);
    }

    InetSocketAddress localAddress() {
        Endpoint ep = endpoint;
        return ep == null ? null : ep.localAddress();
    }

    /** Package-private for tests: the receive buffers there are now; on the connection's thread. */
    int receiveBufferCapacity() {
        return receiver.capacity();
    }

    /** Package-private for tests: the local registrations the provider was asked for. */
    long localRegistrationsMade() {
        return locals.registrationsMade();
    }

    /** Package-private for tests: whether events wait for the connection's thread. */
    boolean hasPendingTasks() {
        return !tasks.isEmpty();
    }

    /** Package-private for tests: RDMA Reads this side may have outstanding. */
    int ordLimit() {
        return rdmaOperations.ordLimit();
    }

    @Override
    public String toString() {
        return handle.toString();
    }
}
