package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * One endpoint's registrations: memory regions in its protection domain and, for remote access on
 * devices with memory windows, type 2 windows bound to them on its queue pair; the registration
 * cache that keeps regions and free windows for the next registration; and their release, never
 * under a bind in flight. The endpoint posts the binds and the local invalidates (they are send-queue
 * requests); this class decides when, and what is freed after.
 *
 * <p>Thread-safe: registrations and deregistrations come from any thread, invalidations from the
 * completion side. Native calls hold the endpoint's native read lock and check that it is not
 * released.
 */
final class EndpointRegistrations {
    private final VerbsEndpoint endpoint;
    private final VerbsProvider provider;
    /**
     * Memory windows and regions whose release failed: kept, not forgotten, and retried when the
     * endpoint is released (after its queue pair, before its protection domain, which stays busy
     * while any of them exists).
     */
    private final Queue<Long> leftoverWindows = new ConcurrentLinkedQueue<>();
    private final Queue<Long> leftoverRegions = new ConcurrentLinkedQueue<>();
    /** Regions behind windows and free windows, kept for the next registration. */
    private final RegistrationCache cache;
    /** Regions registered before the connection was established: their windows are bound when it is. */
    private final Queue<VerbsMemoryRegion> pendingBinds = new ConcurrentLinkedQueue<>();
    private final Set<VerbsMemoryRegion> regions = ConcurrentHashMap.newKeySet();
    /** Regions deregistered while their window's bind was in flight: released when it completes. */
    private final Set<VerbsMemoryRegion> releasedUnderBind = ConcurrentHashMap.newKeySet();
    private final ConcurrentHashMap<Integer, VerbsMemoryRegion> byToken = new ConcurrentHashMap<>();

    EndpointRegistrations(VerbsEndpoint endpoint, VerbsProvider provider) {
        this.endpoint = endpoint;
        this.provider = provider;
        // without windows a region's own rkey grants remote access: such a region is never kept
        this.cache = new RegistrationCache(provider.memoryWindows ? provider.settings.registrationCache : 0);
    }

