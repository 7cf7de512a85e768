package org.smbdirect.protocol.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;

import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/** A buffer registered for peer access (MS-SMBD 3.1.4.3): its regions and their descriptors. */
final class RegisteredBufferImpl implements RegisteredBuffer {
    private static final System.Logger LOG = System.getLogger(RegisteredBufferImpl.class.getName());

    private final SmbDirectConnection connection;
    private final Registrations registrations;
    private final RemoteAccess access;
    private final List<BufferDescriptorV1> descriptors;
    private final long length;
    /** Every region, in descriptor order. */
    private final List<MemoryRegion> regions;
    /** Which of {@link #regions} are not yet deregistered (an array: a READ's registration is one region). */
    private final boolean[] live;
    private int liveCount;
    /** Remote access ended for at least one region: invalidated, deregistered, or connection lost. */
    private volatile boolean revoked;
    /** Whether the buffer is counted in the connection's live registrations; cleared exactly once. */
    private final java.util.concurrent.atomic.AtomicBoolean counted = new java.util.concurrent.atomic.AtomicBoolean();

    RegisteredBufferImpl(SmbDirectConnection connection, Registrations registrations, RemoteAccess access,
            List<MemoryRegion> regions) {
        this.connection = connection;
        this.registrations = registrations;
        this.access = access;
        this.regions = List.copyOf(regions);
        this.live = new boolean[regions.size()];
        Arrays.fill(live, true);
        this.liveCount = live.length;
        BufferDescriptorV1[] d = new BufferDescriptorV1[regions.size()];
        long total = 0;
        for (int i = 0; i < d.length; i++) {
            MemoryRegion r = this.regions.get(i);
            d[i] = new BufferDescriptorV1(r.remoteOffset(), r.token(), r.length());
            total += r.length();
        }
        this.descriptors = List.of(d);
        this.length = total;
    }

    @Override
    public List<BufferDescriptorV1> descriptors() {
        return descriptors;
    }

    @Override
    public long length() {
        return length;
    }

    @Override
    public RemoteAccess access() {
        return access;
    }

    @Override
    public SmbDirectConnection connection() {
        return connection;
    }

    @Override
    public boolean isRegistered() {
        return !revoked;
    }

    /** The peer invalidated one of the tokens, or the connection ended: remote access is over. */
    void revoke() {
        revoked = true;
    }

    /**
     * Removes the given regions (all when {@code which} is null) from the live set.
     *
     * @return those that were still live, for the caller to deregister
     */
    synchronized List<MemoryRegion> take(Collection<MemoryRegion> which) {
        revoked = true;
        if (liveCount == 0) {
            return List.of();
        }
        List<MemoryRegion> out = new ArrayList<>(which == null ? liveCount : which.size());
        for (int i = 0; i < live.length; i++) {
            if (live[i] && (which == null || which.contains(regions.get(i)))) {
                live[i] = false;
                liveCount--;
                out.add(regions.get(i));
            }
        }
        return out;
    }

    synchronized boolean fullyDeregistered() {
        return liveCount == 0;
    }

    /** Marks the buffer counted in the connection's live registrations. */
    void count() {
        counted.set(true);
    }

    /**
     * Ends the buffer's contribution to the live count.
     *
     * @return {@code true} the first time only, when the caller must decrement the count
     */
    boolean uncount() {
        return counted.compareAndSet(true, false);
    }

    /** The region with this descriptor's token, offset and length, or {@code null}. */
    MemoryRegion regionFor(BufferDescriptorV1 d) {
        int i = descriptors.indexOf(d);
        return i < 0 ? null : regions.get(i);
    }

    @Override
    public void deregister() throws SmbDirectException {
        registrations.deregisterRegions(this, null);
    }

    @Override
    public void close() {
        try {
            deregister();
        } catch (SmbDirectException e) {
            LOG.log(System.Logger.Level.WARNING, "deregistering " + this + " failed: " + e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "RegisteredBuffer[" + access + ", " + length + " bytes, " + descriptors + "]";
    }
}
