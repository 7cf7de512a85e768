package org.smbdirect.protocol.internal;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;

import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
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
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * One SMB Direct connection: the state object holding the abstract data model of MS-SMBD
 * 3.1.1.1, and one method per processing rule of 3.1.4 to 3.1.7, named after its section.
 *
 * <p>Threading: the connection is an {@link Actor}. Its protocol state is touched only by
 * {@link #process()}, on its engine thread; provider callbacks, timers and upper-layer calls only
 * enqueue work and signal it, so they never block and never run protocol rules on a foreign
 * connection.
 *
 * <p>Interpretations of the text, each explained where it is applied:
 * <ul>
 * <li>3.1.5.9's return value: receives posted but not yet advertised are tracked
 * ({@link #creditsToGrant}) and granted with the next message, so credits posted while receiving
 * are never lost.</li>
 * <li>3.1.5.8 on SMB_DIRECT_RESPONSE_REQUESTED: the answer is a prompt message without the flag.</li>
 * <li>3.1.5.9's SHOULD branch on the receive path runs only at a low watermark, so that two idle
 * peers do not trade credit-only messages forever.</li>
 * </ul>
 */
final class Connection extends Actor implements SmbDirectConnection, ConnectionListener {
    private static final System.Logger LOG = System.getLogger(Connection.class.getName());
    /**
     * Every SMB Direct message sent or received is logged at this level, as {@code "<connection>
     * sent|received <message with its fields>"} (a capture can be checked against it); callers
     * test {@code LOG.isLoggable(TRACE)} first, so nothing is built while it is off.
     */
    private static final System.Logger.Level TRACE = System.Logger.Level.TRACE;

    /** RDMA Read and Write work requests in flight at once per connection. */
    static final int RDMA_DEPTH = 32;
    private static final int RESULT_BATCH = 32;
    /**
     * Receive buffers a connection starts with; it doubles them while its peer is busy and asks
     * for more, up to ReceiveCreditMax (see {@link #growReceiveBuffers}).
     */
    static final int INITIAL_RECEIVE_BUFFERS = 32;
    /** A peer that uses half the receive buffers within this time is busy. */
    static final long RECEIVE_GROWTH_WINDOW_NANOS = 10_000_000L;
    private static final AtomicInteger IDS = new AtomicInteger();

    /** Connection.Role (MS-SMBD 3.1.1.1). */
    enum Role { ACTIVE, PASSIVE, ESTABLISHED }

    /** Connection.KeepaliveRequested (MS-SMBD 3.1.1.1). */
    enum KeepaliveRequested { NONE, PENDING, SENT }

    /** The implementation's life cycle around the protocol's Role. */
    enum Phase { CONNECTING, NEGOTIATING, ESTABLISHED, TERMINATING, CLOSED }

    final int id = IDS.incrementAndGet();
    private final SmbDirectTransport transport;
    final RdmaProvider provider;
    private final ProviderCapabilities capabilities;
    private final SmbDirectConfig config;
    private final Scheduler scheduler;

    // ------------------------------------------------------------ MS-SMBD 3.1.1.1 abstract data model
    /** Connection.Endpoint. */
    Endpoint endpoint;
    /** Connection.Protocol. */
    int protocol;
    /** Connection.Role. */
    Role role;
    /** Connection.MaxSendSize. */
    int maxSendSize;
    /** Connection.MaxReceiveSize. */
    int maxReceiveSize;
    /** Connection.MaxFragmentedSendSize. */
    int maxFragmentedSendSize;
    /** Connection.MaxFragmentedRecvSize. */
    int maxFragmentedRecvSize;
    /** Connection.MaxReadWriteSize. */
    int maxReadWriteSize;
    /** Connection.SendCreditTarget. */
    int sendCreditTarget;
    /** Connection.SendCredits. */
    int sendCredits;
    /** Connection.ReceiveCreditMax. */
    int receiveCreditMax;
    /** Connection.ReceiveCreditTarget. */
    int receiveCreditTarget;
    /** Connection.ReceiveCredits. */
    int receiveCredits;
    /** Connection.SendQueue: strict FIFO of upper-layer messages (each sent as one or more fragments). */
    final ArrayDeque<OutgoingMessage> sendQueue = new ArrayDeque<>();
    /** Connection.FragmentReassemblyBuffer (position = bytes reassembled so far). */
    ByteBuffer fragmentReassemblyBuffer;
    /** Connection.FragmentReassemblyRemaining. */
    long fragmentReassemblyRemaining;
    /** Connection.InvalidatedToken (present or empty). */
    boolean invalidatedTokenPresent;
    int invalidatedToken;
    /** Connection.KeepaliveInterval, in nanoseconds; 0 disables keepalives. */
    long keepaliveInterval;
    /** Connection.KeepaliveRequested. */
    KeepaliveRequested keepaliveRequested;
    /** Connection.SendImmediate. */
    boolean sendImmediate;

    // ------------------------------------------------------------ implementation state (actor-confined)
    Phase phase = Phase.CONNECTING;
    /** The thread that ran {@link #connectionLoss()}, for diagnosing internal errors. */
    private String closedBy;
    /** Receives posted but not yet granted to the peer in a CreditsGranted field (see 3.1.5.9). */
    int creditsToGrant;
    /** Send credits the peer still holds by our count: granted minus messages received. */
    int peerCredits;
    private final boolean initiator;
    private CompletionQueue cq;
    private final CompletionResult[] results = new CompletionResult[RESULT_BATCH];
    private SendBuffers sendBuffers;
    private ReceiveBuffers receiveBuffers;
    private boolean receiveGrowthFailed;
    /**
     * Set once the RDMA connection is known to have ended (by its provider's event, or by a post
     * refused because the endpoint disconnected): what is already received is handed over
     * before the loss, and nothing more is posted.
     */
    private boolean handingOverBeforeLoss;
    private int receivedSinceGrowthCheck;
    private long lastGrowthCheckNanos = Long.MIN_VALUE / 2;
    private ByteBuffer negotiationBuffer;
    private MemoryRegion negotiationRegion;
    private final Sge[] negotiationSgl = {new Sge()};
    private final Object negotiationContext = new Object();
    private final DataTransferHeader header = new DataTransferHeader();
    private final OutgoingMessage emptyMessage = new OutgoingMessage();
    private ByteBuffer reassemblyView;
    private int inlineThreshold;
    private int ordLimit;
    private int irdInUse;
    private int ordInUse;
    private ConnectionLoss pendingNegotiateFailure;
    private Runnable deferredUntilEstablished;
    /** Messages whose fragments failed or were flushed, to fail when the loss reason is known. */
    private final List<OutgoingMessage> orphaned = new ArrayList<>();
    private final ArrayDeque<RdmaTransfer> rdmaQueue = new ArrayDeque<>();
    private final Set<RdmaTransfer> rdmaActive = new LinkedHashSet<>();
    private int rdmaInFlight;
    private int readsInFlight;
    private boolean closing;
    private boolean delivered;
    private final ConnectionCounters counters = new ConnectionCounters();
    private InetSocketAddress remote;

    // timers
    private Scheduler.Timer negotiationTimer;
    private Scheduler.Timer idleTimer;
    private long idleTimerAt;
    private long idleDeadline;
    private Scheduler.Timer terminationTimer;
    private Scheduler.Timer closeTimer;
    private volatile boolean negotiationTimerFired;
    private volatile boolean idleTimerFired;
    private volatile boolean cqNotified;

    // ------------------------------------------------------------ shared with other threads
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Object inboxLock = new Object();
    private final ArrayDeque<OutgoingMessage> inbox = new ArrayDeque<>();
    private final ArrayDeque<OutgoingMessage> pool = new ArrayDeque<>();
    private int pendingSends;
    private boolean sendsClosed;
    private final Map<Integer, RegisteredBufferImpl> registrations = new ConcurrentHashMap<>();
    private final AtomicInteger registrationsLive = new AtomicInteger();
    /** Why the connection ended; set once, by {@link #recordLoss}, from any thread. */
    private volatile ConnectionLoss loss;
    private static final AtomicReferenceFieldUpdater<Connection, ConnectionLoss> LOSS =
            AtomicReferenceFieldUpdater.newUpdater(Connection.class, ConnectionLoss.class, "loss");
    /** Set, before the provider closes, when the provider carrying the connection is going away. */
    private volatile String providerStopped;
    private volatile ConnectionHandler handler;
    private volatile ConnectionParameters parameters;
    private final CompletableFuture<SmbDirectConnection> connectFuture = new CompletableFuture<>();
    private final CompletableFuture<Void> closeFuture = new CompletableFuture<>();
    private final AcceptHandler acceptHandler;

    private Connection(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, boolean initiator, ConnectionHandler handler, AcceptHandler acceptHandler) {
        super(loop);
        this.transport = transport;
        this.provider = provider;
        this.capabilities = provider.capabilities();
        this.config = config;
        this.scheduler = transport.scheduler();
        this.initiator = initiator;
        this.handler = handler;
        this.acceptHandler = acceptHandler;
        for (int i = 0; i < results.length; i++) {
            results[i] = new CompletionResult();
        }
        emptyMessage.internal = true;
    }

    // ================================================================ creation

    /**
     * MS-SMBD 3.1.4.1 Connecting to the Peer: creates the Connection; {@link #start} begins.
     */
    static Connection connect(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, InetSocketAddress remote, ConnectionHandler handler) {
        Connection c = new Connection(transport, provider, config, loop, true, handler, null);
        c.remote = remote;
        c.start = c::connectingToThePeer;
        return c;
    }

    /**
     * MS-SMBD 3.1.7.2 Connection Arrival: creates the Connection for a peer's request; {@link
     * #start} begins.
     */
    static Connection arrive(SmbDirectTransport transport, RdmaProvider provider, SmbDirectConfig config,
            EventLoopGroup.Loop loop, ConnectionRequest request, AcceptHandler acceptHandler) {
        Connection c = new Connection(transport, provider, config, loop, false, null, acceptHandler);
        c.remote = request.remoteAddress();
        c.start = () -> c.connectionArrival(request);
        return c;
    }

    /** The first step, run by {@link #start()}. */
    private Runnable start;

    /**
     * Starts the connection's processing. The transport calls this only after it holds the
     * connection, so that an early end always finds it there to remove.
     */
    void start() {
        execute(start);
        start = null;
    }

    CompletableFuture<SmbDirectConnection> connectFuture() {
        return connectFuture;
    }

    /** Completes when the connection has ended and released its endpoint and completion queue. */
    CompletableFuture<Void> ended() {
        return closeFuture;
    }

    /** Runs a task in the actor. */
    void execute(Runnable task) {
        tasks.add(task);
        signal();
    }

    /**
     * Runs a function on the connection's state in the actor, for inspection by tests and tools.
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

    /** Sets the per-connection initial values of 3.1.4.1 and 3.1.7.2 (note 2, note 7). */
    private void initialValues(Role initialRole) {
        role = initialRole;
        receiveCreditMax = config.receiveCreditMax();
        sendCreditTarget = config.sendCreditTarget();
        maxSendSize = config.maxSendSize();
        maxFragmentedRecvSize = config.maxFragmentedRecvSize();
        maxReceiveSize = config.maxReceiveSize();
        keepaliveInterval = config.keepaliveInterval().toNanos();
        // 3.1.4.1 sets MaxReadWriteSize to 0 until the Negotiate Response; 3.1.7.2 sets the local value.
        maxReadWriteSize = initialRole == Role.ACTIVE ? 0 : config.maxReadWriteSize();
        keepaliveRequested = KeepaliveRequested.NONE;
        protocol = 0;
        sendCredits = 0;
        receiveCredits = 0;
        fragmentReassemblyRemaining = 0;
        sendQueue.clear();
        fragmentReassemblyBuffer = null;
        invalidatedTokenPresent = false;
        sendImmediate = false;
    }

    /**
     * Creates the completion queue and the endpoint options for this connection.
     *
     * @param local the local address to connect from, {@code null} for the provider's first
     */
    private EndpointOptions createQueues(InetAddress local) throws RdmaException {
        int maxDepth = capabilities.maxQueueDepth();
        int sendDepth = Math.min(config.sendBuffers() + RDMA_DEPTH, maxDepth);
        int recvDepth = Math.min(Math.max(config.receiveCreditMax(), 1), maxDepth);
        int cqDepth = Math.min(sendDepth + recvDepth, capabilities.maxCompletionQueueDepth());
        cq = provider.createCompletionQueue(cqDepth, q -> {
            cqNotified = true;
            signal();
        });
        inlineThreshold = Math.min(capabilities.inlineLimit(), config.maxSendSize());
        return EndpointOptions.builder(cq, cq).sendQueueDepth(sendDepth).receiveQueueDepth(recvDepth)
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

    /** Posts the receive for the first message (3.1.4.1 and 3.1.7.2: at least 512 bytes). */
    private void postNegotiationReceive() throws RdmaException {
        negotiationBuffer = ByteBuffer.allocateDirect(Wire.NEGOTIATION_RECEIVE_SIZE)
                .order(java.nio.ByteOrder.LITTLE_ENDIAN);
        negotiationRegion = endpoint.register(negotiationBuffer, Access.LOCAL_WRITE);
        negotiationSgl[0].set(negotiationRegion, 0, Wire.NEGOTIATION_RECEIVE_SIZE);
        endpoint.postReceive(negotiationContext, negotiationSgl, 1);
    }

    private void startNegotiationTimer(Duration timeout) {
        negotiationTimer = scheduler.schedule(() -> {
            negotiationTimerFired = true;
            signal();
        }, timeout.toNanos());
    }

    /**
     * Whether the connection ended, or its provider is being removed, before its first step ran:
     * then the step must not touch the provider (its removal may have returned already); the
     * termination queued by the removal ends the connection.
     */
    private boolean endedBeforeStart() {
        return phase.compareTo(Phase.TERMINATING) >= 0 || providerStopped != null;
    }

    /** MS-SMBD 3.1.4.1 Connecting to the Peer (in the actor). */
    private void connectingToThePeer() {
        if (endedBeforeStart()) {
            return;
        }
        initialValues(Role.ACTIVE);
        startNegotiationTimer(config.activeNegotiationTimeout());
        try {
            endpoint = provider.createEndpoint(createQueues(localAddressFor(remote.getAddress(), provider.addresses())),
                    this);
            endpoint.attach(this);
            sendBuffers = new SendBuffers(endpoint, config.maxSendSize(), config.sendBuffers(),
                    capabilities.maxRegionSize());
            cq.arm(ArmType.ANY);
            postNegotiationReceive();
            irdInUse = Math.min(config.ird(), capabilities.maxIrd());
            ordInUse = Math.min(config.ord(), capabilities.maxOrd());
            // MS-SMBD 6.1: the IRD/ORD Negotiate Header leads the private data of the connection
            // request where the transport carries it (iWARP, or as configured).
            byte[] privateData = IrdOrdNegotiation.requestPrivateData(config.irdOrdHeader(),
                    capabilities.transportType(), irdInUse, ordInUse);
            endpoint.connect(remote, privateData, irdInUse, ordInUse);
        } catch (RdmaException e) {
            terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, e.getMessage());
        }
    }

    /** MS-SMBD 3.1.7.2 Connection Arrival (in the actor). */
    private void connectionArrival(ConnectionRequest request) {
        if (endedBeforeStart()) {
            return; // the provider's closing answers the request
        }
        initialValues(Role.PASSIVE);
        startNegotiationTimer(config.passiveNegotiationTimeout());
        try {
            endpoint = request.createEndpoint(createQueues(null), this);
            endpoint.attach(this);
            sendBuffers = new SendBuffers(endpoint, config.maxSendSize(), config.sendBuffers(),
                    capabilities.maxRegionSize());
            cq.arm(ArmType.ANY);
            // Posted before accepting, so the peer's Negotiate Request always finds it.
            postNegotiationReceive();
        } catch (RdmaException e) {
            rejectQuietly(request);
            terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, "cannot prepare the connection: " + e.getMessage());
            return;
        }
        int localIrd = Math.min(config.ird(), capabilities.maxIrd());
        int localOrd = Math.min(config.ord(), capabilities.maxOrd());
        byte[] reply = null;
        // Padding of the connection manager (InfiniBand, RoCE) is not a header: only the
        // transport the policy names carries one (MS-SMBD 6.2 "if present").
        IrdOrdHeader requested = IrdOrdNegotiation.receivedHeader(config.irdOrdHeader(),
                capabilities.transportType(), request.peerPrivateData());
        IrdOrdNegotiation.Depths depths;
        if (requested != null) {
            // MS-SMBD 6.2: answer the header; the provider's IRD and ORD are the values sent.
            IrdOrdHeader answer = IrdOrdHeader.reply(requested, localIrd, localOrd);
            if (!answer.isValid()) {
                rejectQuietly(request);
                terminate(TerminationReason.IRD_ORD_ZERO, requested + " answered with " + answer);
                return;
            }
            depths = IrdOrdNegotiation.acceptorFromAnswer(answer);
            reply = answer.toPrivateData();
        } else {
            depths = IrdOrdNegotiation.fromConnectionManager(localIrd, localOrd, request.peerIrd(), request.peerOrd());
        }
        irdInUse = depths.ird;
        ordInUse = depths.ord;
        try {
            request.accept(endpoint, reply, Math.min(irdInUse, capabilities.maxIrd()),
                    Math.min(ordInUse, capabilities.maxOrd()));
            phase = Phase.NEGOTIATING;
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
        execute(() -> rdmaConnectionEnded(phase == Phase.CONNECTING && initiator ? TerminationReason.CONNECT_FAILED
                : TerminationReason.TRANSPORT_ERROR, status + ": " + reason));
    }

    /** The RDMA connection is up: the initiator starts negotiating (3.1.4.1, 3.1.5.2). */
    private void rdmaEstablished() {
        if (phase.compareTo(Phase.TERMINATING) >= 0) {
            return;
        }
        if (initiator) {
            IrdOrdHeader answer = IrdOrdNegotiation.receivedHeader(config.irdOrdHeader(),
                    capabilities.transportType(), endpoint.peerPrivateData());
            if (answer != null) {
                // MS-SMBD 6.2: the connecting peer uses the values the accepting peer transmitted.
                if (!answer.isValid()) {
                    terminate(TerminationReason.IRD_ORD_ZERO, "the peer answered " + answer);
                    return;
                }
                IrdOrdNegotiation.Depths depths = IrdOrdNegotiation.initiatorFromAnswer(irdInUse, ordInUse, answer);
                irdInUse = depths.ird;
                ordInUse = depths.ord;
            } else {
                irdInUse = endpoint.ird();
                ordInUse = endpoint.ord();
            }
            phase = Phase.NEGOTIATING;
            sendNegotiateRequest();
        } else if (deferredUntilEstablished != null) {
            Runnable r = deferredUntilEstablished;
            deferredUntilEstablished = null;
            r.run();
        }
    }

    /** The provider ended the RDMA connection (MS-SMBD 3.1.7.1). */
    private void rdmaConnectionEnded(TerminationReason reason, String detail) {
        if (phase == Phase.CLOSED) {
            return;
        }
        if (loss == null) {
            if (closing && reason == TerminationReason.PEER_DISCONNECTED) {
                reason = TerminationReason.LOCAL_CLOSE;
            }
            recordLoss(lossFor(reason, detail));
        }
        if (phase == Phase.ESTABLISHED) {
            // The messages the peer sent before the end are already received, in the completion
            // queue: they reach the upper layer before the loss does (a peer's last message
            // before its disconnect is not dropped). Nothing is posted meanwhile, and failed or
            // flushed work does not stop the hand-over: the connection is gone either way.
            handingOverBeforeLoss = true;
            pollCompletions();
        }
        connectionLoss();
    }

    /** Package-private for tests and statistics: the receive buffers there are now; actor only. */
    int receiveBufferCapacity() {
        return receiveBuffers == null ? 0 : receiveBuffers.capacity();
    }

    /**
     * Package-private for tests: whether events (provider callbacks, upper-layer requests) wait
     * for the actor.
     */
    boolean hasPendingTasks() {
        return !tasks.isEmpty();
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
        if (phase == Phase.CLOSED) {
            return;
        }
        if (cqNotified) {
            cqNotified = false;
            drainCompletions();
        }
        if (negotiationTimerFired) {
            negotiationTimerFired = false;
            negotiationTimerExpired();
        }
        if (idleTimerFired) {
            idleTimerFired = false;
            onIdleTimer();
        }
        if (phase == Phase.ESTABLISHED && !handingOverBeforeLoss) {
            try {
                drainInbox();
                sendUpperLayerMessages();
                pumpRdma();
                if (closing) {
                    checkGracefulClose();
                }
            } catch (RuntimeException e) {
                // Never into the engine loop: end this connection with a readable reason instead.
                internalError("sending", e);
            }
        }
    }

    private void drainCompletions() {
        pollCompletions();
        if (phase != Phase.CLOSED) {
            cq.arm(ArmType.ANY);
        }
    }

    /** Processes every completion in the queue while the connection has not closed. */
    private void pollCompletions() {
        for (;;) {
            int n = cq.getResultsEx(results);
            if (n == 0) {
                return;
            }
            for (int i = 0; i < n; i++) {
                CompletionResult r = results[i];
                // Once the connection is closed its buffers are released: the rest of the batch
                // (flushed work) has nothing left to do.
                if (phase != Phase.CLOSED) {
                    try {
                        onCompletion(r);
                    } catch (RuntimeException e) {
                        internalError("completion " + r, e);
                    }
                }
                r.set(null, null, null, RdmaStatus.SUCCESS, 0, false, false, 0);
            }
            if (phase == Phase.CLOSED) {
                return;
            }
        }
    }

    private void onCompletion(CompletionResult r) {
        Object ctx = r.requestContext();
        RdmaStatus status = r.status();
        if (handingOverBeforeLoss && status != RdmaStatus.SUCCESS) {
            if (ctx instanceof ReceiveBuffers.Slot) {
                receiveBuffers.free((ReceiveBuffers.Slot) ctx);
            }
            return; // what completed still counts; what failed is part of the loss
        }
        if (ctx instanceof SendBuffers.Slot) {
            sendCompleted((SendBuffers.Slot) ctx, status);
        } else if (ctx instanceof ReceiveBuffers.Slot) {
            ReceiveBuffers.Slot slot = (ReceiveBuffers.Slot) ctx;
            receiveCredits--;
            if (phase.compareTo(Phase.TERMINATING) >= 0) {
                receiveBuffers.free(slot); // the connection ceased processing
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(slot.buffer, slot.base, r.bytesTransferred(), slot, r.tokenInvalidated(),
                        r.invalidatedToken());
            } else {
                receiveBuffers.free(slot);
                failed(r);
            }
        } else if (ctx == negotiationContext) {
            if (phase.compareTo(Phase.TERMINATING) >= 0) {
                return;
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(negotiationBuffer, 0, r.bytesTransferred(), null, r.tokenInvalidated(),
                        r.invalidatedToken());
            } else {
                failed(r);
            }
        } else if (ctx instanceof RdmaTransfer.Segment) {
            rdmaSegmentCompleted((RdmaTransfer.Segment) ctx, r);
        }
    }

    /** A bug of ours: logged, counted, and the connection ends rather than the thread. */
    private void internalError(String where, RuntimeException e) {
        transport.internalError();
        LOG.log(System.Logger.Level.ERROR, this + ": internal error in " + where + " (phase " + phase + ", role "
                + role + ", endpoint " + (endpoint == null ? null : endpoint.state()) + ", loss " + loss
                + ", closed by " + closedBy + ", on " + Thread.currentThread().getName() + ")", e);
        terminate(TerminationReason.LOCAL_RESOURCES, "internal error: " + e);
    }

    /** A work request failed: the RDMA layer has ended the connection (3.1.4.2). */
    private void failed(CompletionResult r) {
        if (r.status() != RdmaStatus.FLUSHED) {
            terminate(TerminationReason.TRANSPORT_ERROR, r.type() + " completed with " + r.status() + " ("
                    + r.status().description() + ")");
        }
    }

    /**
     * A post was refused. When the endpoint has disconnected underneath (the provider's event is
     * on its way), this is the RDMA connection's end, not a transport error: the messages already
     * received are handed over and the loss is the disconnect's (3.1.7.1), as when the event comes
     * first. Otherwise the provider failed (3.1.4.2).
     */
    private void postFailed(String what, RdmaException e) {
        if (endpoint.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            if (!handingOverBeforeLoss) {
                handingOverBeforeLoss = true; // the rest of this batch is delivered, nothing more posted
                execute(() -> rdmaConnectionEnded(TerminationReason.PEER_DISCONNECTED, "RDMA connection disconnected"));
            }
            return;
        }
        terminate(TerminationReason.TRANSPORT_ERROR, what + ": " + e.getMessage());
    }

    // ================================================================ 3.1.5.5 - 3.1.5.8 receiving

    /** MS-SMBD 3.1.5.5 Receiving Any Message. */
    private void receiveAnyMessage(ByteBuffer b, int base, int length, ReceiveBuffers.Slot slot,
            boolean tokenInvalidated, int token) {
        switch (role) {
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
                // The Idle Connection Timer is retriggered and KeepaliveRequested reset by any message.
                if (keepaliveInterval > 0) {
                    setIdleDeadline(keepaliveInterval);
                }
                keepaliveRequested = KeepaliveRequested.NONE;
                receiveDataTransferMessage(slot, length, tokenInvalidated, token);
        }
    }

    /** MS-SMBD 3.1.5.6 Receiving a Negotiate Request Message. */
    private void receiveNegotiateRequest(ByteBuffer b, int base, int length) {
        if (length < NegotiateRequest.SIZE) {
            terminate(TerminationReason.NEGOTIATE_REQUEST_TOO_SHORT, "length=" + length);
            return;
        }
        NegotiateRequest req = NegotiateRequest.decode(b.duplicate().position(base).limit(base + length));
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " received " + req);
        }
        if (req.minVersion() > Wire.VERSION_1 || req.maxVersion() < Wire.VERSION_1) {
            sendNegotiateResponseFailure(Wire.STATUS_NOT_SUPPORTED, new ConnectionLoss(
                    TerminationReason.NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED, String.format(
                            "MinVersion=0x%04X, MaxVersion=0x%04X", req.minVersion(), req.maxVersion())));
            return;
        }
        // Otherwise MinVersion and MaxVersion are ignored (SHOULD, note 4 describes Windows Server 2012 only).
        if (req.creditsRequested() == 0) {
            terminate(TerminationReason.NEGOTIATE_REQUEST_NO_CREDITS_REQUESTED, "CreditsRequested=0");
            return;
        }
        if (Integer.compareUnsigned(req.maxReceiveSize(), Wire.MIN_RECEIVE_SIZE) < 0) {
            terminate(TerminationReason.NEGOTIATE_REQUEST_MAX_RECEIVE_SIZE_TOO_SMALL,
                    "MaxReceiveSize=" + Integer.toUnsignedString(req.maxReceiveSize()));
            return;
        }
        if (Integer.compareUnsigned(req.maxFragmentedSize(), Wire.MIN_FRAGMENTED_SIZE) < 0) {
            terminate(TerminationReason.NEGOTIATE_REQUEST_MAX_FRAGMENTED_SIZE_TOO_SMALL,
                    "MaxFragmentedSize=" + Integer.toUnsignedString(req.maxFragmentedSize()));
            return;
        }
        // Note 5: Windows Server 2012 R2 and later refuse a PreferredSendSize above 8136.
        int limit = config.preferredSendSizeLimit();
        if (limit != 0 && Integer.compareUnsigned(req.preferredSendSize(), limit) > 0) {
            sendNegotiateResponseFailure(Wire.STATUS_INSUFFICIENT_RESOURCES, new ConnectionLoss(
                    TerminationReason.NEGOTIATE_REQUEST_PREFERRED_SEND_SIZE_TOO_LARGE, "PreferredSendSize="
                            + Integer.toUnsignedString(req.preferredSendSize()) + ", limit " + limit));
            return;
        }
        maxReceiveSize = Math.max(minUnsigned(maxReceiveSize, req.preferredSendSize()), Wire.MIN_RECEIVE_SIZE);
        protocol = Wire.VERSION_1;
        receiveCreditTarget = req.creditsRequested();
        maxSendSize = minUnsigned(maxSendSize, req.maxReceiveSize());
        maxFragmentedSendSize = (int) Math.min(Integer.toUnsignedLong(req.maxFragmentedSize()), Integer.MAX_VALUE);
        initializeReceiveCredits();
        if (phase.compareTo(Phase.TERMINATING) >= 0) {
            return; // posting failed because the connection is already gone: nothing to answer
        }
        if (receiveCredits == 0) {
            sendNegotiateResponseFailure(Wire.STATUS_INSUFFICIENT_RESOURCES, new ConnectionLoss(
                    TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted"));
            return;
        }
        if (!sendNegotiateResponse()) {
            return;
        }
        cancelNegotiationTimer();
        if (keepaliveInterval > 0) {
            setIdleDeadline(keepaliveInterval);
        }
        role = Role.ESTABLISHED;
        established();
        // 3.1.7.2 / 3.1.5.6: the new Connection is indicated to the upper layer.
        ConnectionHandler h = null;
        try {
            h = acceptHandler.onConnection(this);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": accept handler failed", e);
        }
        if (h == null) {
            closeAsync();
        } else {
            handler = h;
            delivered = true;
        }
    }

    /** MS-SMBD 3.1.5.7 Receiving a Negotiate Response Message. */
    private void receiveNegotiateResponse(ByteBuffer b, int base, int length) {
        if (length < NegotiateResponse.SIZE) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_TOO_SHORT, "length=" + length);
            return;
        }
        NegotiateResponse rsp = NegotiateResponse.decode(b.duplicate().position(base).limit(base + length));
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " received " + rsp);
        }
        // Status first: a refusal carries zeros elsewhere, and the refusal is the real reason.
        if (rsp.status() != Wire.STATUS_SUCCESS) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_FAILED_STATUS, "Status=" + Wire.statusName(rsp.status()));
            return;
        }
        if (rsp.negotiatedVersion() != Wire.VERSION_1) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_BAD_VERSION,
                    String.format("NegotiatedVersion=0x%04X", rsp.negotiatedVersion()));
            return;
        }
        if (Integer.compareUnsigned(rsp.maxReceiveSize(), Wire.MIN_RECEIVE_SIZE) < 0) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_MAX_RECEIVE_SIZE_TOO_SMALL,
                    "MaxReceiveSize=" + Integer.toUnsignedString(rsp.maxReceiveSize()));
            return;
        }
        if (Integer.compareUnsigned(rsp.maxFragmentedSize(), Wire.MIN_FRAGMENTED_SIZE) < 0) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_MAX_FRAGMENTED_SIZE_TOO_SMALL,
                    "MaxFragmentedSize=" + Integer.toUnsignedString(rsp.maxFragmentedSize()));
            return;
        }
        if (rsp.creditsGranted() == 0) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_NO_CREDITS_GRANTED, "CreditsGranted=0");
            return;
        }
        if (rsp.creditsRequested() == 0) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_NO_CREDITS_REQUESTED, "CreditsRequested=0");
            return;
        }
        if (Integer.compareUnsigned(rsp.preferredSendSize(), maxReceiveSize) > 0) {
            terminate(TerminationReason.NEGOTIATE_RESPONSE_PREFERRED_SEND_SIZE_TOO_LARGE, "PreferredSendSize="
                    + Integer.toUnsignedString(rsp.preferredSendSize()) + ", MaxReceiveSize=" + maxReceiveSize);
            return;
        }
        protocol = Wire.VERSION_1;
        receiveCreditTarget = rsp.creditsRequested();
        maxReceiveSize = Math.max(minUnsigned(maxReceiveSize, rsp.preferredSendSize()), Wire.MIN_RECEIVE_SIZE);
        maxSendSize = minUnsigned(maxSendSize, rsp.maxReceiveSize());
        // Note 6: the local limit is the configured MaxReadWriteSize (8 MiB by default).
        maxReadWriteSize = minUnsigned(config.maxReadWriteSize(), rsp.maxReadWriteSize());
        sendCredits = rsp.creditsGranted();
        counters.creditsReceived += sendCredits;
        maxFragmentedSendSize = (int) Math.min(Integer.toUnsignedLong(rsp.maxFragmentedSize()), Integer.MAX_VALUE);
        initializeReceiveCredits();
        if (phase.compareTo(Phase.TERMINATING) >= 0) {
            return;
        }
        if (receiveCredits == 0) {
            terminate(TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted");
            return;
        }
        cancelNegotiationTimer();
        if (keepaliveInterval > 0) {
            setIdleDeadline(keepaliveInterval);
        }
        role = Role.ESTABLISHED;
        established();
        delivered = true;
        // The peer holds no send credit until our first message grants the receives just posted;
        // send that message at once unless the upper layer queues one first (3.1.5.1).
        sendImmediate = true;
        connectFuture.complete(this);
    }

    /** The receive buffers of 3.1.5.9's initialisation: the slab, then the first posts. */
    private void initializeReceiveCredits() {
        releaseNegotiationBuffer();
        try {
            int max = Math.max(receiveCreditMax, 1);
            receiveBuffers = new ReceiveBuffers(endpoint, Math.min(INITIAL_RECEIVE_BUFFERS, max), max, maxReceiveSize,
                    capabilities.maxRegionSize());
        } catch (RdmaException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": cannot register receive buffers: " + e.getMessage());
            return;
        }
        manageCreditsPriorToSending(true);
    }

    private void established() {
        phase = Phase.ESTABLISHED;
        // RDMA Reads towards the peer: this side's ORD, which the negotiation bounded by the
        // peer's IRD (section 6 and IrdOrdNegotiation say how either side reads the values).
        ordLimit = Math.max(1, ordInUse);
        parameters = new Parameters(this);
        transport.connectionEstablished(this);
        LOG.log(System.Logger.Level.DEBUG, () -> this + " established: " + parameters);
    }

    /** MS-SMBD 3.1.5.8 Receiving a Data Transfer Message. */
    private void receiveDataTransferMessage(ReceiveBuffers.Slot slot, int length, boolean tokenInvalidated,
            int token) {
        ByteBuffer b = slot.buffer;
        int base = slot.base;
        counters.fragmentsReceived++;
        if (length < Wire.DATA_TRANSFER_HEADER_SIZE) {
            receiveBuffers.free(slot);
            terminate(TerminationReason.DATA_TRANSFER_TOO_SHORT, "length=" + length);
            return;
        }
        DataTransferHeader h = header.decode(b, base, length);
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " received " + h);
        }
        long dataOffset = Integer.toUnsignedLong(h.dataOffset());
        long dataLength = Integer.toUnsignedLong(h.dataLength());
        long remaining = Integer.toUnsignedLong(h.remainingDataLength());
        TerminationReason violation = null;
        if (h.creditsRequested() == 0) {
            violation = TerminationReason.DATA_TRANSFER_NO_CREDITS_REQUESTED;
        } else if ((dataOffset & 7) != 0) {
            violation = TerminationReason.DATA_OFFSET_NOT_ALIGNED;
        } else if (dataOffset + dataLength > length) {
            violation = TerminationReason.DATA_BEYOND_MESSAGE;
        } else if (dataLength + remaining > maxFragmentedRecvSize) {
            violation = TerminationReason.FRAGMENTED_SIZE_EXCEEDED;
        } else if (peerCredits == 0) {
            violation = TerminationReason.SEND_WITHOUT_CREDIT;
        } else if (fragmentReassemblyRemaining > 0 && dataLength == 0 && remaining == 0 && !config.strictReassembly()) {
            // Not part of the sequence: a message carrying only credits or a keepalive, which
            // Linux peers before 2026 send between the fragments of a large message. Taken as
            // such below; the sequence goes on (strictReassembly ends the connection instead).
            violation = null;
        } else if (fragmentReassemblyRemaining > 0 && remaining == 0 && dataLength < fragmentReassemblyRemaining) {
            // The spec's own check, in 3.1.5.8's final step: the sequence ended early.
            violation = TerminationReason.REASSEMBLY_INCOMPLETE;
        } else if (fragmentReassemblyRemaining > 0
                && (dataLength > fragmentReassemblyRemaining || remaining != fragmentReassemblyRemaining - dataLength)) {
            // A continuation must carry exactly what the first fragment announced, else the
            // reassembly buffer could grow past MaxFragmentedRecvSize.
            violation = TerminationReason.REASSEMBLY_OVERRUN;
        } else if (Integer.toUnsignedLong(sendCredits) + h.creditsGranted() > 65535) {
            violation = TerminationReason.SEND_CREDITS_OVERFLOW;
        }
        if (violation != null) {
            String detail = h + ", message length " + length + ", MaxFragmentedRecvSize " + maxFragmentedRecvSize
                    + ", FragmentReassemblyRemaining " + fragmentReassemblyRemaining + ", peer credits " + peerCredits;
            receiveBuffers.free(slot);
            terminate(violation, detail);
            return;
        }
        peerCredits--;
        // (Connection.ReceiveCredits was decremented when the completion was taken.)
        receiveCreditTarget = h.creditsRequested();
        growReceiveBuffers();
        if ((h.flags() & Wire.SMB_DIRECT_RESPONSE_REQUESTED) != 0) {
            // The peer asks for a prompt answer. Read literally, 3.1.5.8 would set KeepaliveRequested
            // to PENDING, which makes 3.1.5.1 put SMB_DIRECT_RESPONSE_REQUESTED on the answer itself,
            // and the two peers would then keep requesting responses from each other forever. The
            // answer is therefore a prompt message without the flag, as the implementations that
            // interoperate with Windows do.
            counters.keepalivesReceived++;
            sendImmediate = true;
        }
        if (h.creditsGranted() > 0) {
            sendCredits += h.creditsGranted();
            counters.creditsReceived += h.creditsGranted();
        }
        if (tokenInvalidated) {
            invalidatedToken = token;
            invalidatedTokenPresent = true;
            RegisteredBufferImpl rb = registrations.get(token);
            if (rb != null) {
                rb.revoke();
            }
        }
        int offset = base + (int) dataOffset;
        int len = (int) dataLength;
        if (fragmentReassemblyRemaining > 0 && len == 0 && remaining == 0) {
            // The lenient case above: credits and flags only, nothing to reassemble or deliver.
            LOG.log(System.Logger.Level.DEBUG, () -> this + ": empty message inside a fragmented sequence, taken "
                    + "as credits and keepalive");
        } else if (fragmentReassemblyRemaining == 0 && remaining == 0) {
            // A whole message in one fragment: deliver the receive buffer itself, no copy.
            if (len > 0 || invalidatedTokenPresent) {
                ByteBuffer view = slot.view;
                view.limit(offset - base + len).position(offset - base);
                deliver(view, len);
            }
        } else {
            if (fragmentReassemblyRemaining == 0) {
                startReassembly((int) (dataLength + remaining));
                fragmentReassemblyRemaining = remaining;
            } else {
                fragmentReassemblyRemaining -= dataLength;
            }
            fragmentReassemblyBuffer.put(fragmentReassemblyBuffer.position(), b, offset, len);
            fragmentReassemblyBuffer.position(fragmentReassemblyBuffer.position() + len);
            if (remaining == 0) {
                int total = fragmentReassemblyBuffer.position();
                reassemblyView.limit(total).position(0);
                fragmentReassemblyBuffer.clear();
                deliver(reassemblyView, total);
            }
        }
        receiveBuffers.free(slot);
        if (phase != Phase.ESTABLISHED) {
            return;
        }
        // Done after delivery rather than before, so the buffer just processed can be posted again
        // and an answer the upper layer queued meanwhile carries the credits.
        if (sendQueue.isEmpty() && manageCreditsPriorToSending(false) > 0) {
            sendImmediate = true;
        }
    }

    /** Sizes Connection.FragmentReassemblyBuffer for a new sequence, reusing the last one when it fits. */
    private void startReassembly(int total) {
        if (fragmentReassemblyBuffer == null || fragmentReassemblyBuffer.capacity() < total) {
            fragmentReassemblyBuffer = ByteBuffer.allocate(total);
            reassemblyView = fragmentReassemblyBuffer.asReadOnlyBuffer();
        }
        fragmentReassemblyBuffer.clear();
    }

    /** Passes a complete message and Connection.InvalidatedToken to the upper layer (3.1.5.8). */
    private void deliver(ByteBuffer message, int length) {
        OptionalInt token = invalidatedTokenPresent ? OptionalInt.of(invalidatedToken) : OptionalInt.empty();
        invalidatedTokenPresent = false;
        counters.messagesReceived++;
        counters.bytesReceived += length;
        ConnectionHandler h = handler;
        if (h == null) {
            return;
        }
        try {
            h.onMessage(this, message, token);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": message handler failed", e);
        }
    }

    // ================================================================ 3.1.5.1 - 3.1.5.4 sending

    /** MS-SMBD 3.1.5.2 Sending a Negotiate Request Message. */
    private void sendNegotiateRequest() {
        NegotiateRequest req = new NegotiateRequest(Wire.VERSION_1, Wire.VERSION_1, sendCreditTarget, maxSendSize,
                maxReceiveSize, maxFragmentedRecvSize);
        if (postNegotiationMessage(b -> req.encode(b), NegotiateRequest.SIZE) && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " sent " + req);
        }
    }

    /** MS-SMBD 3.1.5.3 Sending a Negotiate Response Message, success form. */
    private boolean sendNegotiateResponse() {
        int granted = Math.min(receiveCredits, 65535);
        NegotiateResponse rsp = new NegotiateResponse(Wire.VERSION_1, Wire.VERSION_1, protocol, sendCreditTarget,
                granted, Wire.STATUS_SUCCESS, maxReadWriteSize, maxSendSize, maxReceiveSize, maxFragmentedRecvSize);
        creditsToGrant -= granted;
        peerCredits += granted;
        counters.creditsGranted += granted;
        if (!postNegotiationMessage(b -> rsp.encode(b), NegotiateResponse.SIZE)) {
            return false;
        }
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " sent " + rsp);
        }
        return true;
    }

    /**
     * MS-SMBD 3.1.5.3, failure form: every other field zero; then a graceful termination once the
     * response has been sent.
     */
    private void sendNegotiateResponseFailure(int status, ConnectionLoss why) {
        NegotiateResponse rsp = NegotiateResponse.failure(status);
        LOG.log(System.Logger.Level.DEBUG, () -> this + " refusing the negotiation: " + why.message());
        pendingNegotiateFailure = why;
        if (postNegotiationMessage(b -> rsp.encode(b), NegotiateResponse.SIZE) && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, this + " sent " + rsp);
        }
    }

    private boolean postNegotiationMessage(java.util.function.Consumer<ByteBuffer> encoder, int size) {
        if (phase.compareTo(Phase.TERMINATING) >= 0) {
            return false; // ended meanwhile: its send buffers are gone
        }
        try {
            SendBuffers.Slot slot = sendBuffers.acquire();
            encoder.accept(slot.buffer.duplicate().order(slot.buffer.order()).position(slot.base));
            slot.owner = null;
            slot.sgl[0].set(slot.region, slot.base, size);
            try {
                endpoint.postSend(slot, slot.sgl, 1, size <= inlineThreshold ? RequestFlags.INLINE : 0);
            } catch (RdmaException e) {
                if (e.status() == RdmaStatus.NOT_CONNECTED && endpoint.state() == EndpointState.CONNECTING) {
                    // The peer's message overtook our own established event: post once it arrives.
                    deferredUntilEstablished = () -> {
                        try {
                            endpoint.postSend(slot, slot.sgl, 1, 0);
                        } catch (RdmaException again) {
                            postFailed("negotiation send failed", again);
                        }
                    };
                    return true;
                }
                throw e;
            }
            return true;
        } catch (RdmaException e) {
            postFailed("negotiation send failed", e);
            return false;
        }
    }

    /**
     * MS-SMBD 3.1.5.1 Sending Upper Layer Messages, as the current text has it: credit processing
     * per message; the last send credit is never spent without granting at least one.
     */
    private void sendUpperLayerMessages() {
        if (role != Role.ESTABLISHED) {
            return;
        }
        if (sendQueue.isEmpty() && sendImmediate) {
            emptyMessage.clear();
            emptyMessage.internal = true;
            sendQueue.add(emptyMessage);
        }
        while (!sendQueue.isEmpty() && phase == Phase.ESTABLISHED) {
            OutgoingMessage m = sendQueue.peek();
            if (sendCredits == 0) {
                counters.creditStalls++;
                break;
            }
            SendBuffers.Slot slot;
            try {
                slot = sendBuffers.acquire();
            } catch (RdmaException e) {
                terminate(TerminationReason.LOCAL_RESOURCES, "cannot register send buffers: " + e.getMessage());
                return;
            }
            if (slot == null) {
                break; // every send buffer is in flight; continue when one completes
            }
            // The message's CreditsGranted is zero until now: perform 3.1.5.9.
            manageCreditsPriorToSending(true);
            if (phase != Phase.ESTABLISHED) {
                // Posting the receives failed and ended the connection (its buffers may be gone).
                if (sendBuffers != null) {
                    sendBuffers.release(slot);
                }
                return;
            }
            int granted = Math.min(creditsToGrant, 65535);
            if (sendCredits == 1 && granted == 0) {
                sendBuffers.release(slot);
                counters.creditStalls++;
                break;
            }
            int flags = 0;
            if (keepaliveRequested == KeepaliveRequested.PENDING) {
                flags = Wire.SMB_DIRECT_RESPONSE_REQUESTED;
                keepaliveRequested = KeepaliveRequested.SENT;
                setIdleDeadline(config.keepaliveResponseTimeout().toNanos());
                counters.keepalivesSent++;
            }
            if (!sendDataTransferMessage(m, slot, granted, flags)) {
                return;
            }
            creditsToGrant -= granted;
            peerCredits += granted;
            counters.creditsGranted += granted;
            sendCredits--;
            if (m.fullyPosted()) {
                sendQueue.poll();
            }
            sendImmediate = false;
        }
    }

    /**
     * MS-SMBD 3.1.5.4 Sending a Data Transfer Message: builds and posts the next fragment of
     * {@code m}: DataOffset 24 and DataLength min(remaining, MaxSendSize - 24), or an empty message
     * of exactly 20 bytes; a remote token to invalidate goes with the first fragment only.
     */
    private boolean sendDataTransferMessage(OutgoingMessage m, SendBuffers.Slot slot, int granted, int flags) {
        int dataLength = Math.min(m.length - m.offset, maxSendSize - Wire.DATA_OFFSET);
        int remaining = m.length - m.offset - dataLength;
        int total = DataTransferHeader.encode(slot.buffer, slot.base, sendCreditTarget, granted, flags, remaining,
                dataLength);
        if (dataLength > 0) {
            slot.buffer.put(slot.base + Wire.DATA_OFFSET, m.data, m.start + m.offset, dataLength);
        }
        slot.sgl[0].set(slot.region, slot.base, total);
        slot.owner = m.internal ? null : m;
        slot.dataLength = dataLength;
        int postFlags = total <= inlineThreshold ? RequestFlags.INLINE : 0;
        try {
            if (m.hasToken && !m.started && capabilities.remoteInvalidate()) {
                endpoint.postSendAndInvalidate(slot, slot.sgl, 1, postFlags, m.remoteToken);
            } else {
                endpoint.postSend(slot, slot.sgl, 1, postFlags);
            }
        } catch (RdmaException e) {
            sendBuffers.release(slot);
            postFailed("send failed", e);
            return false;
        }
        if (LOG.isLoggable(TRACE)) {
            // What went on the wire, decoded back from the send buffer.
            LOG.log(TRACE, this + " sent " + new DataTransferHeader().decode(slot.buffer, slot.base, total));
        }
        m.started = true;
        m.offset += dataLength;
        if (!m.internal) {
            m.inFlight++;
        }
        counters.fragmentsSent++;
        return true;
    }

    /** A send completed: free its buffer; complete the upper-layer message after its last fragment. */
    private void sendCompleted(SendBuffers.Slot slot, RdmaStatus status) {
        OutgoingMessage m = slot.owner;
        sendBuffers.release(slot);
        if (status != RdmaStatus.SUCCESS) {
            if (m != null) {
                orphaned.add(m); // failed with the connection's loss reason
            }
            if (status != RdmaStatus.FLUSHED) {
                terminate(TerminationReason.TRANSPORT_ERROR, "SEND completed with " + status + " ("
                        + status.description() + ")");
            }
            return;
        }
        if (m == null) {
            if (pendingNegotiateFailure != null) {
                ConnectionLoss why = pendingNegotiateFailure;
                pendingNegotiateFailure = null;
                terminate(why.reason(), why.detail());
            }
            return;
        }
        if (--m.inFlight == 0 && m.fullyPosted()) {
            counters.messagesSent++;
            counters.bytesSent += m.length;
            m.succeed();
            recycle(m);
        }
    }

    /**
     * MS-SMBD 3.1.5.9 Managing Credits Prior to Sending.
     *
     * @param sendPath {@code true} when called while building a message (credits then travel for
     *        free); {@code false} from the receive path, where new credits cost a message of their
     *        own, so the SHOULD branch waits for the low watermark
     * @return the number of receives newly posted (also added to {@link #creditsToGrant})
     */
    int manageCreditsPriorToSending(boolean sendPath) {
        if (receiveBuffers == null || handingOverBeforeLoss) {
            return 0;
        }
        boolean mustPost = receiveCredits == 0 || (sendCredits == 1 && !sendQueue.isEmpty());
        if (!mustPost && receiveCredits >= receiveCreditTarget) {
            return 0; // sufficient credits are already present
        }
        int want = 0;
        // The receives there are buffers for (growReceiveBuffers adds them as the peer needs them).
        int limit = Math.min(Math.min(receiveCreditTarget, receiveCreditMax), receiveBuffers.capacity());
        if (receiveCreditTarget > receiveCredits && receiveCredits < receiveCreditMax
                && (sendPath || receiveCredits <= limit / 2)) {
            want = limit - receiveCredits;
        }
        if (mustPost) {
            want = Math.max(want, 1);
        }
        int posted;
        try {
            posted = receiveBuffers.post(want);
        } catch (RdmaException e) {
            postFailed("posting receives failed", e);
            return 0;
        }
        receiveCredits += posted;
        creditsToGrant += posted;
        return posted;
    }

    /**
     * ReceiveCreditMax is a ceiling, not a reservation: a connection starts with {@link
     * #INITIAL_RECEIVE_BUFFERS} receive buffers and doubles them when its peer asks for more credits
     * than there are buffers and has used half of them within {@link #RECEIVE_GROWTH_WINDOW_NANOS}
     * (more than 1,600 messages a second with the initial 32). Idle and quiet connections stay
     * small; a busy peer reaches the full window within a few hundred messages. Memory that cannot
     * be had leaves the connection as it is. Called for every Data Transfer message received.
     */
    private void growReceiveBuffers() {
        if (handingOverBeforeLoss) {
            return;
        }
        int capacity = receiveBuffers.capacity();
        if (++receivedSinceGrowthCheck < Math.max(1, capacity / 2)) {
            return;
        }
        receivedSinceGrowthCheck = 0;
        long now = scheduler.nanoTime();
        boolean busy = now - lastGrowthCheckNanos < RECEIVE_GROWTH_WINDOW_NANOS;
        lastGrowthCheckNanos = now;
        if (!busy || capacity >= Math.min(receiveCreditTarget, receiveBuffers.max()) || receiveGrowthFailed) {
            return;
        }
        try {
            receiveBuffers.grow(capacity);
        } catch (RdmaException e) {
            receiveGrowthFailed = true;
            LOG.log(System.Logger.Level.DEBUG, () -> this + ": receive buffers stay at " + capacity + ": "
                    + e.getMessage());
        }
    }

    // ================================================================ 3.1.6 timers

    /** MS-SMBD 3.1.6.1 Negotiation Timer. */
    private void negotiationTimerExpired() {
        if (role != Role.ESTABLISHED && phase.compareTo(Phase.TERMINATING) < 0) {
            terminate(TerminationReason.NEGOTIATION_TIMEOUT, "no negotiation within "
                    + (initiator ? config.activeNegotiationTimeout() : config.passiveNegotiationTimeout()).toSeconds()
                    + " s (" + role + ")");
        }
    }

    private void cancelNegotiationTimer() {
        if (negotiationTimer != null) {
            negotiationTimer.cancel();
            negotiationTimer = null;
        }
    }

    /**
     * Sets the Idle Connection Timer to expire {@code delayNanos} from now. The scheduled check is
     * moved only when the deadline comes earlier; a later deadline is noticed when the check runs,
     * so that retriggering on every message costs no timer operation.
     */
    private void setIdleDeadline(long delayNanos) {
        long now = scheduler.nanoTime();
        idleDeadline = now + delayNanos;
        if (idleTimer == null || idleTimerAt - idleDeadline > 0) {
            if (idleTimer != null) {
                idleTimer.cancel();
            }
            scheduleIdleCheck(delayNanos);
        }
    }

    private void scheduleIdleCheck(long delayNanos) {
        idleTimerAt = scheduler.nanoTime() + delayNanos;
        idleTimer = scheduler.schedule(() -> {
            idleTimerFired = true;
            signal();
        }, delayNanos);
    }

    private void onIdleTimer() {
        idleTimer = null;
        if (phase != Phase.ESTABLISHED) {
            return;
        }
        long left = idleDeadline - scheduler.nanoTime();
        if (left > 0) {
            scheduleIdleCheck(left);
            return;
        }
        idleConnectionTimerExpired();
    }

    /** MS-SMBD 3.1.6.2 Idle Connection Timer. */
    private void idleConnectionTimerExpired() {
        if (keepaliveRequested != KeepaliveRequested.NONE) {
            terminate(TerminationReason.KEEPALIVE_TIMEOUT, "no message from the peer within "
                    + config.keepaliveResponseTimeout().toSeconds() + " s of a keepalive (KeepaliveRequested "
                    + keepaliveRequested + ")");
            return;
        }
        keepaliveRequested = KeepaliveRequested.PENDING;
        sendImmediate = true;
        // Should the keepalive wait for a credit, the peer has the same time to answer as if sent.
        setIdleDeadline(config.keepaliveResponseTimeout().toNanos());
        // An idle connection keeps no reassembly buffer.
        if (fragmentReassemblyRemaining == 0) {
            fragmentReassemblyBuffer = null;
            reassemblyView = null;
        }
    }

    // ================================================================ 3.1.7.1 connection loss

    /**
     * Ends the connection: the receiver "MUST terminate the connection" of 3.1.5.6 - 3.1.5.8 and
     * the timers of 3.1.6. The RDMA connection is disconnected; the provider's disconnect event
     * then completes {@link #connectionLoss()}. The first reason recorded is the one reported.
     */
    void terminate(TerminationReason reason, String detail) {
        if (phase.compareTo(Phase.TERMINATING) >= 0) {
            return;
        }
        recordLoss(lossFor(reason, detail));
        LOG.log(isFailure(loss.reason()) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                () -> this + " terminating: " + loss.message());
        phase = Phase.TERMINATING;
        cancelTimers();
        if (endpoint == null || endpoint.state() == EndpointState.IDLE
                || endpoint.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            connectionLoss();
            return;
        }
        endpoint.disconnect();
        // The provider promises a terminal event; should it never come, do not hang.
        terminationTimer = scheduler.schedule(() -> execute(this::connectionLoss),
                config.keepaliveResponseTimeout().toNanos());
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
     * The provider carrying this connection is going away (its service is being unregistered, before
     * it closes): whatever ends the connection from now on is reported as {@link
     * TerminationReason#PROVIDER_STOPPED}. Safe from any thread; the caller then terminates it.
     *
     * @param detail which provider
     */
    void providerStopping(String detail) {
        providerStopped = detail;
    }

    /**
     * The loss to report. Once the provider is going away, whatever its closing makes fail first
     * (a post on a closed endpoint, the disconnect event) is reported as the provider stopping,
     * which is the cause the upper layer needs to know.
     */
    private ConnectionLoss lossFor(TerminationReason reason, String detail) {
        String stopped = providerStopped;
        if (stopped != null && reason != TerminationReason.PROVIDER_STOPPED) {
            return new ConnectionLoss(TerminationReason.PROVIDER_STOPPED,
                    stopped + " (" + reason + ": " + detail + ")");
        }
        return new ConnectionLoss(reason, detail);
    }

    /**
     * MS-SMBD 3.1.7.1 Connection Loss: the upper layer is notified, then the endpoint and the
     * Connection are terminated, releasing every buffer and registration.
     */
    private void connectionLoss() {
        if (phase == Phase.CLOSED) {
            return;
        }
        closedBy = Thread.currentThread().getName();
        boolean wasEstablished = parameters != null;
        phase = Phase.CLOSED;
        cancelTimers();
        if (terminationTimer != null) {
            terminationTimer.cancel();
        }
        if (closeTimer != null) {
            closeTimer.cancel();
        }
        ConnectionLoss why = loss != null ? loss
                : recordLoss(lossFor(TerminationReason.PEER_DISCONNECTED, "RDMA connection ended"));
        ConnectionLostException failure = new ConnectionLostException(why);
        // Every message not yet completed: queued, partly posted, or with fragments in flight.
        List<OutgoingMessage> failed = new ArrayList<>(sendQueue);
        sendQueue.clear();
        failed.addAll(orphaned);
        orphaned.clear();
        if (sendBuffers != null) {
            sendBuffers.collectOwners(failed);
        }
        synchronized (inboxLock) {
            sendsClosed = true;
            failed.addAll(inbox);
            inbox.clear();
        }
        for (OutgoingMessage m : failed) {
            if (!m.internal) {
                m.fail(failure);
            }
        }
        for (RdmaTransfer t : new ArrayList<>(rdmaActive)) {
            t.future.completeExceptionally(failure);
        }
        rdmaActive.clear();
        rdmaQueue.clear();
        for (RegisteredBufferImpl rb : registrations.values()) {
            // The endpoint's close releases the regions; a later deregister() finds nothing to do.
            rb.take(null);
            if (rb.uncount()) {
                registrationsLive.decrementAndGet();
            }
        }
        // Gone before the upper layer is told (ConnectionHandler.onConnectionLost promises it).
        registrations.clear();
        connectFuture.completeExceptionally(failure);
        transport.connectionEnded(this, why, wasEstablished);
        ConnectionHandler h = handler;
        if (h != null && delivered) {
            try {
                h.onConnectionLost(this, why);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, this + ": connection-loss handler failed", e);
            }
        }
        if (endpoint != null) {
            endpoint.close();
        }
        if (cq != null) {
            try {
                cq.close();
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> this + ": completion queue close: " + e.getMessage());
            }
        }
        sendBuffers = null;
        receiveBuffers = null;
        fragmentReassemblyBuffer = null;
        closeFuture.complete(null);
    }

    private void cancelTimers() {
        cancelNegotiationTimer();
        if (idleTimer != null) {
            idleTimer.cancel();
            idleTimer = null;
        }
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

    // ================================================================ upper-layer API: 3.1.4.2 send

    @Override
    public CompletionStage<Void> send(ByteBuffer message) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        enqueue(message, false, 0, f, null, null);
        return f;
    }

    @Override
    public CompletionStage<Void> sendAndInvalidate(ByteBuffer message, int remoteToken) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        enqueue(message, true, remoteToken, f, null, null);
        return f;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A> void send(ByteBuffer message, A attachment, CompletionHandler<Void, ? super A> handler) {
        enqueue(message, false, 0, null, (CompletionHandler<Void, Object>) handler, attachment);
    }

    @Override
    public void sendAndWait(ByteBuffer message, Duration timeout) throws SmbDirectException, InterruptedException {
        refuseOnEngineThread("sendAndWait");
        await(send(message).toCompletableFuture(), timeout, "send");
    }

    /** MS-SMBD 3.1.4.2 Send Message: check the length, then queue for 3.1.5.1. */
    private void enqueue(ByteBuffer message, boolean hasToken, int token, CompletableFuture<Void> future,
            CompletionHandler<Void, Object> h, Object attachment) {
        int length = message.remaining();
        if (length == 0 && !hasToken) {
            // A Data Transfer message with DataLength 0 reaches no upper layer (3.1.5.8 delivers
            // data only): the peer would drop it without a trace.
            throw new IllegalArgumentException("an empty message cannot be sent: the peer's SMB Direct layer "
                    + "hands only data to its upper layer (MS-SMBD 3.1.4.2, 3.1.5.8)");
        }
        ConnectionParameters p = parameters;
        if (p != null && length > p.maxFragmentedSendSize()) {
            throw new IllegalArgumentException("message of " + length + " bytes exceeds MaxFragmentedSendSize "
                    + p.maxFragmentedSendSize() + " (MS-SMBD 3.1.4.2)");
        }
        ConnectionLoss lost;
        synchronized (inboxLock) {
            lost = loss;
            if (!sendsClosed && lost == null) {
                if (pendingSends >= config.maxPendingSends()) {
                    throw new IllegalStateException(pendingSends + " messages are already waiting to be sent on "
                            + this + " (maxPendingSends " + config.maxPendingSends() + ")");
                }
                OutgoingMessage m = pool.poll();
                if (m == null) {
                    m = new OutgoingMessage();
                }
                m.data = message;
                m.start = message.position();
                m.length = length;
                m.hasToken = hasToken;
                m.remoteToken = token;
                m.future = future;
                m.handler = h;
                m.attachment = attachment;
                pendingSends++;
                inbox.add(m);
            } else if (lost == null) {
                lost = new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "the connection is closing");
            }
        }
        if (lost != null) {
            ConnectionLostException e = new ConnectionLostException(lost);
            if (future != null) {
                future.completeExceptionally(e);
            } else {
                h.failed(e, attachment);
            }
            return;
        }
        signal();
    }

    private void drainInbox() {
        synchronized (inboxLock) {
            OutgoingMessage m;
            if (!inbox.isEmpty() && sendQueue.peek() == emptyMessage && !emptyMessage.started) {
                // An upper-layer message carries the credits or keepalive answer just as well.
                sendQueue.poll();
            }
            while ((m = inbox.poll()) != null) {
                sendQueue.add(m);
            }
        }
    }

    private void recycle(OutgoingMessage m) {
        m.clear();
        synchronized (inboxLock) {
            pendingSends--;
            pool.push(m);
        }
    }

    // ================================================================ 3.1.4.3 / 3.1.4.4 registration

    /** MS-SMBD 3.1.4.3 Register Buffer. */
    @Override
    public RegisteredBuffer register(ByteBuffer buffer, RemoteAccess access) throws SmbDirectException {
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException("only a direct buffer can be registered (the memory must not move)");
        }
        if (!buffer.hasRemaining()) {
            throw new IllegalArgumentException("the buffer has no bytes between position and limit");
        }
        if (access.allowsWrite() && buffer.isReadOnly()) {
            throw new IllegalArgumentException("a read-only buffer cannot be registered for RDMA Write");
        }
        checkOpen();
        int rights = (access.allowsRead() ? Access.REMOTE_READ : 0)
                | (access.allowsWrite() ? Access.REMOTE_WRITE | Access.LOCAL_WRITE : 0);
        int chunk = (int) Math.min(capabilities.maxRegionSize(), Integer.MAX_VALUE);
        List<MemoryRegion> regions = new ArrayList<>();
        try {
            for (ByteBuffer part : RdmaTransfer.chunks(buffer, chunk)) {
                regions.add(endpoint.register(part, rights));
            }
        } catch (RdmaException e) {
            // The memory SHOULD NOT remain enabled for remote access after a failure.
            for (MemoryRegion r : regions) {
                try {
                    endpoint.deregister(r);
                } catch (RdmaException ignored) {
                    // gone with the endpoint
                }
            }
            throw providerFailure("registration failed", e);
        }
        RegisteredBufferImpl rb = new RegisteredBufferImpl(this, access, regions);
        // Counted before it becomes visible to connectionLoss(), which uncounts what it finds.
        rb.count();
        registrationsLive.incrementAndGet();
        for (MemoryRegion r : regions) {
            registrations.put(r.token(), rb);
        }
        if (loss != null) {
            deregisterRegions(rb, null);
            throw new ConnectionLostException(loss);
        }
        return rb;
    }

    /** MS-SMBD 3.1.4.4 Deregister Buffer. */
    @Override
    public void deregister(List<BufferDescriptorV1> descriptors) throws SmbDirectException {
        Map<RegisteredBufferImpl, List<MemoryRegion>> byBuffer = new java.util.LinkedHashMap<>();
        for (BufferDescriptorV1 d : descriptors) {
            RegisteredBufferImpl rb = registrations.get(d.token());
            MemoryRegion r = rb == null ? null : rb.regionFor(d);
            if (r == null) {
                throw new IllegalArgumentException(d + " was not registered on " + this);
            }
            byBuffer.computeIfAbsent(rb, k -> new ArrayList<>()).add(r);
        }
        SmbDirectException first = null;
        for (Map.Entry<RegisteredBufferImpl, List<MemoryRegion>> e : byBuffer.entrySet()) {
            try {
                deregisterRegions(e.getKey(), e.getValue());
            } catch (SmbDirectException ex) {
                first = first == null ? ex : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Deregisters some (or all, when {@code which} is null) regions of a registered buffer. */
    void deregisterRegions(RegisteredBufferImpl rb, List<MemoryRegion> which) throws SmbDirectException {
        List<MemoryRegion> regions = rb.take(which);
        RdmaException first = null;
        for (MemoryRegion r : regions) {
            registrations.remove(r.token(), rb);
            try {
                endpoint.deregister(r);
            } catch (RdmaException e) {
                // After connection loss the endpoint's close already released every region.
                if (loss == null && first == null) {
                    first = e;
                }
            }
        }
        if (rb.fullyDeregistered() && rb.uncount()) {
            registrationsLive.decrementAndGet();
        }
        if (first != null) {
            SmbDirectException failure = providerFailure("deregistration failed", first);
            // Once the connection has ended, even underneath, the endpoint's close releases the
            // regions: deregistering is as harmless as after the loss.
            if (!(failure instanceof ConnectionLostException)) {
                throw failure;
            }
        }
    }

    // ================================================================ 3.1.4.5 / 3.1.4.6 RDMA

    /** MS-SMBD 3.1.4.5 RDMA Write to Peer Buffer. */
    @Override
    public CompletionStage<Void> rdmaWrite(ByteBuffer source, List<BufferDescriptorV1> remote, long offset) {
        return rdma(false, source, remote, offset);
    }

    /** MS-SMBD 3.1.4.6 RDMA Read from Peer Buffer. */
    @Override
    public CompletionStage<Void> rdmaRead(ByteBuffer destination, List<BufferDescriptorV1> remote, long offset) {
        if (destination.isReadOnly()) {
            throw new IllegalArgumentException("an RDMA Read needs a writable destination");
        }
        if (!capabilities.rdmaRead()) {
            return CompletableFuture.failedFuture(new SmbDirectException(
                    "the RDMA provider " + provider.type() + "/" + provider.name() + " cannot RDMA Read"));
        }
        return rdma(true, destination, remote, offset);
    }

    private CompletionStage<Void> rdma(boolean read, ByteBuffer local, List<BufferDescriptorV1> remote, long offset) {
        if (!local.isDirect()) {
            throw new IllegalArgumentException("RDMA needs a direct local buffer");
        }
        ConnectionParameters p = parameters;
        int length = local.remaining();
        if (p != null && length > p.maxReadWriteSize()) {
            throw new IllegalArgumentException("RDMA of " + length + " bytes exceeds MaxReadWriteSize "
                    + p.maxReadWriteSize());
        }
        List<BufferDescriptorV1> ranges = RdmaTransfer.peerRanges(remote, offset, length);
        if (loss != null) {
            return CompletableFuture.failedFuture(new ConnectionLostException(loss));
        }
        if (length == 0) {
            return CompletableFuture.completedFuture(null);
        }
        int chunk = (int) Math.min(capabilities.maxRegionSize(), Integer.MAX_VALUE);
        List<MemoryRegion> regions = new ArrayList<>();
        try {
            for (ByteBuffer part : RdmaTransfer.chunks(local, chunk)) {
                regions.add(endpoint.register(part, read ? Access.LOCAL_WRITE : 0));
            }
        } catch (RdmaException e) {
            for (MemoryRegion r : regions) {
                try {
                    endpoint.deregister(r);
                } catch (RdmaException ignored) {
                    // gone with the endpoint
                }
            }
            return CompletableFuture.failedFuture(providerFailure("registering the local buffer failed", e));
        }
        RdmaTransfer t = RdmaTransfer.plan(read, regions, chunk, ranges);
        execute(() -> {
            if (phase != Phase.ESTABLISHED) {
                releaseTransfer(t);
                t.future.completeExceptionally(new ConnectionLostException(loss != null ? loss
                        : new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "connection not established")));
                return;
            }
            rdmaActive.add(t);
            rdmaQueue.add(t);
        });
        return t.future;
    }

    /** Posts queued RDMA work while the send queue, and for reads the ORD, allow. */
    private void pumpRdma() {
        while (!rdmaQueue.isEmpty() && rdmaInFlight < RDMA_DEPTH) {
            RdmaTransfer t = rdmaQueue.peek();
            if (t.read && readsInFlight >= ordLimit) {
                break;
            }
            RdmaTransfer.Segment s = t.segments.get(t.nextToPost);
            try {
                if (t.read) {
                    endpoint.postRead(s, s.sgl, 1, s.remoteOffset, s.remoteToken, 0);
                    readsInFlight++;
                } else {
                    endpoint.postWrite(s, s.sgl, 1, s.remoteOffset, s.remoteToken, 0);
                }
            } catch (RdmaException e) {
                postFailed(t.read ? "RDMA Read failed" : "RDMA Write failed", e);
                return;
            }
            rdmaInFlight++;
            t.nextToPost++;
            if (t.allPosted()) {
                rdmaQueue.poll();
            }
        }
    }

    private void rdmaSegmentCompleted(RdmaTransfer.Segment s, CompletionResult r) {
        RdmaTransfer t = s.transfer;
        rdmaInFlight--;
        if (t.read) {
            readsInFlight--;
        }
        if (r.status() != RdmaStatus.SUCCESS) {
            failed(r);
            return;
        }
        if (t.read) {
            counters.rdmaReads++;
            counters.rdmaReadBytes += s.length;
        } else {
            counters.rdmaWrites++;
            counters.rdmaWriteBytes += s.length;
        }
        if (++t.completed == t.segments.size()) {
            rdmaActive.remove(t);
            releaseTransfer(t);
            t.future.complete(null);
        }
    }

    private void releaseTransfer(RdmaTransfer t) {
        for (MemoryRegion r : t.localRegions) {
            try {
                endpoint.deregister(r);
            } catch (RdmaException e) {
                // gone with the endpoint
            }
        }
    }

    // ================================================================ 3.1.4.7 and the rest of the API

    /** MS-SMBD 3.1.4.7 Query Connection Parameters. */
    @Override
    public ConnectionParameters parameters() {
        return parameters;
    }

    @Override
    public ConnectionStatistics statistics() {
        return counters.snapshot(registrationsLive.get(), sendCredits, receiveCredits);
    }

    ConnectionCounters.Snapshot finalCounters() {
        return counters.snapshot(0, 0, 0);
    }

    @Override
    public InetSocketAddress localAddress() {
        Endpoint ep = endpoint;
        return ep == null ? null : ep.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public boolean isOpen() {
        return loss == null;
    }

    @Override
    public Optional<ConnectionLoss> loss() {
        return Optional.ofNullable(loss);
    }

    @Override
    public CompletionStage<Void> closeAsync() {
        execute(() -> {
            if (phase == Phase.ESTABLISHED && !closing) {
                closing = true;
                synchronized (inboxLock) {
                    sendsClosed = true;
                }
                closeTimer = scheduler.schedule(() -> execute(() -> terminate(TerminationReason.LOCAL_CLOSE,
                        "closed before every queued message was sent")), config.keepaliveResponseTimeout().toNanos());
                checkGracefulClose();
            } else if (phase.compareTo(Phase.ESTABLISHED) < 0) {
                terminate(TerminationReason.LOCAL_CLOSE, "closed while connecting");
            }
        });
        return closeFuture;
    }

    /** Ends the connection at once with the given reason (transport shutdown). */
    CompletableFuture<Void> closeAsyncNow(TerminationReason reason, String detail) {
        execute(() -> terminate(reason, detail));
        return closeFuture;
    }

    /** Disconnects once every message accepted before the close has been sent. */
    private void checkGracefulClose() {
        boolean idle;
        synchronized (inboxLock) {
            idle = inbox.isEmpty();
        }
        if (idle && sendQueue.isEmpty() && (sendBuffers == null || sendBuffers.allFree()) && rdmaActive.isEmpty()) {
            terminate(TerminationReason.LOCAL_CLOSE, "closed by the upper layer");
        }
    }

    @Override
    public void close() {
        CompletableFuture<Void> f = closeAsync().toCompletableFuture();
        if (Thread.currentThread() instanceof EventLoopGroup.EngineThread) {
            return; // cannot wait on our own thread; the close proceeds asynchronously
        }
        try {
            f.get(config.keepaliveResponseTimeout().toMillis() * 2 + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, this + ": close did not complete: " + e);
        }
    }

    private void checkOpen() throws ConnectionLostException {
        ConnectionLoss l = loss;
        if (l != null) {
            throw new ConnectionLostException(l);
        }
    }

    /**
     * A provider call failed. When the RDMA connection has already ended under the connection
     * (its endpoint is no longer connected; the provider's event is on its way, not yet
     * processed), the connection is lost (MS-SMBD 3.1.7.1): the failure says so, with the loss
     * the connection will report, rather than as a refusal that an upper layer takes for a lack
     * of resources.
     */
    private SmbDirectException providerFailure(String what, RdmaException e) {
        ConnectionLoss l = loss;
        Endpoint ep = endpoint;
        if (l == null && ep != null && ep.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            // what the disconnect event will record (rdmaConnectionEnded); the first loss recorded stands
            l = recordLoss(lossFor(closing ? TerminationReason.LOCAL_CLOSE : TerminationReason.PEER_DISCONNECTED,
                    "RDMA connection disconnected"));
        }
        return l != null ? new ConnectionLostException(l) : new SmbDirectException(what + ": " + e.getMessage(), e);
    }

    /**
     * Records why the connection ended unless a reason is recorded already: the first one
     * recorded is the one reported, whichever thread recorded it.
     *
     * @return the recorded loss
     */
    private ConnectionLoss recordLoss(ConnectionLoss l) {
        LOSS.compareAndSet(this, null, l);
        return loss;
    }

    static void refuseOnEngineThread(String call) {
        if (Thread.currentThread() instanceof EventLoopGroup.EngineThread) {
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

    private static int minUnsigned(int local, int received) {
        return Integer.compareUnsigned(local, received) <= 0 ? local : received;
    }

    int irdInUse() {
        return irdInUse;
    }

    int ordInUse() {
        return ordInUse;
    }

    /** Package-private for tests: RDMA Reads this side may have outstanding; actor only. */
    int ordLimit() {
        return ordLimit;
    }

    boolean isInitiator() {
        return initiator;
    }

    SmbDirectConfig config() {
        return config;
    }

    @Override
    public String toString() {
        return "SmbDirectConnection#" + id + "[" + (initiator ? "to " : "from ") + remote + "]";
    }

    /** The negotiated parameters, fixed at establishment (3.1.4.7). */
    private static final class Parameters implements ConnectionParameters {
        private final int maxSendSize;
        private final int maxFragmentedSendSize;
        private final int maxReceiveSize;
        private final int maxFragmentedRecvSize;
        private final int maxReadWriteSize;
        private final Duration keepaliveInterval;
        private final int protocol;
        private final int receiveCreditMax;
        private final int sendCreditTarget;
        private final int ird;
        private final int ord;
        private final boolean initiator;
        private final boolean rdmaRead;
        private final boolean remoteInvalidate;
        private final String provider;
        private final String transport;

        Parameters(Connection c) {
            maxSendSize = c.maxSendSize;
            maxFragmentedSendSize = c.maxFragmentedSendSize;
            maxReceiveSize = c.maxReceiveSize;
            maxFragmentedRecvSize = c.maxFragmentedRecvSize;
            maxReadWriteSize = c.maxReadWriteSize;
            keepaliveInterval = Duration.ofNanos(c.keepaliveInterval);
            protocol = c.protocol;
            receiveCreditMax = c.receiveCreditMax;
            sendCreditTarget = c.sendCreditTarget;
            ird = c.irdInUse;
            ord = c.ordInUse;
            initiator = c.initiator;
            rdmaRead = c.capabilities.rdmaRead();
            remoteInvalidate = c.capabilities.remoteInvalidate();
            provider = c.provider.type() + "/" + c.provider.name();
            transport = c.capabilities.transportType().displayName();
        }

        @Override
        public String transport() {
            return transport;
        }

        @Override
        public int maxSendSize() {
            return maxSendSize;
        }

        @Override
        public int maxFragmentedSendSize() {
            return maxFragmentedSendSize;
        }

        @Override
        public int maxReceiveSize() {
            return maxReceiveSize;
        }

        @Override
        public int maxFragmentedRecvSize() {
            return maxFragmentedRecvSize;
        }

        @Override
        public int maxReadWriteSize() {
            return maxReadWriteSize;
        }

        @Override
        public Duration keepaliveInterval() {
            return keepaliveInterval;
        }

        @Override
        public int protocolVersion() {
            return protocol;
        }

        @Override
        public int receiveCreditMax() {
            return receiveCreditMax;
        }

        @Override
        public int sendCreditTarget() {
            return sendCreditTarget;
        }

        @Override
        public int ird() {
            return ird;
        }

        @Override
        public int ord() {
            return ord;
        }

        @Override
        public boolean initiator() {
            return initiator;
        }

        @Override
        public boolean rdmaRead() {
            return rdmaRead;
        }

        @Override
        public boolean remoteInvalidate() {
            return remoteInvalidate;
        }

        @Override
        public String provider() {
            return provider;
        }

        @Override
        public String toString() {
            return String.format("MaxSendSize=%d MaxReceiveSize=%d MaxFragmentedSendSize=%d MaxFragmentedRecvSize=%d "
                    + "MaxReadWriteSize=%d KeepaliveInterval=%ds Protocol=0x%04X ReceiveCreditMax=%d "
                    + "SendCreditTarget=%d IRD=%d ORD=%d provider=%s", maxSendSize, maxReceiveSize,
                    maxFragmentedSendSize, maxFragmentedRecvSize, maxReadWriteSize, keepaliveInterval.toSeconds(),
                    protocol, receiveCreditMax, sendCreditTarget, ird, ord, provider);
        }
    }
}