    /**
     * Registers a buffer (see {@link org.smbdirect.rdma.Endpoint#register(ByteBuffer, int, int)});
     * with {@code deferBind} a window's bind waits in the send queue's chain for the next request.
     */
    MemoryRegion register(ByteBuffer buffer, int access, boolean deferBind) throws RdmaException {
        if (buffer == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "buffer is null");
        }
        if (!buffer.isDirect()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a heap buffer cannot be registered: its memory may "
                    + "move; use ByteBuffer.allocateDirect");
        }
        if ((access & ~Access.ALL) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "unknown access bits in " + Access.toString(access));
        }
        if ((access & Access.REMOTE_WRITE) != 0 && (access & Access.LOCAL_WRITE) == 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "REMOTE_WRITE requires LOCAL_WRITE");
        }
        int length = buffer.remaining();
        if (length == 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "the buffer has no bytes between position and limit");
        }
        if (buffer.isReadOnly() && (access & (Access.LOCAL_WRITE | Access.REMOTE_WRITE)) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "write access to a read-only buffer");
        }
        if (length > provider.capabilities().maxRegionSize()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, length + " bytes exceed the largest region of "
                    + provider.capabilities().maxRegionSize() + " bytes");
        }
        if ((access & Access.REMOTE_READ) != 0 && !provider.capabilities().rdmaRead()) {
            throw new RdmaException(RdmaStatus.NOT_SUPPORTED, provider.name() + " has no RDMA Read");
        }
        EndpointState s = endpoint.state();
        if (s == EndpointState.DISCONNECTED || s == EndpointState.CLOSED) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "cannot register memory: the endpoint is " + s);
        }
        long address = VerbsNative.bufferAddress(buffer) + buffer.position();
        ByteBuffer view = buffer.duplicate().slice();
        boolean remote = Access.isRemote(access);
        boolean window = remote && provider.memoryWindows;
        int mrAccess = window ? windowRegionAccess(access)
                : ((access & Access.LOCAL_WRITE) != 0 ? VerbsNative.ACCESS_LOCAL_WRITE : 0) | remoteAccessFlags(access);
        int[] keys = new int[2];
        long mr;
        long mw = 0;
        int token;
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.isReleased()) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "cannot register memory: the endpoint was released");
            }
            RegistrationCache.Region kept = window ? cache.takeRegion(address, length, mrAccess) : null;
            if (kept != null) {
                mr = kept.mr();
                keys[0] = kept.lkey();
            } else {
                mr = regMr(address, length, mrAccess, keys);
            }
            token = remote ? keys[1] : keys[0];
            if (window) {
                RegistrationCache.Window free = cache.takeWindow();
                int[] rkey = new int[1];
                if (free != null) {
                    mw = free.mw();
                    rkey[0] = free.lastKey();
                } else {
                    try {
                        mw = VerbsNative.allocMw(endpoint.pdPtr, rkey);
                    } catch (NativeException e) {
                        deregQuietly(mr);
                        throw e.toRdmaException("allocating a memory window");
                    }
                }
                // a window bound again takes another key: its previous holder's token stays dead,
                // and no region of this endpoint still known by a key shares it
                token = provider.newWindowKey(rkey[0]);
                for (int i = 0; i < 8 && byToken.containsKey(token); i++) {
                    token = provider.newWindowKey(rkey[0]);
                }
            }
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
        VerbsMemoryRegion region = new VerbsMemoryRegion(endpoint, view, address, access, mr, keys[0], mw, token);
        regions.add(region);
        byToken.put(token, region);
        if (window) {
            try {
                if (endpoint.connection.bindsNow(region)) {
                    endpoint.sends.bind(region, deferBind);
                }
            } catch (RdmaException e) {
                discard(region);
                throw e;
            }
        }
        return region;
    }

    /**
     * ibv_reg_mr; when it fails while regions are kept for later, they are given back (their pages
     * count against the locked-memory limit) and it is tried once more. Under the native read lock.
     */
    private long regMr(long address, int length, int mrAccess, int[] keys) throws RdmaException {
        try {
            return VerbsNative.regMr(endpoint.pdPtr, address, length, mrAccess, keys);
        } catch (NativeException e) {
            List<RegistrationCache.Region> kept = cache.evictRegions();
            if (kept.isEmpty()) {
                throw e.toRdmaException("registering " + length + " bytes");
            }
            for (RegistrationCache.Region r : kept) {
                deregQuietly(r.mr());
            }
            try {
                return VerbsNative.regMr(endpoint.pdPtr, address, length, mrAccess, keys);
            } catch (NativeException again) {
                throw again.toRdmaException("registering " + length + " bytes (after giving back "
                        + kept.size() + " kept regions)");
            }
        }
    }

    static int remoteAccessFlags(int access) {
        return ((access & Access.REMOTE_READ) != 0 ? VerbsNative.ACCESS_REMOTE_READ : 0)
                | ((access & Access.REMOTE_WRITE) != 0 ? VerbsNative.ACCESS_REMOTE_WRITE : 0);
    }

    private void discard(VerbsMemoryRegion region) {
        region.deregistered();
        if (!regions.remove(region)) {
            return; // released with the endpoint
        }
        byToken.remove(region.token, region);
        if (deferUnderBind(region, true)) {
            return;
        }
        freeNow(region);
    }

    /** Gives back a discarded region's window and deregisters its memory (unless the endpoint did). */
    private void freeNow(VerbsMemoryRegion region) {
        try {
            free(region);
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage() + "; retried when the endpoint is released");
        }
    }

    /**
     * Gives back a region's window and retires its memory region, unless the endpoint was released.
     *
     * @throws NativeException when {@code ibv_dereg_mr} fails (the region is kept for the endpoint's release)
     */
    private void free(VerbsMemoryRegion region) throws NativeException {
        releaseWindow(region);
        endpoint.nativeLock.readLock().lock();
        try {
            if (!endpoint.isReleased()) {
                retireRegion(region);
            }
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
    }

    /** ibv_dereg_mr; a region that cannot be deregistered now is kept for the endpoint's release. */
    private void deregQuietly(long mr) {
        try {
            VerbsNative.deregMr(mr);
        } catch (NativeException e) {
            leftoverRegions.add(mr);
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage() + "; retried when the endpoint is released");
        }
    }

    /** Deregisters a region (see {@link org.smbdirect.rdma.RegistrationService#deregister}). */
    void deregister(MemoryRegion region) throws RdmaException {
        VerbsMemoryRegion r = own(region, RdmaStatus.INVALID_PARAMETER);
        boolean wasValid;
        synchronized (r) {
            if (r.state() == VerbsMemoryRegion.DEREGISTERED && !regions.contains(r)) {
                throw new RdmaException(RdmaStatus.INVALID_TOKEN, "the region is already deregistered");
            }
            if (!regions.remove(r)) {
                throw new RdmaException(RdmaStatus.INVALID_TOKEN, "the region is already deregistered");
            }
            wasValid = r.state() == VerbsMemoryRegion.VALID;
            r.deregistered();
        }
        byToken.remove(r.token, r);
        pendingBinds.remove(r);
        if (deferUnderBind(r, wasValid)) {
            return;
        }
        try {
            free(r);
        } catch (NativeException e) {
            throw e.toRdmaException("deregistering (the registration is released with the endpoint)");
        }
    }

    /** The region as this endpoint's own; {@code otherwise} when it belongs to another. */
    VerbsMemoryRegion own(MemoryRegion region, RdmaStatus otherwise) throws RdmaException {
        if (!(region instanceof VerbsMemoryRegion) || ((VerbsMemoryRegion) region).endpoint != endpoint) {
            throw new RdmaException(otherwise, "the region " + region + " belongs to another endpoint");
        }
        return (VerbsMemoryRegion) region;
    }

    /**
     * Whether a deregistered region's window and registration must wait for the window's bind to
     * complete: a window is never freed under its bind (the bind would then fail and with it the
     * queue pair). A bind that has completed but whose completion was not yet taken from the queue
     * is taken now (a poll, no waiting), so that a deregistration after the token was used revokes
     * it at once. A bind really still in flight (queued behind other requests) leaves the release
     * to its completion; until then the peer cannot know the token, which travels only in requests
     * posted after the bind. An unsignaled bind completes with the next reported request: when
     * none follows it, a local invalidate of its window, which is reported, is posted behind it.
     *
     * @param wasValid whether the token was valid until now (an invalidated one was bound before)
     */
    private boolean deferUnderBind(VerbsMemoryRegion r, boolean wasValid) {
        if (r.mw == 0) {
            return false;
        }
        if (r.bindInFlight()) {
            endpoint.sends.postDeferred(); // a bind still waiting for the next request goes to the device now
            endpoint.sendCq.reap();
            long seq = r.unsignaledBindInFlight();
            if (seq >= 0 && !wasValid) {
                r.bindCompleted(); // the token was invalidated, so it had been bound
            } else if (seq >= 0) {
                endpoint.sends.invalidateBehindUnsignaledBind(r, seq);
            }
        }
        // listed first: a completion that ends the bind right after deferRelease finds it
        releasedUnderBind.add(r);
        if (!r.deferRelease()) {
            releasedUnderBind.remove(r);
            return false;
        }
        return true;
    }

    /**
     * An invalidation (the peer's, or a local one that completed) left a region's window free: it
     * is kept for the next registration, bound again under a new key; the cache's overflow is
     * deallocated.
     */
    void recycleWindow(VerbsMemoryRegion r) {
        endpoint.nativeLock.readLock().lock();
        try {
            if (endpoint.isReleased() || !r.takeWindow()) {
                return;
            }
            RegistrationCache.Window overflow = cache.keep(new RegistrationCache.Window(r.mw, r.token));
            if (overflow != null) {
                VerbsNative.deallocMw(overflow.mw());
            }
        } catch (NativeException e) {
            // a free window holds nothing: released with the endpoint
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage() + "; retried when the endpoint is released");
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
    }

    /**
     * The memory region of an ended registration: kept for the next registration of the same
     * bytes when it grants no remote access of its own (it served a window), else deregistered.
     * Called under the native read lock, before the endpoint is released.
     *
     * @throws NativeException when {@code ibv_dereg_mr} fails
     */
    private void retireRegion(VerbsMemoryRegion r) throws NativeException {
        RegistrationCache.Region overflow = r.mw == 0 ? null
                : cache.keep(new RegistrationCache.Region(r.registeredView(), r.address, r.length,
                        windowRegionAccess(r.access), r.mr, r.lkey));
        long mr = r.mw == 0 ? r.mr : overflow == null ? 0 : overflow.mr();
        if (mr != 0) {
            try {
                VerbsNative.deregMr(mr);
            } catch (NativeException e) {
                leftoverRegions.add(mr);
                throw e;
            }
        }
    }

    /** The verbs access of a region that remote access reaches through windows only. */
    private static int windowRegionAccess(int access) {
        return ((access & Access.LOCAL_WRITE) != 0 ? VerbsNative.ACCESS_LOCAL_WRITE : 0) | VerbsNative.ACCESS_MW_BIND;
    }

    /** Deallocates a region's memory window, revoking remote access through it. */
    private void releaseWindow(VerbsMemoryRegion r) {
        endpoint.nativeLock.readLock().lock();
        try {
            if (r.takeWindow()) {
                VerbsNative.deallocMw(r.mw);
            }
        } catch (NativeException e) {
            // The window may still be bound: remote access through it ends only with the queue
            // pair (a type 2 window is reachable through that queue pair alone), so the connection
            // ends; the window is freed when the endpoint is released.
            leftoverWindows.add(r.mw);
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage() + "; ending the connection, which alone can "
                    + "revoke the window");
            provider.cmLoop.execute(() -> endpoint.connection.attemptFailed(RdmaStatus.DEVICE_ERROR,
                    "a memory window could not be deallocated: " + e.getMessage()));
        } finally {
            endpoint.nativeLock.readLock().unlock();
        }
    }

    /** Whether the region is registered (not deregistered, not released with the endpoint). */
    boolean isRegistered(VerbsMemoryRegion r) {
        return regions.contains(r);
    }

    /** The registered region whose remote token this is, or {@code null}. */
    VerbsMemoryRegion byToken(int token) {
        return byToken.get(token);
    }

    /** The region's window is bound once the connection is established. */
    void bindLater(VerbsMemoryRegion region) {
        pendingBinds.add(region);
    }

    /** Whether regions wait for their windows' binds. */
    boolean bindsPending() {
        return !pendingBinds.isEmpty();
    }

    /**
     * Binds the windows of regions registered before the connection existed; on the connection
     * thread when it is established, before anyone can post.
     */
    void bindPending() {
        for (VerbsMemoryRegion r; (r = pendingBinds.poll()) != null;) {
            if (r.state() != VerbsMemoryRegion.VALID) {
                continue;
            }
            try {
                endpoint.sends.bind(r, false);
            } catch (RdmaException e) {
                r.invalidated();
                endpoint.connection.requestFailed(e.status(), "binding a memory window failed: " + e.getMessage());
            }
        }
    }

    /** A window's bind completed: a region deregistered while it was in flight is freed now. */
    void bindSettled(VerbsMemoryRegion region) {
        if (region != null && region.bindCompleted() && releasedUnderBind.remove(region)) {
            freeNow(region);
        }
    }

    /** The endpoint is closed: no remote access from now on (MS-SMBD 3.1.4.4 semantics of deregistration). */
    void revokeAll() {
        for (VerbsMemoryRegion r : regions) {
            r.deregistered();
            releaseWindow(r);
        }
    }

    /**
     * The first part of the endpoint's release, under the native write lock with the queue pair in
     * error, before it is destroyed: every window is deallocated or set aside for after it (a bound
     * type 2 window holds its queue pair, and Soft-RoCE waits for such references when destroying
     * it), and the cache is emptied.
     */
    void releaseBeforeQueuePair() {
        // An unsignaled bind that no reported request followed either completed (and reports
        // nothing) or is flushed; its window is bound in the first case, so it is deallocated now.
        regions.forEach(EndpointRegistrations::settleUnsignaledBind);
        releasedUnderBind.forEach(EndpointRegistrations::settleUnsignaledBind);
        for (VerbsMemoryRegion r : regions) {
            r.deregistered();
            if (r.deferRelease()) {
                // its bind is in flight: freed once the queue pair, and the bind with it, is gone
                if (r.takeWindow()) {
                    leftoverWindows.add(r.mw);
                }
            } else {
                releaseWindow(r);
            }
        }
        for (VerbsMemoryRegion r : releasedUnderBind) {
            if (!r.bindInFlight()) {
                releaseWindow(r); // its bind was unsignaled and is settled: the window may be bound
            } else if (r.takeWindow()) {
                leftoverWindows.add(r.mw);
            }
            leftoverRegions.add(r.mr);
        }
        releasedUnderBind.clear();
        for (RegistrationCache.Window w : cache.drainWindows()) {
            leftoverWindows.add(w.mw());
        }
        for (RegistrationCache.Region kept : cache.drainRegions()) {
            leftoverRegions.add(kept.mr());
        }
    }

    /**
     * The second part, after the queue pair is destroyed and with it every window's binding: the
     * windows and regions left are freed, so that the protection domain can go.
     */
    void releaseAfterQueuePair() {
        for (Long mw; (mw = leftoverWindows.poll()) != null;) {
            try {
                VerbsNative.deallocMw(mw);
            } catch (NativeException e) {
                VerbsProvider.LOG.log(Level.WARNING, "releasing the endpoint: " + e.getMessage());
            }
        }
        for (VerbsMemoryRegion r : regions) {
            leftoverRegions.add(r.mr);
        }
        for (Long mr; (mr = leftoverRegions.poll()) != null;) {
            try {
                VerbsNative.deregMr(mr);
            } catch (NativeException e) {
                VerbsProvider.LOG.log(Level.WARNING, "releasing the endpoint: " + e.getMessage());
            }
        }
        regions.clear();
        byToken.clear();
    }

    private static void settleUnsignaledBind(VerbsMemoryRegion r) {
        if (r.unsignaledBindInFlight() >= 0) {
            r.bindCompleted();
        }
    }
}
