package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
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
import org.smbdirect.bulk.NoBuffersException;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * One session of the sockets-direct session protocol over one SMB Direct connection: both the
 * sending half (the application's sends, in order, inline or by RDMA) and the receiving half
 * (the peer's sends, delivered in order).
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
    private final Allocator allocator;
    private final BulkAcceptHandler acceptHandler;
    private volatile BulkHandler handler;
    private final CompletableFuture<BulkSession> opened = new CompletableFuture<>();
    private final CompletableFuture<Void> closed = new CompletableFuture<>();
    private final Object lock = new Object();
    private final SendCompletion sendCompletion = new SendCompletion();
    /**
     * Marks the threads the transport runs this layer's callbacks on (its engine threads): a
     * blocking call there could wait for work only that thread can do.
     */
    private static final ThreadLocal<Boolean> ENGINE_THREAD = new ThreadLocal<>();

    // ------------------------------------------------------------ guarded by lock
    /** Written under the lock; volatile for {@link #toString()}. */
    private volatile SmbDirectConnection connection;
    private Hello local;
    private Hello peer;
    private boolean ready;
    private boolean abandoned;
    private boolean closing;
    private boolean disconnecting;
    private ConnectionLoss ended;
    // fixed once both HELLOs are known
    private boolean useRead;
    private int rdmaChunk;
    private int inlineLimit;
    private int firstPartRead;
    private int firstPartWrite;
    private int maxControlMessage;
    private int sendLimit;
    // the sending half
    private final ArrayDeque<OutgoingSend> waiting = new ArrayDeque<>();
    /** Large sends started and not finished, by sequence. */
    private final TreeMap<Long, OutgoingSend> large = new TreeMap<>();
    /** Every started send not finished, inline ones included. */
    private final Set<OutgoingSend> unfinished = new LinkedHashSet<>();
    private long nextSequence = 1;
    private final ArrayDeque<Outbound> outbox = new ArrayDeque<>();
    private int handed;
    // the receiving half
    private long expectedSequence = 1;
    /** The peer's sends not yet delivered, in sequence order; the head is never READY for long. */
    private final ArrayDeque<IncomingTransfer> undelivered = new ArrayDeque<>();
    /** The peer's large sends not yet READY or SKIPPED, by sequence. */
    private final Map<Long, IncomingTransfer> incoming = new HashMap<>();
    private final ArrayDeque<IncomingTransfer> incomingQueued = new ArrayDeque<>();
    private int incomingMoving;
    // counters
    private long inlineSends;
    private long readTransfers;
    private long writeTransfers;
    private long bytesSent;
    private long bytesReceived;
    private long noBuffers;
    private int inFlightHighWater;

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
        this.allocator = allocator;
        this.handler = handler;
        this.acceptHandler = acceptHandler;
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
        // The original: the path "depends on whether the service provider supports WSPRdmaRead";
        // this side must also be able to register memory for the peer to read.
        useRead = peer.canRdmaRead && p.rdmaRead();
        rdmaChunk = Math.max(0, Math.min(p.maxReadWriteSize(), peer.maxReadWriteSize));
        maxControlMessage = p.maxFragmentedSendSize();
        inlineLimit = clamp(maxControlMessage - ControlMessage.HEADER_SIZE, 0, config.inlineThreshold());
        // The first part of a large send fills what is left of one SMB Direct message (MaxSendSize
        // less the 24-byte Data Transfer header, MS-SMBD 2.2.3) after the header and one descriptor.
        int fragment = p.maxSendSize() - 24 - ControlMessage.HEADER_SIZE;
        firstPartWrite = clamp(fragment, 0, inlineLimit);
        firstPartRead = clamp(fragment - BufferDescriptorV1.SIZE, 0, inlineLimit);
        sendLimit = Math.min(config.maxMessageSize(), peer.maxMessageSize);
        ready = true;
        LOG.log(System.Logger.Level.DEBUG, () -> this + " open: local " + local + ", peer " + peer + ", path "
                + (useRead ? "READ" : "WRITE") + ", inline up to " + inlineLimit + " bytes, RDMA in " + rdmaChunk
                + "-byte operations");
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
            if (ready && length > sendLimit) {
                throw new IllegalArgumentException("a send of " + length + " bytes exceeds the " + sendLimit
                        + " bytes the peer accepts (its maxMessageSize)");
            }
            if (waiting.size() >= config.maxQueuedSends()) {
                throw new IllegalStateException(waiting.size() + " sends already wait on " + this
                        + " (maxQueuedSends " + config.maxQueuedSends() + ")");
            }
            waiting.add(s);
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
            return useRead;
        }
    }

    @Override
    public BulkStatistics statistics() {
        synchronized (lock) {
            return new Statistics(inlineSends, readTransfers, writeTransfers, bytesSent, bytesReceived, noBuffers,
                    large.size());
        }
    }

    /** The most large sends this session had moving at once (for tests of pipelining). */
    int inFlightHighWater() {
        synchronized (lock) {
            return inFlightHighWater;
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
                receiveDataLocked(m, a);
                break;
            case READ_REQUEST:
            case WRITE_REQUEST:
                receiveRequestLocked(m, a);
                break;
            case TARGET:
                receiveTargetLocked(m, a);
                break;
            case COMPLETE:
                if (m.fromSender()) {
                    receiveWriteCompleteLocked(m, a);
                } else {
                    receiveReadCompleteLocked(m, a);
                }
                break;
            case NOBUFS:
                if (m.fromSender()) {
                    receiveSenderNoBuffersLocked(m, a);
                } else {
                    receiveReceiverNoBuffersLocked(m, a);
                }
                break;
            default:
                throw new MalformedMessageException("unexpected " + m.type);
        }
    }

    // ================================================================ the sending half

    /** Starts waiting sends while order, the in-flight limit and the peer's window allow. */
    private void startSendsLocked(Actions a) {
        if (!ready || ended != null) {
            return;
        }
        while (!waiting.isEmpty()) {
            OutgoingSend s = waiting.peek();
            if (!large.isEmpty() && nextSequence - large.firstKey() >= peer.receiveWindow) {
                break; // the peer holds at most its window beyond its oldest incomplete send
            }
            if (s.length <= inlineLimit) {
                waiting.poll();
                startInlineLocked(s);
                continue;
            }
            if (large.size() >= config.maxInFlight()) {
                break;
            }
            waiting.poll();
            if (rdmaChunk == 0) {
                failLocally(s, new SmbDirectException("a send of " + s.length + " bytes needs RDMA, but the "
                        + "connection's MaxReadWriteSize is 0"), a);
            } else if (useRead) {
                startReadLocked(s, a);
            } else {
                startWriteLocked(s);
            }
        }
    }

    /** Small data travels in one control message. */
    private void startInlineLocked(OutgoingSend s) {
        s.path = OutgoingSend.Path.INLINE;
        s.sequence = nextSequence++;
        s.state = OutgoingSend.State.SENDING;
        unfinished.add(s);
        outbox.add(new Outbound(ControlMessage.encode(Type.DATA, 0, s.sequence, s.length, List.of(), s.data), s));
    }

    /**
     * Large data, peer can RDMA Read: the first part inline, the rest registered for read access
     * and described in the request; the receiver reads it and answers COMPLETE.
     */
    private void startReadLocked(OutgoingSend s, Actions a) {
        int first = firstPartRead;
        int rest = s.length - first;
        ByteBuffer source;
        try {
            source = directPart(s, first, rest);
        } catch (OutOfMemoryError e) {
            failLocally(s, new NoBuffersException("cannot allocate " + rest + " bytes of direct memory for the send: "
                    + e.getMessage()), a);
            return;
        }
        RegisteredBuffer registration;
        try {
            registration = connection.register(source, RemoteAccess.READ);
        } catch (ConnectionLostException e) {
            failLocally(s, e, a);
            return;
        } catch (SmbDirectException e) {
            failLocally(s, new NoBuffersException("cannot register the send's " + rest + " bytes for RDMA Read: "
                    + e.getMessage(), e), a);
            return;
        }
        int count = registration.descriptors().size();
        if (count > ControlMessage.MAX_DESCRIPTORS || ControlMessage.size(count, first) > maxControlMessage) {
            a.add(registration::close);
            failLocally(s, new NoBuffersException("the send's memory needs " + count
                    + " descriptors, more than one control message of at most " + maxControlMessage + " bytes carries"),
                    a);
            return;
        }
        s.path = OutgoingSend.Path.READ;
        s.firstPart = first;
        s.registration = registration;
        startLargeLocked(s, OutgoingSend.State.AWAIT_COMPLETE);
        outbox.add(new Outbound(ControlMessage.encode(Type.READ_REQUEST, 0, s.sequence, s.length,
                registration.descriptors(), s.data.slice(s.data.position(), first)), null));
    }

    /**
     * Large data, peer cannot RDMA Read: the first part inline with the total; the receiver
     * registers a buffer and names it in TARGET.
     */
    private void startWriteLocked(OutgoingSend s) {
        s.path = OutgoingSend.Path.WRITE;
        s.firstPart = firstPartWrite;
        startLargeLocked(s, OutgoingSend.State.AWAIT_TARGET);
        outbox.add(new Outbound(ControlMessage.encode(Type.WRITE_REQUEST, 0, s.sequence, s.length, List.of(),
                s.data.slice(s.data.position(), s.firstPart)), null));
    }

    private void startLargeLocked(OutgoingSend s, OutgoingSend.State state) {
        s.sequence = nextSequence++;
        s.state = state;
        large.put(s.sequence, s);
        unfinished.add(s);
        inFlightHighWater = Math.max(inFlightHighWater, large.size());
    }

    /** The bytes {@code [first, first + n)} of the send in direct memory: the send's own, or a copy. */
    private ByteBuffer directPart(OutgoingSend s, int first, int n) {
        int at = s.data.position() + first;
        if (s.data.isDirect()) {
            return s.data.slice(at, n);
        }
        // "temporary memory" of the original: RDMA needs memory that does not move
        ByteBuffer copy = allocator.allocate(n);
        copy.put(0, s.data, at, n);
        return copy;
    }

    /** TARGET: the receiver's buffer for the rest of a WRITE-path send; write it. */
    private void receiveTargetLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || s.state != OutgoingSend.State.AWAIT_TARGET) {
            throw new MalformedMessageException("TARGET for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "awaits none (" + s.state + ")"));
        }
        if (m.totalLength != s.rdmaLength()) {
            throw new MalformedMessageException("TARGET of " + m.totalLength + " bytes for send " + m.sequence
                    + ", which has " + s.rdmaLength() + " bytes to write");
        }
        s.target = m.descriptors;
        try {
            s.source = directPart(s, s.firstPart, s.rdmaLength());
        } catch (OutOfMemoryError e) {
            abandonWriteLocked(s, new NoBuffersException("cannot allocate " + s.rdmaLength()
                    + " bytes of direct memory for the send: " + e.getMessage()), a);
            return;
        }
        s.state = OutgoingSend.State.WRITING;
        issueWritesLocked(s, a);
    }

    /** Posts the next RDMA Writes of a send, at most MaxReadWriteSize each, {@link #RDMA_WINDOW} at once. */
    private void issueWritesLocked(OutgoingSend s, Actions a) {
        while (s.outstanding < RDMA_WINDOW && s.nextOffset < s.rdmaLength() && s.failure == null) {
            int offset = s.nextOffset;
            int n = Math.min(rdmaChunk, s.rdmaLength() - offset);
            ByteBuffer part = s.source.slice(offset, n);
            List<BufferDescriptorV1> target = s.target;
            SmbDirectConnection c = connection;
            s.nextOffset += n;
            s.outstanding++;
            a.add(() -> rdma(() -> c.rdmaWrite(part, target, offset), e -> writeDone(s, e)));
        }
    }

    private void writeDone(OutgoingSend s, Throwable e) {
        Actions a = new Actions();
        synchronized (lock) {
            if (ended != null || s.state != OutgoingSend.State.WRITING) {
                return;
            }
            s.outstanding--;
            if (e != null && s.failure == null) {
                s.failure = unwrap(e);
            }
            if (s.failure == null) {
                issueWritesLocked(s, a);
                if (s.outstanding == 0 && s.nextOffset == s.rdmaLength()) {
                    // The original: the sender waits for the writes' completion, then sends a
                    // control message saying the transfer is complete; the send completes once sent.
                    s.state = OutgoingSend.State.COMPLETING;
                    s.source = null;
                    outbox.add(new Outbound(ControlMessage.signal(Type.COMPLETE, s.sequence, true), s));
                }
            } else if (s.outstanding == 0 && !(s.failure instanceof ConnectionLostException)) {
                abandonWriteLocked(s, new NoBuffersException("cannot RDMA-write the send: " + s.failure.getMessage(),
                        s.failure), a);
            }
            settleLocked(a);
        }
        a.run();
    }

    /** The sender cannot write after all: the receiver releases its buffer. */
    private void abandonWriteLocked(OutgoingSend s, NoBuffersException why, Actions a) {
        outbox.add(new Outbound(ControlMessage.signal(Type.NOBUFS, s.sequence, true), null));
        finishLocked(s, why, a);
    }

    /** COMPLETE from the receiver: it has read the data; deregister and complete the send. */
    private void receiveReadCompleteLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || s.state != OutgoingSend.State.AWAIT_COMPLETE) {
            throw new MalformedMessageException("COMPLETE for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "awaits none (" + s.state + ")"));
        }
        finishLocked(s, null, a);
    }

    /** NOBUFS from the receiver: it could not take the send. */
    private void receiveReceiverNoBuffersLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || (s.state != OutgoingSend.State.AWAIT_COMPLETE && s.state != OutgoingSend.State.AWAIT_TARGET)) {
            throw new MalformedMessageException("NOBUFS for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "cannot be refused any more (" + s.state + ")"));
        }
        finishLocked(s, new NoBuffersException("the peer could not allocate or register memory for the "
                + s.length + "-byte send"), a);
    }

    /** A send completed (failure {@code null}) or failed; releases what it held. */
    private void finishLocked(OutgoingSend s, Throwable failure, Actions a) {
        s.state = OutgoingSend.State.DONE;
        unfinished.remove(s);
        if (s.path != OutgoingSend.Path.INLINE) {
            large.remove(s.sequence);
        }
        RegisteredBuffer registration = s.registration;
        s.registration = null;
        s.source = null;
        if (registration != null) {
            a.add(registration::close); // deregistered before the application learns the outcome
        }
        if (failure == null) {
            bytesSent += s.length;
            switch (s.path) {
                case INLINE:
                    inlineSends++;
                    break;
                case READ:
                    readTransfers++;
                    break;
                default:
                    writeTransfers++;
            }
            a.add(() -> s.future.complete(null));
        } else {
            if (failure instanceof NoBuffersException) {
                noBuffers++;
            }
            a.add(() -> s.future.completeExceptionally(failure));
        }
    }

    /** A send that failed before any control message of it was sent. */
    private void failLocally(OutgoingSend s, Throwable failure, Actions a) {
        s.path = s.path == null ? OutgoingSend.Path.INLINE : s.path;
        finishLocked(s, failure, a);
    }

    // ================================================================ the receiving half

    /** Checks a send's sequence and the window, and takes its number. */
    private void acceptSequenceLocked(ControlMessage m) throws MalformedMessageException {
        if (m.sequence != expectedSequence) {
            throw new MalformedMessageException(m.type + " with Sequence " + Long.toUnsignedString(m.sequence)
                    + ", expected " + expectedSequence);
        }
        IncomingTransfer oldest = undelivered.peekFirst();
        if (oldest != null && m.sequence - oldest.sequence >= local.receiveWindow) {
            throw new MalformedMessageException(m.type + " " + m.sequence + " beyond the receive window of "
                    + local.receiveWindow + " sends past send " + oldest.sequence + ", which is still incomplete");
        }
        expectedSequence++;
    }

    /** DATA: a whole send; delivered in order. */
    private void receiveDataLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        acceptSequenceLocked(m);
        ByteBuffer copy = ByteBuffer.allocate(m.totalLength);
        copy.put(m.inline.duplicate()).flip();
        undelivered.add(IncomingTransfer.inline(m.sequence, copy));
        deliverLocked(a);
    }

    /** READ_REQUEST or WRITE_REQUEST: a large send; moved as soon as an in-flight slot is free. */
    private void receiveRequestLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        acceptSequenceLocked(m);
        boolean read = m.type == Type.READ_REQUEST;
        if (m.totalLength > config.maxMessageSize()) {
            throw new MalformedMessageException(m.type + " of " + m.totalLength + " bytes exceeds the MaxMessageSize "
                    + config.maxMessageSize() + " this side announced");
        }
        if (read && !local.canRdmaRead) {
            throw new MalformedMessageException("READ_REQUEST although this side announced it cannot RDMA Read");
        }
        if (rdmaChunk == 0) {
            throw new MalformedMessageException(m.type + " although MaxReadWriteSize is 0");
        }
        if (incoming.size() >= peer.maxInFlight) {
            throw new MalformedMessageException(m.type + " " + m.sequence + " while " + incoming.size()
                    + " transfers are open, the peer announced at most " + peer.maxInFlight);
        }
        byte[] first = new byte[m.inline.remaining()];
        m.inline.duplicate().get(first);
        IncomingTransfer t = IncomingTransfer.large(m.sequence, read, m.totalLength, first, m.descriptors);
        undelivered.add(t);
        incoming.put(t.sequence, t);
        incomingQueued.add(t);
        startIncomingLocked(a);
    }

    /** Starts queued incoming transfers while this side's in-flight limit allows. */
    private void startIncomingLocked(Actions a) {
        while (incomingMoving < config.maxInFlight() && !incomingQueued.isEmpty() && ended == null) {
            IncomingTransfer t = incomingQueued.poll();
            incomingMoving++;
            t.holdsSlot = true;
            t.state = IncomingTransfer.State.MOVING;
            ByteBuffer buffer;
            try {
                buffer = allocator.allocate(t.totalLength);
            } catch (OutOfMemoryError e) {
                refuseLocked(t, "cannot allocate " + t.totalLength + " bytes: " + e.getMessage(), a);
                continue;
            }
            buffer.put(0, t.firstPart);
            t.firstPart = null;
            t.buffer = buffer;
            if (t.read) {
                issueReadsLocked(t, a);
            } else {
                offerTargetLocked(t, a);
            }
        }
    }

    /** WRITE path: register the rest of the buffer for write access and name it in TARGET. */
    private void offerTargetLocked(IncomingTransfer t, Actions a) {
        RegisteredBuffer registration;
        try {
            registration = connection.register(t.buffer.slice(t.firstPartLength, t.rdmaLength()), RemoteAccess.WRITE);
        } catch (ConnectionLostException e) {
            return; // the loss ends every transfer
        } catch (SmbDirectException e) {
            refuseLocked(t, "cannot register " + t.rdmaLength() + " bytes for RDMA Write: " + e.getMessage(), a);
            return;
        }
        int count = registration.descriptors().size();
        if (count > ControlMessage.MAX_DESCRIPTORS || ControlMessage.size(count, 0) > maxControlMessage) {
            a.add(registration::close);
            refuseLocked(t, "the buffer needs " + count + " descriptors, more than one control message carries", a);
            return;
        }
        t.registration = registration;
        outbox.add(new Outbound(ControlMessage.encode(Type.TARGET, 0, t.sequence, t.rdmaLength(),
                registration.descriptors(), null), null));
    }

    /** READ path: posts the next RDMA Reads, at most MaxReadWriteSize each, {@link #RDMA_WINDOW} at once. */
    private void issueReadsLocked(IncomingTransfer t, Actions a) {
        while (t.outstanding < RDMA_WINDOW && t.nextOffset < t.rdmaLength() && t.failure == null) {
            int offset = t.nextOffset;
            int n = Math.min(rdmaChunk, t.rdmaLength() - offset);
            ByteBuffer part = t.buffer.slice(t.firstPartLength + offset, n);
            List<BufferDescriptorV1> source = t.source;
            SmbDirectConnection c = connection;
            t.nextOffset += n;
            t.outstanding++;
            a.add(() -> rdma(() -> c.rdmaRead(part, source, offset), e -> readDone(t, e)));
        }
    }

    private void readDone(IncomingTransfer t, Throwable e) {
        Actions a = new Actions();
        synchronized (lock) {
            if (ended != null || t.state != IncomingTransfer.State.MOVING) {
                return;
            }
            t.outstanding--;
            if (e != null && t.failure == null) {
                t.failure = unwrap(e);
            }
            if (t.failure == null) {
                issueReadsLocked(t, a);
                if (t.outstanding == 0 && t.nextOffset == t.rdmaLength()) {
                    // The original: the receiver reports the transfer complete; the sender deregisters.
                    outbox.add(new Outbound(ControlMessage.signal(Type.COMPLETE, t.sequence, false), null));
                    readyLocked(t, a);
                }
            } else if (t.outstanding == 0 && !(t.failure instanceof ConnectionLostException)) {
                refuseLocked(t, "cannot RDMA-read the data: " + t.failure.getMessage(), a);
            }
            settleLocked(a);
        }
        a.run();
    }

    /** COMPLETE from the sender (WRITE path): the data is in the buffer; deregister and deliver. */
    private void receiveWriteCompleteLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        IncomingTransfer t = awaitingWritesLocked(m);
        a.add(t.registration::close);
        t.registration = null;
        readyLocked(t, a);
    }

    /** NOBUFS from the sender (WRITE path): it cannot write after all; release the buffer. */
    private void receiveSenderNoBuffersLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        IncomingTransfer t = awaitingWritesLocked(m);
        a.add(t.registration::close);
        t.registration = null;
        t.buffer = null;
        settleIncomingLocked(t, IncomingTransfer.State.SKIPPED, a);
    }

    private IncomingTransfer awaitingWritesLocked(ControlMessage m) throws MalformedMessageException {
        IncomingTransfer t = incoming.get(m.sequence);
        if (t == null || t.read || t.registration == null) {
            throw new MalformedMessageException(m.type + " from the sender for send " + m.sequence + ", for which "
                    + (t == null ? "no transfer is open" : "no TARGET was offered"));
        }
        return t;
    }

    /** This side cannot take a transfer: NOBUFS to the sender; later sends go on. */
    private void refuseLocked(IncomingTransfer t, String reason, Actions a) {
        LOG.log(System.Logger.Level.DEBUG, () -> this + ": refusing " + t + ": " + reason);
        if (t.registration != null) {
            a.add(t.registration::close);
            t.registration = null;
        }
        t.buffer = null;
        outbox.add(new Outbound(ControlMessage.signal(Type.NOBUFS, t.sequence, false), null));
        settleIncomingLocked(t, IncomingTransfer.State.SKIPPED, a);
    }

    private void readyLocked(IncomingTransfer t, Actions a) {
        settleIncomingLocked(t, IncomingTransfer.State.READY, a);
    }

    private void settleIncomingLocked(IncomingTransfer t, IncomingTransfer.State state, Actions a) {
        t.state = state;
        incoming.remove(t.sequence);
        if (state == IncomingTransfer.State.SKIPPED) {
            releaseSlotLocked(t);
        }
        deliverLocked(a);
        startIncomingLocked(a);
    }

    /**
     * A transfer keeps its slot, and so its memory, until delivered: transfers that complete
     * early wait for order within this side's maxInFlight. Transfers start in order, so the
     * oldest incomplete one always has a slot.
     */
    private void releaseSlotLocked(IncomingTransfer t) {
        if (t.holdsSlot) {
            t.holdsSlot = false;
            incomingMoving--;
        }
    }

    /** Hands every send that is complete and has no incomplete send before it to the handler. */
    private void deliverLocked(Actions a) {
        IncomingTransfer t;
        while ((t = undelivered.peekFirst()) != null) {
            if (t.state == IncomingTransfer.State.SKIPPED) {
                undelivered.poll();
            } else if (t.state == IncomingTransfer.State.READY) {
                undelivered.poll();
                releaseSlotLocked(t);
                ByteBuffer data = t.buffer;
                t.buffer = null;
                bytesReceived += data.remaining();
                a.add(() -> deliver(data));
            } else {
                break;
            }
        }
    }

    private void deliver(ByteBuffer data) {
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

    /** After every event: start what may start, hand messages to the transport, close when drained. */
    private void settleLocked(Actions a) {
        startSendsLocked(a);
        pumpLocked(a);
        if (closing && !disconnecting && ended == null && waiting.isEmpty() && unfinished.isEmpty()
                && outbox.isEmpty()) {
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
            if (o.completes != null && o.completes.state != OutgoingSend.State.DONE && ended == null) {
                finishLocked(o.completes, null, a);
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
        List<OutgoingSend> failed = new ArrayList<>(unfinished);
        failed.addAll(waiting);
        waiting.clear();
        for (OutgoingSend s : failed) {
            if (s.state != OutgoingSend.State.DONE) {
                finishLocked(s, failure, a);
            }
        }
        for (IncomingTransfer t : incoming.values()) {
            if (t.registration != null) {
                a.add(t.registration::close);
                t.registration = null;
            }
            t.buffer = null;
        }
        incoming.clear();
        incomingQueued.clear();
        undelivered.clear();
        outbox.clear();
        opened.completeExceptionally(failure);
    }

    // ================================================================ helpers

    /** Starts an RDMA operation and reports its outcome; an immediate refusal is an outcome too. */
    private static void rdma(java.util.function.Supplier<CompletionStage<Void>> op,
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

    private static int clamp(int v, int min, int max) {
        return Math.max(min, Math.min(v, max));
    }

    @Override
    public String toString() {
        SmbDirectConnection c = connection;
        return "BulkSession[" + (c == null ? "connecting" : c.toString()) + "]";
    }
}
