package org.smbdirect.rdma.verbs.internal;

import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.checkFlags;

import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.impl.NatObject;

/**
 * An endpoint: an rdma_cm identifier with a reliable-connection queue pair in its own protection
 * domain (allocated through DiSNI). It holds these native objects, creates and releases them, and
 * hands each service to the class of its concern: the connection to {@link EndpointConnection},
 * registrations and memory windows to {@link EndpointRegistrations}, work requests to {@link
 * SendQueuePosting} and {@link ReceiveQueue}, and their completions to {@link
 * EndpointCompletions}.
 *
 * <p>Work requests: the {@link SendQueueLedger} keeps what each send-queue slot holds and decides
 * which requests reach the device unsignaled; the receive queue keeps each receive's context and
 * regions. A work request id carries this endpoint's id in its upper half and the slot in its
 * lower half (with a bit for receives).
 */
final class VerbsEndpoint implements Endpoint {
    final VerbsProvider provider;
    final int id;
    final long serial;
    final EndpointOptions options;
    final VerbsCompletionQueue sendCq;
    final VerbsCompletionQueue recvCq;

    final long cmId;
    private final IbvPd pd;
    final long pdPtr;
    final long qp;
    private final int sqSize;

    /**
     * Guards the native objects against use after destruction: every native call on them holds the
     * read lock and checks the flags below, which are set here, under the write lock.
     */
    final ReentrantReadWriteLock nativeLock = new ReentrantReadWriteLock();
    /** The protection domain, registrations and (if owned) the identifier are destroyed. */
    private volatile boolean nativeReleased;
    /** The queue pair is destroyed. */
    volatile boolean qpReleased;
    /** The identifier must not be used any more (destroyed, or left to the request to destroy). */
    volatile boolean idReleased;
    private volatile Object attachment;

    final EndpointConnection connection;
    final EndpointRegistrations registrations;
    final ReceiveQueue receives;
    final EndpointCompletions completions;
    final SendQueuePosting sends;

    VerbsEndpoint(VerbsProvider provider, int id, long serial, long cmId, boolean ownsCmId, EndpointOptions options,
            ConnectionListener listener, VerbsConnectionRequest request) throws RdmaException {
        this.provider = provider;
        this.id = id;
        this.serial = serial;
        this.cmId = cmId;
        this.options = options;
        this.sendCq = (VerbsCompletionQueue) options.sendQueue();
        this.recvCq = (VerbsCompletionQueue) options.receiveQueue();
        int reserve = provider.memoryWindows ? SendQueueLedger.BIND_RESERVE : 0;
        this.connection = new EndpointConnection(this, ownsCmId, listener, request);
        this.registrations = new EndpointRegistrations(this, provider);
        SendQueueLedger sendQueue = new SendQueueLedger(options.sendQueueDepth(), reserve, registrations::bindSettled);
        this.sqSize = sendQueue.size();
        WorkRequestRecords records = new WorkRequestRecords(this, options.maxSendSge(), options.maxReceiveSge(),
                options.inlineThreshold());
        this.receives = new ReceiveQueue(this, connection, records);
        this.completions = new EndpointCompletions(this, connection, registrations, sendQueue, receives,
                provider.softRoce, provider.withInvalidateFlags, this::scheduleRelease);
        this.sends = new SendQueuePosting(this, connection, sendQueue, records, completions);

        boolean sendAttached = false;
        boolean recvAttached = false;
        IbvPd pd0 = null;
        try {
            sendCq.attach(this, sqSize);
            sendAttached = true;
            recvCq.attach(this, options.receiveQueueDepth());
            recvAttached = true;
            pd0 = provider.context.allocPd();
            if (pd0 == null) {
                throw new RdmaException(RdmaStatus.DEVICE_ERROR, "ibv_alloc_pd failed");
            }
            long pdp = ((NatObject) pd0).getObjId();
            int[] caps = new int[5];
            this.qp = VerbsNative.createQp(cmId, pdp, sendCq.cqPtr, recvCq.cqPtr, sqSize,
                    options.receiveQueueDepth(), options.maxSendSge(), options.maxReceiveSge(),
                    options.inlineThreshold(), caps);
            this.pd = pd0;
            this.pdPtr = pdp;
        } catch (RdmaException | RuntimeException e) {
            undo(pd0, sendAttached, recvAttached);
            throw e;
        } catch (java.io.IOException e) {
            undo(pd0, sendAttached, recvAttached);
            throw e instanceof NativeException ? ((NativeException) e).toRdmaException("creating an endpoint")
                    : new RdmaException(RdmaStatus.DEVICE_ERROR, "creating an endpoint: " + e.getMessage(), e);
        }
    }

    private void undo(IbvPd pd0, boolean sendAttached, boolean recvAttached) {
        if (pd0 != null) {
            try {
                pd0.deallocPd();
            } catch (Exception e) {
                VerbsProvider.LOG.log(Level.WARNING, "ibv_dealloc_pd failed: " + e.getMessage());
            }
        }
        if (sendAttached) {
            sendCq.detach(this, sqSize);
        }
        if (recvAttached) {
            recvCq.detach(this, options.receiveQueueDepth());
        }
    }

