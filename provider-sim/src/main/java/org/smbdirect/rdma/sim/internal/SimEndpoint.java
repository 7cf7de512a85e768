package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * One simulated queue pair with its own protection domain. Posting checks everything a post-time
 * check can, copies the request into a preallocated slot and kicks the connection's actor; the
 * work itself is done by {@link SimConnection} on a fabric thread.
 */
final class SimEndpoint implements Endpoint {
    static final byte[] NO_BYTES = new byte[0];
    private static final int READ_FLAGS = RequestFlags.SILENT_SUCCESS | RequestFlags.READ_FENCE | RequestFlags.DEFER;
    private static final int WRITE_FLAGS = RequestFlags.ALL & ~RequestFlags.SOLICIT_EVENT;

    final SimProvider provider;
    final EndpointOptions options;
    final ConnectionListener listener;
    final SimCompletionQueue sendCq;
    final SimCompletionQueue recvCq;
    /** Created by {@link RdmaProvider#createEndpoint} (may connect), else by a connection request. */
    final boolean active;
    final SimConnectionRequest request;
    /** Queue pair number, stable for the capture. */
    final int qpn;
    final SendQueue sq;
    final RecvQueue rq;
    /** Guards region state transitions and every remote access to this endpoint's regions. */
    final Object regionLock = new Object();
    private final List<SimRegion> regions = new ArrayList<>();
    /** Regions registered with DEFER whose tokens wait for the next send-queue request. */
    private final java.util.Queue<SimRegion> pendingBinds = new java.util.concurrent.ConcurrentLinkedQueue<>();

    private volatile EndpointState state = EndpointState.IDLE;
    /** Set under this endpoint's lock when connecting or accepting. */
    volatile SimConnection connection;
    volatile InetSocketAddress localAddress;
    volatile InetSocketAddress remoteAddress;
    volatile byte[] peerPrivateData = NO_BYTES;
    volatile int ird;
    volatile int ord;
    private volatile Object attachment;

    // ---- owned by the connection's actor
    int readsOutstanding;
    /** The most RDMA Reads this endpoint had outstanding at once (observable ORD enforcement). */
    volatile int peakReadsOutstanding;
    boolean beganConnecting;
    boolean established;
    boolean terminalDelivered;
    long linkFreeAt;
    /** Capture state: next request PSN, responder message sequence number, CM communication id. */
    int psn;
    int msn;
    final int commId;

    SimEndpoint(SimProvider provider, EndpointOptions options, ConnectionListener listener, boolean active,
            SimConnectionRequest request, int qpn, int initialPsn, int commId) {
        this.provider = provider;
        this.options = options;
        this.listener = listener;
        this.sendCq = (SimCompletionQueue) options.sendQueue();
        this.recvCq = (SimCompletionQueue) options.receiveQueue();
        this.active = active;
        this.request = request;
        this.qpn = qpn;
        this.psn = initialPsn;
        this.commId = commId;
        this.sq = new SendQueue(options.sendQueueDepth(), options.maxSendSge(), options.inlineThreshold());
        this.rq = new RecvQueue(options.receiveQueueDepth(), options.maxReceiveSge());
    }

    // ================================================================ connection service

    @Override
    public RdmaProvider provider() {
        return provider;
    }

    @Override
    public EndpointOptions options() {
        return options;
    }

    @Override
    public EndpointState state() {
        return state;
    }

    boolean isClosed() {
        return state == EndpointState.CLOSED;
    }

