package org.smbdirect.protocol.internal;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.CompletionHandler;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * The engine of one SMB Direct connection: it holds the connection's {@link DataModel} (MS-SMBD
 * 3.1.1.1) and its endpoint, wires the rule classes together, and runs them one at a time.
 *
 * <p>What lives where: the life cycle in {@link ConnectionStateMachine}; negotiation (3.1.5.2,
 * 3.1.5.3, 3.1.5.6, 3.1.5.7, section 6) in {@link Negotiator}; credits (3.1.5.9, 3.1.5.1) in
 * {@link CreditLedger}; sending (3.1.4.2, 3.1.5.1, 3.1.5.4) in {@link Sender}; receiving
 * (3.1.5.8, reassembly) in {@link Receiver}, {@link DataTransferChecks} and {@link Reassembly};
 * timers and keepalives (3.1.6) in {@link KeepaliveTimers}; registrations (3.1.4.3, 3.1.4.4) in
 * {@link Registrations}; RDMA Read and Write (3.1.4.5, 3.1.4.6) in {@link RdmaOperations} over
 * {@link LocalRegistrations}; the upper layer's handle in {@link ConnectionHandle}. Here: creating
 * the connection (3.1.4.1, 3.1.7.2), dispatching what arrives (3.1.5.5), and Connection Loss
 * (3.1.7.1) with its one teardown order.
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
final class Connection extends Actor implements ConnectionListener, Terminator {
    private static final System.Logger LOG = System.getLogger(Connection.class.getName());
    /**
     * Every SMB Direct message sent or received is logged at this level, as {@code "<connection>
     * sent|received <message with its fields>"} (a capture can be checked against it); callers
     * test {@code LOG.isLoggable(TRACE)} first, so nothing is built while it is off.
     */
    private static final System.Logger.Level TRACE = System.Logger.Level.TRACE;
    private static final int RESULT_BATCH = 32;
    private static final AtomicInteger IDS = new AtomicInteger();

    final int id = IDS.incrementAndGet();
    private final SmbDirectTransport transport;
    final RdmaProvider provider;
    private final ProviderCapabilities capabilities;
    private final SmbDirectConfig config;
    private final boolean initiator;
    private final InetSocketAddress remote;
    private final AcceptHandler acceptHandler;

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

