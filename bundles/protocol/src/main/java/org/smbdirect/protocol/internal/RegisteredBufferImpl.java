package org.smbdirect.protocol.internal;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

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
    /** Regions not yet deregistered. */
    private final Set<MemoryRegion> live;
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
        this.live = new LinkedHashSet<>(regions);
        List<BufferDescriptorV1> d = new ArrayList<>(regions.size());
        long total = 0;
        for (MemoryRegion r : regions) {
            d.add(new BufferDescriptorV1(r.remoteOffset(), r.token(), r.length()));
            total += r.length();
        }
        this.descriptors = Collections.unmodifiableList(d);
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
        List<MemoryRegion> out = new ArrayList<>();
        for (MemoryRegion r : which == null ? new ArrayList<>(live) : which) {
            if (live.remove(r)) {
                out.add(r);
            }
        }
        return out;
    }

    synchronized boolean fullyDeregistered() {
        return live.isEmpty();
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