    @Override
    public void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) throws RdmaException {
        if (!active) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "connect: this endpoint was created for an incoming request");
        }
        if (remote == null || remote.isUnresolved()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "connect: remote address is null or unresolved: " + remote);
        }
        byte[] pd = provider.checkPrivateData("connect", privateData,
                provider.capabilities().transportType().requestPrivateDataSize());
        provider.checkDepths("connect", ird, ord);
        SimConnection c;
        synchronized (this) {
            if (state != EndpointState.IDLE || connection != null) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "connect: endpoint is " + state + ", not IDLE");
            }
            InetSocketAddress local = provider.fabric.bindEphemeral(provider);
            c = new SimConnection(this, remote, pd, ird, ord);
            localAddress = local;
            remoteAddress = remote;
            this.ird = ird;
            this.ord = ord;
            beganConnecting = true;
            connection = c;
            state = EndpointState.CONNECTING;
        }
        c.kick();
    }

    @Override
    public byte[] peerPrivateData() {
        return peerPrivateData.clone();
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
    public InetSocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    @Override
    public void disconnect() {
        SimConnection c;
        synchronized (this) {
            if (state != EndpointState.CONNECTING && state != EndpointState.CONNECTED) {
                return;
            }
            c = connection;
        }
        if (c != null) {
            c.requestDisconnect(this);
        }
    }

    /** Ends the connection with an error (completion queue overflow, provider shutdown). */
    void fail(RdmaStatus status, String reason) {
        SimConnection c;
        synchronized (this) {
            if (state != EndpointState.CONNECTING && state != EndpointState.CONNECTED && state != EndpointState.CLOSED) {
                return;
            }
            c = connection;
        }
        if (c != null) {
            c.requestFailure(this, status, reason);
        }
    }

    @Override
    public void close() {
        EndpointState prev;
        SimConnection c;
        synchronized (this) {
            prev = state;
            if (prev == EndpointState.CLOSED) {
                return;
            }
            state = EndpointState.CLOSED;
            c = connection;
        }
        if (c != null && (prev == EndpointState.CONNECTING || prev == EndpointState.CONNECTED)) {
            c.requestDisconnect(this);
        } else if (c == null) {
            flushIdle();
        }
        List<SimRegion> all;
        synchronized (regionLock) {
            all = new ArrayList<>(regions);
            regions.clear();
            for (SimRegion r : all) {
                r.state = SimRegion.DEREGISTERED;
            }
            for (SimRegion r : all) {
                awaitUnpinned(r);
            }
        }
        for (SimRegion r : all) {
            provider.regions.remove(r);
        }
        sendCq.detach(this);
        recvCq.detach(this);
        if (c == null || c.isTerminated()) {
            provider.forget(this);
        }
    }

    /** Flushes posted receives of an endpoint that never connected. */
    private void flushIdle() {
        for (;;) {
            Object ctx;
            synchronized (this) {
                if (rq.head == rq.tail) {
                    return;
                }
                int s = rq.slot(rq.head);
                ctx = rq.context[s];
                rq.clear(s);
                rq.head++;
            }
            recvCq.push(ctx, this, OperationType.RECEIVE, RdmaStatus.FLUSHED, 0, false, false, 0);
        }
    }

    /** Called by the connection's actor: moves to DISCONNECTED unless closed. */
    synchronized void markDisconnected() {
        if (state != EndpointState.CLOSED) {
            state = EndpointState.DISCONNECTED;
        }
    }

    /** Called by the connection's actor when the connection is established. */
    synchronized boolean markConnected() {
        if (state == EndpointState.CONNECTING) {
            state = EndpointState.CONNECTED;
            return true;
        }
        return false;
    }

    /** Called when accepting: IDLE to CONNECTING with the connection. */
    synchronized void markAccepting(SimConnection c, int ird, int ord) throws RdmaException {
        if (state != EndpointState.IDLE || connection != null) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "accept: endpoint is " + state + ", not IDLE");
        }
        this.ird = ird;
        this.ord = ord;
        beganConnecting = true;
        connection = c;
        state = EndpointState.CONNECTING;
    }

    /** Called when a request is rejected: an endpoint created for it moves to DISCONNECTED without events. */
    void markRejected() {
        synchronized (this) {
            if (state == EndpointState.IDLE) {
                state = EndpointState.DISCONNECTED;
            }
        }
        flushIdle();
    }

    @Override
    public void attach(Object attachment) {
        this.attachment = attachment;
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    // ================================================================ registration service

    @Override
    public MemoryRegion register(ByteBuffer buffer, int access) throws RdmaException {
        return register(buffer, access, RequestFlags.NONE);
    }

    /**
     * With {@link RequestFlags#DEFER} on a connected endpoint the token reaches the peer's reach
     * only with this endpoint's next send-queue request, as a verbs provider's memory window bind
     * posted with that request does: a consumer that passes the token on another way fails here
     * as it would on a device.
     */
    @Override
    public MemoryRegion register(ByteBuffer buffer, int access, int flags) throws RdmaException {
        if ((flags & ~RequestFlags.DEFER) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: a registration takes DEFER only, got "
                    + RequestFlags.toString(flags));
        }
        if (buffer == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: buffer is null");
        }
        if (!buffer.isDirect()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: heap buffers cannot be registered (the memory may move); use a direct buffer");
        }
        if ((access & ~Access.ALL) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: unknown access bits " + Access.toString(access));
        }
        if ((access & Access.REMOTE_WRITE) != 0 && (access & Access.LOCAL_WRITE) == 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: REMOTE_WRITE requires LOCAL_WRITE");
        }
        if (buffer.isReadOnly() && (access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE)) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: write access " + Access.toString(access) + " to a read-only buffer");
        }
        int len = buffer.remaining();
        if (len == 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: the buffer has no bytes between position and limit");
        }
        if (len > provider.capabilities().maxRegionSize()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "register: " + len + " bytes exceed maxRegionSize "
                    + provider.capabilities().maxRegionSize());
        }
        if ((access & Access.REMOTE_READ) != 0 && !provider.capabilities().rdmaRead()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, "register: REMOTE_READ needs RDMA Read, which this provider lacks");
        }
        EndpointState s = state;
        if (s == EndpointState.DISCONNECTED || s == EndpointState.CLOSED) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "register: endpoint is " + s);
        }
        provider.faults.checkRegistration();
        SimRegion r = new SimRegion(this, buffer.slice(buffer.position(), len), access, provider.regions.newRemoteOffset());
        synchronized (regionLock) {
            s = state;
            if (s == EndpointState.DISCONNECTED || s == EndpointState.CLOSED) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "register: endpoint is " + s);
            }
            if ((flags & RequestFlags.DEFER) != 0 && s == EndpointState.CONNECTED && Access.isRemote(access)) {
                r.bindPending = true;
                pendingBinds.add(r);
            }
            r.token = provider.regions.add(r);
            regions.add(r);
        }
        return r;
    }

    @Override
    public void deregister(MemoryRegion region) throws RdmaException {
        SimRegion r = own(region, "deregister");
        synchronized (regionLock) {
            if (r.state == SimRegion.DEREGISTERED) {
                throw new RdmaException(RdmaStatus.INVALID_TOKEN, "deregister: region already deregistered");
            }
            r.state = SimRegion.DEREGISTERED;
            regions.remove(r);
            awaitUnpinned(r);
        }
        if (r.bindPending) {
            pendingBinds.remove(r);
        }
        provider.regions.remove(r);
    }

    /**
     * MS-SMBD 3.1.4.4: when deregistration returns, no remote access is in progress. An RDMA Read
     * the peer was granted before has its data placed (or is flushed) first. On a fabric thread
     * (a callback) it cannot wait for the fabric; the read then fails REMOTE_ACCESS_ERROR instead.
     * Called with the region lock held.
     */
    private void awaitUnpinned(SimRegion r) {
        if (r.pins == 0 || Scheduler.onAnyFabricThread()) {
            return;
        }
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        try {
            while (r.pins > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    SimLog.warn("deregistration of " + r + " gave up waiting for RDMA Reads in flight");
                    return;
                }
                java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(regionLock, left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private SimRegion own(MemoryRegion region, String op) throws RdmaException {
        if (!(region instanceof SimRegion) || ((SimRegion) region).endpoint != this) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, op + ": region " + region + " is not a region of this endpoint");
        }
        return (SimRegion) region;
    }

    /** Invalidates a region for remote access (local invalidate or a peer's send-and-invalidate). */
    boolean invalidate(SimRegion r) {
        synchronized (regionLock) {
            if (r.state != SimRegion.VALID || !Access.isRemote(r.access)) {
                return false;
            }
            r.state = SimRegion.INVALIDATED;
            return true;
        }
    }

    @Override
    public void postInvalidate(Object context, MemoryRegion region, int flags) throws RdmaException {
        if (!provider.capabilities().remoteInvalidate()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, "postInvalidate: this provider cannot invalidate");
        }
        checkFlags("postInvalidate", flags, READ_FLAGS);
        checkConnected("postInvalidate", false);
        SimRegion r = own(region, "postInvalidate");
        if (!Access.isRemote(r.access)) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "postInvalidate: region has no remote access, so no token to invalidate");
        }
        enqueue(SendQueue.OP_INVALIDATE, "postInvalidate", context, null, 0, flags, 0, 0, r, 0);
    }

    // ================================================================ RDMA service

    /** Fails fast when the endpoint has ended; checked again under the lock when queueing. */
    private void checkConnected(String what, boolean receive) throws RdmaException {
        EndpointState s = state;
        if (s == EndpointState.CONNECTED || receive && (s == EndpointState.IDLE || s == EndpointState.CONNECTING)) {
            return;
        }
        throw new RdmaException(RdmaStatus.NOT_CONNECTED, what + ": endpoint is " + s);
    }

    @Override
    public void postReceive(Object context, Sge[] sgl, int count) throws RdmaException {
        checkConnected("postReceive", true);
        int total = checkSgl("postReceive", sgl, count, 1, options.maxReceiveSge(), false, true);
        synchronized (this) {
            EndpointState s = state;
            if (s != EndpointState.IDLE && s != EndpointState.CONNECTING && s != EndpointState.CONNECTED) {
                throw new RdmaException(RdmaStatus.NOT_CONNECTED, "postReceive: endpoint is " + s);
            }
            if (rq.tail - rq.head == rq.depth) {
                throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "postReceive: receive queue full ("
                        + rq.depth + " posted)");
            }
            int slot = rq.slot(rq.tail);
            rq.context[slot] = context;
            rq.sgeCount[slot] = count;
            rq.capacity[slot] = total;
            int base = slot * rq.maxSge;
            for (int i = 0; i < count; i++) {
                Sge e = sgl[i];
                rq.sgeRegion[base + i] = (SimRegion) e.region();
                rq.sgeOffset[base + i] = e.offset();
                rq.sgeLength[base + i] = e.length();
            }
            rq.tail++;
        }
    }

    @Override
    public void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException {
        checkFlags("postSend", flags, RequestFlags.ALL);
        postData(SendQueue.OP_SEND, "postSend", context, sgl, count, flags, 0, 0);
    }

    @Override
    public void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken)
            throws RdmaException {
        if (!provider.capabilities().remoteInvalidate()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, "postSendAndInvalidate: this provider cannot send with invalidate");
        }
        checkFlags("postSendAndInvalidate", flags, RequestFlags.ALL);
        postData(SendQueue.OP_SEND_INVALIDATE, "postSendAndInvalidate", context, sgl, count, flags, 0, remoteToken);
    }

    @Override
    public void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        if (!provider.capabilities().rdmaRead()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, "postRead: this provider has no RDMA Read");
        }
        checkFlags("postRead", flags, READ_FLAGS);
        checkConnected("postRead", false);
        int total = checkSgl("postRead", sgl, count, 1, options.maxSendSge(), false, true);
        if (state == EndpointState.CONNECTED && ord == 0) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "postRead: the endpoint's ORD is 0, so no RDMA Read can start");
        }
        enqueue(SendQueue.OP_READ, "postRead", context, sgl, count, flags, total, remoteOffset, null, remoteToken);
    }

    @Override
    public void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        checkFlags("postWrite", flags, WRITE_FLAGS);
        postData(SendQueue.OP_WRITE, "postWrite", context, sgl, count, flags, remoteOffset, remoteToken);
    }

    private void postData(byte op, String what, Object context, Sge[] sgl, int count, int flags, long remoteOffset,
            int remoteToken) throws RdmaException {
        checkConnected(what, false);
        boolean inline = (flags & RequestFlags.INLINE) != 0;
        if (inline && options.inlineThreshold() == 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": INLINE requested but the endpoint's inline threshold is 0");
        }
        int max = inline ? Integer.MAX_VALUE : options.maxSendSge();
        int total = checkSgl(what, sgl, count, 0, max, inline, false);
        if (inline && total > options.inlineThreshold()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": " + total + " inline bytes exceed the endpoint's inline threshold "
                    + options.inlineThreshold());
        }
        enqueue(op, what, context, sgl, count, flags, total, remoteOffset, null, remoteToken);
    }

    private static void checkFlags(String what, int flags, int allowed) throws RdmaException {
        if ((flags & ~RequestFlags.ALL) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": unknown flag bits "
                    + RequestFlags.toString(flags & ~RequestFlags.ALL));
        }
        if ((flags & ~allowed) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": flags " + RequestFlags.toString(flags & ~allowed)
                    + " are not valid here");
        }
    }

    /** Checks a scatter/gather list and returns its total length. */
    private int checkSgl(String what, Sge[] sgl, int count, int min, int max, boolean inlineAllowed,
            boolean needLocalWrite) throws RdmaException {
        if (count < min || count > max) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": element count " + count + " outside " + min
                    + ".." + (max == Integer.MAX_VALUE ? "any" : Integer.toString(max)));
        }
        if (count > 0 && (sgl == null || sgl.length < count)) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": element count " + count + " but "
                    + (sgl == null ? "no array" : sgl.length + " elements"));
        }
        long total = 0;
        for (int i = 0; i < count; i++) {
            Sge e = sgl[i];
            if (e == null) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": sgl[" + i + "] is null");
            }
            ByteBuffer data = e.inlineData();
            if (data != null) {
                if (!inlineAllowed) {
                    throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": sgl[" + i
                            + "] names unregistered memory, which only an INLINE request may");
                }
                if (e.offset() < 0 || e.length() < 0 || e.offset() > data.limit() - e.length()) {
                    throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": sgl[" + i + "] lies outside its buffer");
                }
            } else if (e.region() == null) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": sgl[" + i + "] is not set");
            } else {
                MemoryRegion mr = e.region();
                if (!(mr instanceof SimRegion) || ((SimRegion) mr).endpoint != this) {
                    throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, what + ": sgl[" + i
                            + "] names a region of another endpoint");
                }
                SimRegion r = (SimRegion) mr;
                if (r.state != SimRegion.VALID) {
                    throw new RdmaException(RdmaStatus.INVALID_TOKEN, what + ": sgl[" + i + "] names a "
                            + (r.state == SimRegion.DEREGISTERED ? "deregistered" : "invalidated") + " region");
                }
                if (e.offset() < 0 || e.length() < 0 || e.offset() > r.length - e.length()) {
                    throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, what + ": sgl[" + i + "] (offset "
                            + e.offset() + ", length " + e.length() + ") lies outside its region of " + r.length + " bytes");
                }
                if (needLocalWrite && !r.canWriteLocally()) {
                    throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, what + ": sgl[" + i
                            + "] names a region without LOCAL_WRITE");
                }
            }
            total += e.length();
        }
        if (total > Integer.MAX_VALUE) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": message longer than 2^31-1 bytes");
        }
        return (int) total;
    }

    private void enqueue(byte op, String what, Object context, Sge[] sgl, int count, int flags, int total,
            long remoteOffset, SimRegion subject, int remoteToken) throws RdmaException {
        // the deferred registrations go to the "device" ahead of this request
        for (SimRegion r; (r = pendingBinds.poll()) != null;) {
            r.bindPending = false;
        }
        SimConnection c;
        synchronized (this) {
            if (state != EndpointState.CONNECTED) {
                throw new RdmaException(RdmaStatus.NOT_CONNECTED, what + ": endpoint is " + state);
            }
            if (sq.tail - sq.head == sq.depth) {
                throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, what + ": send queue full (" + sq.depth
                        + " outstanding)");
            }
            int slot = sq.slot(sq.tail);
            sq.context[slot] = context;
            sq.op[slot] = op;
            sq.flags[slot] = flags;
            sq.length[slot] = total;
            sq.remoteOffset[slot] = remoteOffset;
            sq.remoteToken[slot] = remoteToken;
            sq.subject[slot] = subject;
            sq.state[slot] = SendQueue.POSTED;
            sq.rnrTries[slot] = 0;
            sq.due[slot] = SimConnection.UNSET;
            if ((flags & RequestFlags.INLINE) != 0) {
                // INLINE: the data is copied now; the elements are not looked at again.
                byte[] copy = sq.inlineCopy(slot);
                int at = 0;
                for (int i = 0; i < count; i++) {
                    Sge e = sgl[i];
                    ByteBuffer data = e.inlineData();
                    if (data != null) {
                        data.get(e.offset(), copy, at, e.length());
                    } else {
                        ((SimRegion) e.region()).mem.get(e.offset(), copy, at, e.length());
                    }
                    at += e.length();
                }
                sq.sgeCount[slot] = 0;
            } else {
                int base = slot * sq.maxSge;
                for (int i = 0; i < count; i++) {
                    Sge e = sgl[i];
                    sq.sgeRegion[base + i] = (SimRegion) e.region();
                    sq.sgeOffset[base + i] = e.offset();
                    sq.sgeLength[base + i] = e.length();
                }
                sq.sgeCount[slot] = count;
            }
            sq.tail++;
            c = connection;
        }
        if ((flags & RequestFlags.DEFER) == 0) {
            c.kick();
        }
    }

    /** Approximate heap bytes of this endpoint without registered memory, for the memory statement. */
    long footprint() {
        return 256 + sq.footprint() + rq.footprint();
    }

    @Override
    public String toString() {
        return "SimEndpoint[" + provider.name() + " qpn=0x" + Integer.toHexString(qpn) + ", " + state + "]";
    }
}