    // ---- the connection's thread
    /** Connection.Endpoint. */
    Endpoint endpoint;
    private CompletionQueue cq;
    private CompletionResult[] results;
    private int receiveDepth;
    private int inlineThreshold;
    private ByteBuffer negotiationBuffer;
    private MemoryRegion negotiationRegion;
    private final Sge[] negotiationSgl = {new Sge()};
    private final Object negotiationContext = new Object();
    /** Whether the upper layer asked to close (a disconnect that follows is its close). */
    private boolean closeRequested;
    /** Whether the upper layer was given the connection (and so is told of its end). */
    private boolean delivered;
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
            EventLoopGroup.Loop loop, boolean initiator, InetSocketAddress remote, ConnectionHandler handler,
            AcceptHandler acceptHandler) {
        super(loop);
        this.transport = transport;
        this.provider = provider;
        this.capabilities = provider.capabilities();
        this.config = config;
        this.initiator = initiator;
        this.remote = remote;
        this.acceptHandler = acceptHandler;
        Scheduler scheduler = transport.scheduler();
        this.handle = new ConnectionHandle(this, id, initiator, remote, config.keepaliveResponseTimeout(),
                lifecycle.endedFuture());
        this.timers = new KeepaliveTimers(scheduler, this::signal, model, config.keepaliveResponseTimeout());
        this.registrations = new Registrations(handle, lifecycle, capabilities.maxRegionSize());
        this.locals = new LocalRegistrations(config.rdmaRegistrationCacheBytes(), capabilities.maxRegionSize());
        this.rdmaOperations = new RdmaOperations(lifecycle, locals, counters, this::postNowOrSignal);
        this.sender = new Sender(handle, model, lifecycle, counters, this, config.maxPendingSends(),
                capabilities.remoteInvalidate());
        this.receiver = new Receiver(handle, handle, model, lifecycle, counters, registrations, timers, scheduler,
                this::execute, this, config.strictReassembly(),
                () -> Receiver.receiveBufferShare(config.receiveBufferBudget(), transport.connectionCount()));
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
        Connection c = new Connection(transport, provider, config, loop, true, remote, handler, null);
        c.start = () -> c.connectingToThePeer(local);
        return c;
    }

    /** MS-SMBD 3.1.7.2 Connection Arrival: creates the Connection for a peer's request; {@link #start} begins. */
    static Connection arrive(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, ConnectionRequest request, AcceptHandler acceptHandler) {
        Connection c = new Connection(transport, provider, config, loop, false, request.remoteAddress(), null,
                acceptHandler);
        c.start = () -> c.connectionArrival(request);
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

    /**
     * Creates the completion queue and the endpoint options for this connection.
     *
     * @param local the local address to connect from, {@code null} for the provider's first
     */
    private EndpointOptions createQueues(InetAddress local) throws RdmaException {
        int maxDepth = capabilities.maxQueueDepth();
        int sendDepth = Math.min(config.sendBuffers() + RdmaOperations.DEPTH, maxDepth);
        receiveDepth = Math.min(Math.max(config.receiveCreditMax(), 1), maxDepth);
        int cqDepth = Math.min(sendDepth + receiveDepth, capabilities.maxCompletionQueueDepth());
        cq = provider.createCompletionQueue(cqDepth, q -> {
            cqNotified = true;
            // Completions are processed on the thread that polls them when the handler never
            // blocks: no hand-over to the engine loop, no wake-up.
            if (!inline || !runInline()) {
                signal();
            }
        });
        results = new CompletionResult[RESULT_BATCH];
        for (int i = 0; i < results.length; i++) {
            results[i] = new CompletionResult();
        }
        inlineThreshold = Math.min(capabilities.inlineLimit(), config.maxSendSize());
        return EndpointOptions.builder(cq, cq).sendQueueDepth(sendDepth).receiveQueueDepth(receiveDepth)
                .inlineThreshold(inlineThreshold).rnrRetryCount(config.rnrRetryCount()).localAddress(local).build();
    }

    /**
     * The provider's address to reach a peer from: the first of the peer's family (an IPv6 peer
     * needs an IPv6 local address), on the peer's link for a link-local peer; {@code null} when
     * the provider has none of that family (it then says so when connecting).
     */
    static InetAddress localAddressFor(InetAddress peer, List<InetAddress> own) {
        InetAddress first = null;
        for (InetAddress a : own) {
            if ((a instanceof Inet6Address) != (peer instanceof Inet6Address)) {
                continue;
            }
            if (peer.isLinkLocalAddress() && a.isLinkLocalAddress() && ((Inet6Address) peer).getScopeId() != 0
                    && ((Inet6Address) peer).getScopeId() == ((Inet6Address) a).getScopeId()) {
                return a;
            }
            if (first == null) {
                first = a;
            }
        }
        return first;
    }

    /** The endpoint exists: its send buffers, the CQ armed, the receive for the first message posted. */
    private void endpointCreated(Endpoint ep) throws RdmaException {
        endpoint = ep;
        ep.attach(this);
        registrations.attach(ep);
        sender.attach(new SendBuffers(ep, config.maxSendSize(), config.sendBuffers(), capabilities.maxRegionSize()),
                inlineThreshold);
        cq.arm(ArmType.ANY);
        // 3.1.4.1 and 3.1.7.2: at least 512 bytes, posted before the peer can send.
        negotiationBuffer = ByteBuffer.allocateDirect(Wire.NEGOTIATION_RECEIVE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        negotiationRegion = ep.register(negotiationBuffer, Access.LOCAL_WRITE);
        negotiationSgl[0].set(negotiationRegion, 0, Wire.NEGOTIATION_RECEIVE_SIZE);
        ep.postReceive(negotiationContext, negotiationSgl, 1);
    }

    /**
     * Whether the connection ended, or its provider is being removed, before its first step ran:
     * then the step must not touch the provider (its removal may have returned already); the
     * termination queued by the removal ends the connection.
     */
    private boolean endedBeforeStart() {
        return lifecycle.isEnding() || lifecycle.isProviderStopping();
    }

    /** MS-SMBD 3.1.4.1 Connecting to the Peer (on the connection's thread). */
    private void connectingToThePeer(InetAddress local) {
        if (endedBeforeStart()) {
            return;
        }
        model.initialValues(DataModel.Role.ACTIVE, config);
        timers.startNegotiationTimer(config.activeNegotiationTimeout());
        try {
            endpointCreated(provider.createEndpoint(createQueues(local != null ? local
                    : localAddressFor(remote.getAddress(), provider.addresses())), this));
            model.ird = Math.min(config.ird(), capabilities.maxIrd());
            model.ord = Math.min(config.ord(), capabilities.maxOrd());
            // MS-SMBD 6.1: the IRD/ORD Negotiate Header leads the request's private data where the
            // transport carries it (iWARP, or as configured).
            byte[] privateData = Negotiator.requestPrivateData(config, capabilities.transportType(), model.ird,
                    model.ord);
            endpoint.connect(remote, privateData, model.ird, model.ord);
        } catch (RdmaException e) {
            terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, e.getMessage());
        }
    }

    /** MS-SMBD 3.1.7.2 Connection Arrival (on the connection's thread). */
    private void connectionArrival(ConnectionRequest request) {
        if (endedBeforeStart()) {
            return; // the provider's closing answers the request
        }
        model.initialValues(DataModel.Role.PASSIVE, config);
        timers.startNegotiationTimer(config.passiveNegotiationTimeout());
        try {
            // The receive for the Negotiate Request is posted before accepting, so it always finds one.
            endpointCreated(request.createEndpoint(createQueues(null), this));
        } catch (RdmaException e) {
            rejectQuietly(request);
            terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, "cannot prepare the connection: " + e.getMessage());
            return;
        }
        // MS-SMBD 6.2: connection-manager padding (InfiniBand, RoCE) is no header; only the
        // transport the policy names carries one.
        Negotiator.Acceptance a = Negotiator.accept(config, capabilities.transportType(), request.peerPrivateData(),
                request.peerIrd(), request.peerOrd(), Math.min(config.ird(), capabilities.maxIrd()),
                Math.min(config.ord(), capabilities.maxOrd()));
        if (a.refusal != null) {
            rejectQuietly(request);
            terminate(a.refusal.reason(), a.refusal.detail());
            return;
        }
        model.ird = a.depths.ird;
        model.ord = a.depths.ord;
        try {
            request.accept(endpoint, a.replyPrivateData, Math.min(model.ird, capabilities.maxIrd()),
                    Math.min(model.ord, capabilities.maxOrd()));
            lifecycle.moveTo(ConnectionStateMachine.State.NEGOTIATING);
        } catch (RdmaException e) {
            terminate(TerminationReason.CONNECT_FAILED, "accept failed: " + e.getMessage());
        }
    }

    private static void rejectQuietly(ConnectionRequest request) {
        try {
            request.reject(null);
        } catch (RdmaException e) {
            // already answered or timed out
        }
    }

    // ================================================================ provider callbacks (any thread)

    @Override
    public void onEstablished(Endpoint ep) {
        execute(this::rdmaEstablished);
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

    /** The RDMA connection is up: the initiator starts negotiating (3.1.4.1, 3.1.5.2). */
    private void rdmaEstablished() {
        if (lifecycle.isEnding()) {
            return;
        }
        if (!initiator) {
            sender.establishedEventArrived();
            return;
        }
        // MS-SMBD 6.2: the connecting peer uses the values the accepting peer transmitted.
        Negotiator.Acceptance a = Negotiator.established(config, capabilities.transportType(),
                endpoint.peerPrivateData(), model.ird, model.ord, endpoint.ird(), endpoint.ord());
        if (a.refusal != null) {
            terminate(a.refusal.reason(), a.refusal.detail());
            return;
        }
        model.ird = a.depths.ird;
        model.ord = a.depths.ord;
        lifecycle.moveTo(ConnectionStateMachine.State.NEGOTIATING);
        // MS-SMBD 3.1.5.2 Sending a Negotiate Request.
        NegotiateRequest req = Negotiator.negotiateRequest(model);
        if (sender.postNegotiationMessage(endpoint, req::encode, NegotiateRequest.SIZE, null)
                && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " sent " + req);
        }
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
            pollCompletions();
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
            pollCompletions();
            if (!lifecycle.isClosed()) {
                cq.arm(ArmType.ANY);
            }
        }
        if (timers.negotiationTimerExpired()) {
            negotiationTimerExpired();
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
                checkGracefulClose();
            }
        } catch (RuntimeException e) {
            // Never into the engine loop or the caller: end this connection with a readable reason.
            internalError("sending", e);
        }
    }

    /** Processes every completion in the queue while the connection has not closed. */
    private void pollCompletions() {
        for (;;) {
            if (!staysInline() && !EventLoopGroup.inEngineStep()) {
                // moved to the engine's threads while this step held a provider's thread: the
                // rest of the completions are the loop's
                cqNotified = true;
                signal();
                return;
            }
            int n = cq.getResultsEx(results);
            if (n == 0) {
                return;
            }
            for (int i = 0; i < n; i++) {
                CompletionResult r = results[i];
                // Once closed the buffers are released: the rest of the batch (flushed work) has
                // nothing left to do.
                if (!lifecycle.isClosed()) {
                    try {
                        onCompletion(r);
                    } catch (RuntimeException e) {
                        internalError("completion " + r, e);
                    }
                }
                r.set(null, null, null, RdmaStatus.SUCCESS, 0, false, false, 0);
            }
            if (lifecycle.isClosed()) {
                return;
            }
            timers.batchEnded(); // 3.1.5.5: the batch's messages retriggered the idle timer once
        }
    }

    private void onCompletion(CompletionResult r) {
        Object ctx = r.requestContext();
        RdmaStatus status = r.status();
        if (lifecycle.isRdmaEnded() && status != RdmaStatus.SUCCESS) {
            if (ctx instanceof ReceiveBuffers.Slot) {
                receiver.discard((ReceiveBuffers.Slot) ctx);
            }
            return; // what completed still counts; what failed is part of the loss
        }
        if (ctx instanceof SendBuffers.Slot) {
            sender.sendCompleted((SendBuffers.Slot) ctx, status);
        } else if (ctx instanceof ReceiveBuffers.Slot) {
            ReceiveBuffers.Slot slot = (ReceiveBuffers.Slot) ctx;
            model.credits.receiveCompleted();
            if (lifecycle.isEnding()) {
                receiver.discard(slot); // the connection ceased processing
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(slot.buffer, slot.base, r.bytesTransferred(), slot, r.tokenInvalidated(),
                        r.invalidatedToken());
            } else {
                receiver.discard(slot);
                failed(r);
            }
        } else if (ctx == negotiationContext) {
            if (lifecycle.isEnding()) {
                return;
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(negotiationBuffer, 0, r.bytesTransferred(), null, r.tokenInvalidated(),
                        r.invalidatedToken());
            } else {
                failed(r);
            }
        } else if (ctx instanceof RdmaTransfer.Segment) {
            if (!rdmaOperations.completed((RdmaTransfer.Segment) ctx, r)) {
                failed(r);
            }
        }
    }

    /** A work request failed: the RDMA layer has ended the connection (3.1.4.2). */
    private void failed(CompletionResult r) {
        if (r.status() != RdmaStatus.FLUSHED) {
            terminate(TerminationReason.TRANSPORT_ERROR, r.type() + " completed with " + r.status() + " ("
                    + r.status().description() + ")");
        }
    }

    // ================================================================ 3.1.5.5 - 3.1.5.7 receiving

    /** MS-SMBD 3.1.5.5 Receiving Any Message: by Connection.Role. */
    private void receiveAnyMessage(ByteBuffer b, int base, int length, ReceiveBuffers.Slot slot,
            boolean tokenInvalidated, int token) {
        switch (model.role) {
            case PASSIVE:
                receiveNegotiateRequest(b, base, length);
                break;
            case ACTIVE:
                receiveNegotiateResponse(b, base, length);
                break;
            default:
                if (slot == null) {
                    return;
                }
                if (timers.messageReceived()) {
                    counters.keepalivesAnswered++;
                }
                receiver.receiveDataTransferMessage(slot, length, tokenInvalidated, token);
        }
    }

    /** MS-SMBD 3.1.5.6 Receiving a Negotiate Request, then 3.1.5.9 and 3.1.5.3. */
    private void receiveNegotiateRequest(ByteBuffer b, int base, int length) {
        Negotiator.Outcome o = Negotiator.receiveNegotiateRequest(model, config, b, base, length);
        traceReceived(o.message);
        if (!o.isAccepted()) {
            refuseOrTerminate(o);
            return;
        }
        initializeReceiveCredits();
        if (lifecycle.isEnding()) {
            return; // posting failed because the connection is already gone: nothing to answer
        }
        if (model.credits.receiveCredits == 0) {
            refuseOrTerminate(Negotiator.Outcome.refuse(Wire.STATUS_INSUFFICIENT_RESOURCES,
                    TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted", null));
            return;
        }
        // MS-SMBD 3.1.5.3 Sending a Negotiate Response: every receive posted is granted.
        int granted = Math.min(model.credits.receiveCredits, CreditLedger.MAX_CREDITS);
        NegotiateResponse rsp = Negotiator.negotiateResponse(model, granted);
        model.credits.granted(granted);
        counters.creditsGranted += granted;
        if (!sender.postNegotiationMessage(endpoint, rsp::encode, NegotiateResponse.SIZE, null)) {
            return;
        }
        traceSent(rsp);
        established();
        // 3.1.7.2 / 3.1.5.6: the new Connection is indicated to the upper layer.
        ConnectionHandler h = null;
        try {
            h = acceptHandler.onConnection(handle);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, handle + ": accept handler failed", e);
        }
        if (h == null) {
            closeAsync();
        } else {
            receiver.handler(h);
            inline = h.nonBlocking();
            delivered = true;
        }
    }

    /** MS-SMBD 3.1.5.7 Receiving a Negotiate Response, then 3.1.5.9. */
    private void receiveNegotiateResponse(ByteBuffer b, int base, int length) {
        Negotiator.Outcome o = Negotiator.receiveNegotiateResponse(model, config, b, base, length);
        traceReceived(o.message);
        if (!o.isAccepted()) {
            refuseOrTerminate(o);
            return;
        }
        counters.creditsReceived += model.credits.sendCredits;
        initializeReceiveCredits();
        if (lifecycle.isEnding()) {
            return;
        }
        if (model.credits.receiveCredits == 0) {
            terminate(TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted");
            return;
        }
        established();
        delivered = true;
        // The peer holds no send credit until our first message grants the receives just posted;
        // send that message at once unless the upper layer queues one first (3.1.5.1).
        model.sendImmediate = true;
        lifecycle.established(handle);
    }

    /**
     * A negotiation that fails: with a failure Negotiate Response first (3.1.5.3, then a graceful
     * termination once it is sent) where 3.1.5.6 says so, else at once.
     */
    private void refuseOrTerminate(Negotiator.Outcome o) {
        if (o.failureStatus == 0) {
            terminate(o.loss.reason(), o.loss.detail());
            return;
        }
        LOG.log(System.Logger.Level.DEBUG, () -> handle + " refusing the negotiation: " + o.loss.message());
        NegotiateResponse rsp = Negotiator.negotiateResponseFailure(o.failureStatus);
        if (sender.postNegotiationMessage(endpoint, rsp::encode, NegotiateResponse.SIZE, o.loss)) {
            traceSent(rsp);
        }
    }

    /** The receive buffers of 3.1.5.9's initialisation: the first slab, then the first posts. */
    private void initializeReceiveCredits() {
        releaseNegotiationBuffer();
        try {
            receiver.createBuffers(endpoint, receiveDepth, capabilities.maxRegionSize());
        } catch (RdmaException e) {
            LOG.log(System.Logger.Level.WARNING, handle + ": cannot register receive buffers: " + e.getMessage());
            return;
        }
        receiver.manageCreditsPriorToSending(true, false);
    }

    /** Negotiation succeeded: Connection.Role ESTABLISHED, the idle timer runs, 3.1.4.7's parameters fixed. */
    private void established() {
        timers.cancelNegotiationTimer();
        timers.established();
        model.role = DataModel.Role.ESTABLISHED;
        lifecycle.moveTo(ConnectionStateMachine.State.ESTABLISHED);
        rdmaOperations.establish(model.ord);
        Parameters p = new Parameters(model, initiator, capabilities, provider);
        handle.established(p, endpoint.localAddress());
        transport.connectionEstablished(this);
        LOG.log(System.Logger.Level.DEBUG, () -> handle + " established: " + p);
    }

    private void releaseNegotiationBuffer() {
        if (negotiationRegion != null) {
            try {
                endpoint.deregister(negotiationRegion);
            } catch (RdmaException e) {
                // gone with the endpoint
            }
            negotiationRegion = null;
            negotiationBuffer = null;
        }
    }

    private void traceReceived(Object message) {
        if (message != null && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " received " + message);
        }
    }

    private void traceSent(Object message) {
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " sent " + message);
        }
    }

    // ================================================================ 3.1.6.1

    /** MS-SMBD 3.1.6.1 Negotiation Timer: the connection terminates unless negotiated meanwhile. */
    private void negotiationTimerExpired() {
        if (model.role != DataModel.Role.ESTABLISHED && !lifecycle.isEnding()) {
            terminate(TerminationReason.NEGOTIATION_TIMEOUT, "no negotiation within "
                    + (initiator ? config.activeNegotiationTimeout() : config.passiveNegotiationTimeout()).toSeconds()
                    + " s (" + model.role + ")");
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
        LOG.log(isFailure(l.reason()) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
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
    boolean staysInline() {
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
    private void internalError(String where, RuntimeException e) {
        transport.internalError();
        LOG.log(System.Logger.Level.ERROR, handle + ": internal error in " + where + " (" + lifecycle + ", role "
                + model.role + ", endpoint " + (endpoint == null ? null : endpoint.state()) + ", closed by " + closedBy
                + ", on " + Thread.currentThread().getName() + ")", e);
        terminate(TerminationReason.LOCAL_RESOURCES, "internal error: " + e);
    }

    /** Whether an ending deserves a warning: a broken rule, a timer, or an error, not an orderly end. */
    private static boolean isFailure(TerminationReason r) {
        switch (r) {
            case LOCAL_CLOSE:
            case PEER_DISCONNECTED:
            case PROVIDER_STOPPED:
            case TRANSPORT_SHUTDOWN:
                return false;
            default:
                return true;
        }
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
        if (h != null && delivered) {
            try {
                h.onConnectionLost(handle, why);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, handle + ": connection-loss handler failed", e);
            }
        }

        if (endpoint != null) {
            endpoint.close();
        }
        if (cq != null) {
            try {
                cq.close();
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> handle + ": completion queue close: " + e.getMessage());
            }
        }

        ConnectionStatistics last = statistics();
        receiver.release();
        model.reassembly.clear();
        negotiationBuffer = null;
        negotiationRegion = null;
        results = null;
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
        if (read && !capabilities.rdmaRead()) {
            return CompletableFuture.failedFuture(new SmbDirectException(
                    "the RDMA provider " + provider.type() + "/" + provider.name() + " cannot RDMA Read"));
        }
        Endpoint ep = handle.parameters() == null ? null : endpoint;
        return rdmaOperations.start(read, local, remoteBuffer, offset, maxReadWriteSize, ep);
    }

    /**
     * Closes gracefully: what the upper layer queued is sent first (within the keepalive response
     * timeout), then the RDMA connection is disconnected; before establishment, at once.
     */
    void closeAsync() {
        execute(() -> {
            if (lifecycle.state() == ConnectionStateMachine.State.ESTABLISHED) {
                lifecycle.moveTo(ConnectionStateMachine.State.CLOSING);
                closeRequested = true;
                sender.closeIntake();
                timers.boundGracefulClose(() -> execute(() -> terminate(TerminationReason.LOCAL_CLOSE,
                        "closed before every queued message was sent")));
                checkGracefulClose();
            } else if (lifecycle.state().compareTo(ConnectionStateMachine.State.ESTABLISHED) < 0) {
                terminate(TerminationReason.LOCAL_CLOSE, "closed while connecting");
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

    /** Disconnects once every message accepted before the close has been sent. */
    private void checkGracefulClose() {
        if (sender.allSent() && rdmaOperations.idle()) {
            terminate(TerminationReason.LOCAL_CLOSE, "closed by the upper layer");
        }
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

    boolean isInitiator() {
        return initiator;
    }

    SmbDirectConfig config() {
        return config;
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

    int receiveDepth() {
        return receiveDepth;
    }

    @Override
    public String toString() {
        return handle.toString();
    }
}
