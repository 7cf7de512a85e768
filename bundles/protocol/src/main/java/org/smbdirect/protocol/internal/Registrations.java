package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * The buffers one connection registered for its peer's RDMA: MS-SMBD 3.1.4.3 (Register Buffer)
 * and 3.1.4.4 (Deregister Buffer), and the peer's invalidation of a token (3.1.5.8).
 *
 * <p>Thread-safe by design: the upper layer registers and deregisters from any thread, the
 * connection revokes what its peer invalidated and drops everything when the connection ends.
 * The map from token to registration is concurrent; a registration's own regions are guarded by
 * the registration; provider calls are thread-safe. A registration is counted live before it
 * becomes visible to {@link #dropAll}, which uncounts what it finds, so the count never goes
 * negative and reaches zero when the connection has ended.
 */
final class Registrations {
    private final SmbDirectConnection owner;
    private final ConnectionStateMachine lifecycle;
    private final long maxRegionSize;
    private final Map<Integer, RegisteredBufferImpl> byToken = new ConcurrentHashMap<>();
    private final AtomicInteger live = new AtomicInteger();
    /** The connection's endpoint; {@code null} before it exists and after the connection ended. */
    private volatile Endpoint endpoint;

    /**
     * @param owner the connection the registrations are made on, as the upper layer sees it
     * @param lifecycle the connection's state, for its loss
     * @param maxRegionSize the provider's region size limit: larger buffers take several regions
     */
    Registrations(SmbDirectConnection owner, ConnectionStateMachine lifecycle, long maxRegionSize) {
        this.owner = owner;
        this.lifecycle = lifecycle;
        this.maxRegionSize = maxRegionSize;
    }

    /** The endpoint exists. */
    void attach(Endpoint ep) {
        endpoint = ep;
    }

    /**
     * Registrations in force (not fully deregistered, connection not lost).
     *
     * @return the count
     */
    int live() {
        return live.get();
    }

    /**
     * MS-SMBD 3.1.4.3 Register Buffer: the buffer's bytes from position to limit, in regions of at
     * most the provider's limit; if any registration fails, none remains (the memory SHOULD NOT stay
     * enabled for remote access after a failure).
     *
     * @param buffer a direct buffer
     * @param access what the peer may do
     * @param withNextRequest whether the provider may hand the regions to its device with the
     *        connection's next request ({@link RequestFlags#DEFER}) instead of at once
     * @return the registration
     * @throws SmbDirectException when the provider refuses or the connection is lost
     */
    RegisteredBuffer register(ByteBuffer buffer, RemoteAccess access, boolean withNextRequest) throws SmbDirectException {
        if (!buffer.isDirect()) {
            throw new IllegalArgumentException("only a direct buffer can be registered (the memory must not move)");
        }
        if (!buffer.hasRemaining()) {
            throw new IllegalArgumentException("the buffer has no bytes between position and limit");
        }
        if (access.allowsWrite() && buffer.isReadOnly()) {
            throw new IllegalArgumentException("a read-only buffer cannot be registered for RDMA Write");
        }
        Endpoint ep = endpointOrLoss();
        int rights = (access.allowsRead() ? Access.REMOTE_READ : 0)
                | (access.allowsWrite() ? Access.REMOTE_WRITE | Access.LOCAL_WRITE : 0);
        List<MemoryRegion> regions = new ArrayList<>();
        try {
            for (ByteBuffer part : RdmaTransfer.chunks(buffer, chunkSize())) {
                regions.add(ep.register(part, rights, withNextRequest ? RequestFlags.DEFER : RequestFlags.NONE));
            }
        } catch (RdmaException e) {
            deregisterQuietly(ep, regions);
            throw lifecycle.providerFailure("registration failed", e, ep);
        }
        RegisteredBufferImpl rb = new RegisteredBufferImpl(owner, this, access, regions);
        rb.count();
        live.incrementAndGet();
        for (MemoryRegion r : regions) {
            byToken.put(r.token(), rb);
        }
        if (lifecycle.loss() != null) {
            // Lost meanwhile: dropAll() may have run before this was visible to it.
            deregisterRegions(rb, null);
            throw new ConnectionLostException(lifecycle.loss());
        }
        return rb;
    }

    /**
     * MS-SMBD 3.1.4.4 Deregister Buffer, by descriptors: every descriptor must name a region
     * registered here; each registration's regions go together.
     *
     * @param descriptors the descriptors
     * @throws SmbDirectException the first provider failure, after trying every one
     */
    void deregister(List<BufferDescriptorV1> descriptors) throws SmbDirectException {
        Map<RegisteredBufferImpl, List<MemoryRegion>> byBuffer = new LinkedHashMap<>();
        for (BufferDescriptorV1 d : descriptors) {
            RegisteredBufferImpl rb = byToken.get(d.token());
            MemoryRegion r = rb == null ? null : rb.regionFor(d);
            if (r == null) {
                throw new IllegalArgumentException(d + " was not registered on " + owner);
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

    /**
     * MS-SMBD 3.1.4.4 for some (or, when {@code which} is null, all) regions of a registration.
     * When it returns, no remote access to them is in progress and none is possible. After the
     * connection's loss the endpoint's close already released them: nothing to do then.
     *
     * @param rb the registration
     * @param which its regions to deregister, or {@code null} for all
     * @throws SmbDirectException when the provider fails while the connection is up
     */
    void deregisterRegions(RegisteredBufferImpl rb, List<MemoryRegion> which) throws SmbDirectException {
        List<MemoryRegion> regions = rb.take(which);
        Endpoint ep = endpoint;
        RdmaException first = null;
        for (MemoryRegion r : regions) {
            byToken.remove(r.token(), rb);
            if (ep == null) {
                continue;
            }
            try {
                ep.deregister(r);
            } catch (RdmaException e) {
                if (lifecycle.loss() == null && first == null) {
                    first = e;
                }
            }
        }
        if (rb.fullyDeregistered() && rb.uncount()) {
            live.decrementAndGet();
        }
        if (first != null) {
            SmbDirectException failure = lifecycle.providerFailure("deregistration failed", first, ep);
            // Once the connection has ended, even underneath, the endpoint's close releases the
            // regions: deregistering is as harmless as after the loss.
            if (!(failure instanceof ConnectionLostException)) {
                throw failure;
            }
        }
    }

    /**
     * MS-SMBD 3.1.5.8: the peer invalidated {@code token} with a Send with Invalidate: the
     * registration holding it no longer grants remote access.
     *
     * @param token the token
     */
    void invalidatedByPeer(int token) {
        RegisteredBufferImpl rb = byToken.get(token);
        if (rb != null) {
            rb.revoke();
        }
    }

    /**
     * The connection ended: every registration is gone (the endpoint's close releases the regions;
     * a later deregister finds nothing to do), before the upper layer is told.
     */
    void dropAll() {
        for (RegisteredBufferImpl rb : byToken.values()) {
            rb.take(null);
            if (rb.uncount()) {
                live.decrementAndGet();
            }
        }
        byToken.clear();
        endpoint = null;
    }

    private Endpoint endpointOrLoss() throws ConnectionLostException {
        Endpoint ep = endpoint;
        if (lifecycle.loss() != null || ep == null) {
            throw new ConnectionLostException(lifecycle.loss() != null ? lifecycle.loss()
                    : lifecycle.lossFor(TerminationReason.LOCAL_CLOSE, "the connection is not established"));
        }
        return ep;
    }

    private int chunkSize() {
        return (int) Math.min(maxRegionSize, Integer.MAX_VALUE);
    }

    static void deregisterQuietly(Endpoint ep, List<MemoryRegion> regions) {
        for (MemoryRegion r : regions) {
            try {
                ep.deregister(r);
            } catch (RdmaException ignored) {
                // gone with the endpoint
            }
        }
    }
}