    // ================================================================== connection service

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
        return connection.state();
    }

    boolean isClosed() {
        return connection.state() == EndpointState.CLOSED;
    }

    @Override
    public void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) throws RdmaException {
        connection.connect(remote, privateData, ird, ord);
    }

    @Override
    public byte[] peerPrivateData() {
        return connection.peerPrivateData();
    }

    @Override
    public int ird() {
        return connection.ird();
    }

    @Override
    public int ord() {
        return connection.ord();
    }

    @Override
    public InetSocketAddress localAddress() {
        return connection.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return connection.remoteAddress();
    }

    @Override
    public void disconnect() {
        connection.disconnect();
    }

    @Override
    public void close() {
        if (!connection.close()) {
            return;
        }
        scheduleRelease();
        provider.cmLoop.schedule(provider.settings.closeTimeoutMillis, this::forceRelease);
    }

    @Override
    public void attach(Object attachment) {
        this.attachment = attachment;
    }

    @Override
    public Object attachment() {
        return attachment;
    }

    // ================================================================== registration service

    @Override
    public MemoryRegion register(ByteBuffer buffer, int access) throws RdmaException {
        return registrations.register(buffer, access, false);
    }

    /**
     * With {@link RequestFlags#DEFER} a memory window's bind joins the deferred requests and
     * reaches the device in one post with the next request, which saves Soft-RoCE a system call
     * (the bind's own post) per registration.
     */
    @Override
    public MemoryRegion register(ByteBuffer buffer, int access, int flags) throws RdmaException {
        checkFlags(flags, RequestFlags.DEFER, "registration");
        return registrations.register(buffer, access, (flags & RequestFlags.DEFER) != 0);
    }

    @Override
    public void deregister(MemoryRegion region) throws RdmaException {
        registrations.deregister(region);
    }

    @Override
    public void postInvalidate(Object context, MemoryRegion region, int flags) throws RdmaException {
        sends.postInvalidate(context, region, flags);
    }

    // ================================================================== RDMA service

    @Override
    public void postReceive(Object context, Sge[] sgl, int count) throws RdmaException {
        receives.post(context, sgl, count);
    }

    @Override
    public void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException {
        sends.postSend(context, sgl, count, flags);
    }

    @Override
    public void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken)
            throws RdmaException {
        sends.postSendAndInvalidate(context, sgl, count, flags, remoteToken);
    }

    @Override
    public void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        sends.postRead(context, sgl, count, remoteOffset, remoteToken, flags);
    }

    @Override
    public void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException {
        sends.postWrite(context, sgl, count, remoteOffset, remoteToken, flags);
    }

    // ------------------------------------------------------------------ release

    void scheduleRelease() {
        provider.cmLoop.execute(this::tryRelease);
    }

    private void tryRelease() {
        if (!connection.mayRelease()) {
            return;
        }
        if (completions.outstanding() > 0) {
            sendCq.reap();
            recvCq.reap();
            if (completions.outstanding() > 0) {
                return; // the last completion schedules another try; the close deadline forces it
            }
        }
        releaseNative();
    }

    private void forceRelease() {
        if (!connection.endBeforeRelease()) {
            return;
        }
        sendCq.reap();
        recvCq.reap();
        releaseNative();
    }

    /** Destroys the queue pair, the registrations, the protection domain and the identifier. */
    void releaseNative() {
        if (!connection.beginRelease()) {
            return;
        }
        boolean destroyId = connection.ownsCmId();
        provider.unregister(this);
        sends.abandonDeferred();
        // No other lock is taken while holding the write lock: posting threads hold the send or
        // receive lock and pollers the completion queue's lock when they ask for the read lock.
        nativeLock.writeLock().lock();
        try {
            nativeReleased = true;
            registrations.releaseBeforeQueuePair();
            if (!qpReleased) {
                qpReleased = true;
                VerbsNative.destroyQp(cmId);
            }
            registrations.releaseAfterQueuePair();
            try {
                pd.deallocPd();
            } catch (Exception e) {
                VerbsProvider.LOG.log(Level.WARNING, "ibv_dealloc_pd failed: " + e.getMessage());
            }
            if (destroyId && !idReleased) {
                try {
                    VerbsNative.destroyCmId(cmId);
                } catch (NativeException e) {
                    VerbsProvider.LOG.log(Level.WARNING, e.getMessage());
                }
            }
            idReleased = true;
        } finally {
            nativeLock.writeLock().unlock();
        }
        sendCq.detach(this, sqSize);
        recvCq.detach(this, options.receiveQueueDepth());
    }

    /**
     * Passive side: the request that was not accepted destroys the identifier next, which must not
     * keep the queue pair.
     */
    void leaveIdentifierToRequest() {
        nativeLock.writeLock().lock();
        try {
            idReleased = true;
            if (!qpReleased) {
                qpReleased = true;
                VerbsNative.destroyQp(cmId);
            }
        } finally {
            nativeLock.writeLock().unlock();
        }
    }

    boolean isReleased() {
        return nativeReleased;
    }

    boolean isDrained() {
        return completions.outstanding() == 0;
    }

    @Override
    public String toString() {
        return "VerbsEndpoint[" + provider.name() + " #" + id + ", " + state() + ", " + localAddress() + " -> "
                + remoteAddress() + "]";
    }
}
