package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;

/**
 * The pool of local registrations behind one connection's RDMA Reads and Writes (MS-SMBD 3.1.4.5,
 * 3.1.4.6): the local buffer of an operation is registered once, as a whole, and the registration
 * is reused by every later operation on the same buffer object, so that an operation costs one
 * post and one completion rather than a registration, a post, a completion and a deregistration.
 *
 * <p>Bounded: at most {@link #MAX_ENTRIES} buffers and {@code budget} bytes stay registered; the
 * least recently used registration no operation is using goes first. A registration keeps its
 * buffer reachable (the memory must not be freed while registered), so the bound is also the
 * upper layer's memory this pool may keep alive. Everything goes with the connection.
 *
 * <p>Thread-safe: operations start on the upper layer's threads and end on the connection's.
 * Provider calls are made outside the lock.
 */
final class LocalRegistrations {
    /** The most buffers kept registered. */
    static final int MAX_ENTRIES = 16;

    private final long budget;
    private final int chunk;
    private final List<Entry> entries = new ArrayList<>();
    private long bytes;
    private long clock;
    private long registered;
    private boolean closed;

    /** One registered buffer: its regions cover its bytes 0 to capacity, {@link #chunk} bytes each. */
    static final class Entry {
        final ByteBuffer buffer;
        final MemoryRegion[] regions;
        final int chunk;
        final boolean writable;
        final Endpoint endpoint;
        int users;
        long lastUse;
        /** Evicted or dropped while in use: deregistered when the last user lets go. */
        boolean retired;

        Entry(ByteBuffer buffer, MemoryRegion[] regions, int chunk, boolean writable, Endpoint endpoint) {
            this.buffer = buffer;
            this.regions = regions;
            this.chunk = chunk;
            this.writable = writable;
            this.endpoint = endpoint;
        }

        long bytes() {
            return buffer.capacity();
        }
    }

    /**
     * @param budget the most bytes kept registered; 0 keeps none (every operation registers)
     * @param maxRegionSize the provider's region size limit
     */
    LocalRegistrations(long budget, long maxRegionSize) {
        this.budget = budget;
        this.chunk = (int) Math.min(maxRegionSize, Integer.MAX_VALUE);
    }

    /**
     * The registration of {@code buffer} for an operation, registering it (and evicting what the
     * bounds require) when it has none yet.
     *
     * @param buffer the operation's local buffer (the whole buffer is registered)
     * @param write whether the operation writes into it (RDMA Read)
     * @param ep the connection's endpoint
     * @return the entry, in use until {@link #release}
     * @throws RdmaException when the provider refuses
     */
    Entry acquire(ByteBuffer buffer, boolean write, Endpoint ep) throws RdmaException {
        synchronized (this) {
            Entry e = find(buffer);
            if (e != null && (e.writable || !write)) {
                e.users++;
                e.lastUse = ++clock;
                return e;
            }
        }
        Entry fresh = register(buffer, write || !buffer.isReadOnly(), ep);
        List<Entry> evicted = new ArrayList<>();
        synchronized (this) {
            registered++;
            fresh.users = 1;
            fresh.lastUse = ++clock;
            if (closed || budget == 0 || fresh.bytes() > budget) {
                fresh.retired = true; // used once, deregistered after
                return fresh;
            }
            Entry stale = find(buffer);
            if (stale != null) {
                retire(stale, evicted); // registered again with write access
            }
            entries.add(fresh);
            bytes += fresh.bytes();
            while ((bytes > budget || entries.size() > MAX_ENTRIES) && evictOne(evicted)) {
                // the least recently used idle registration goes
            }
        }
        deregister(evicted);
        return fresh;
    }

    /**
     * An operation using the entry ended.
     *
     * @param e the entry from {@link #acquire}
     */
    void release(Entry e) {
        boolean last;
        synchronized (this) {
            last = --e.users == 0 && e.retired;
        }
        if (last) {
            deregister(List.of(e));
        }
    }

    /**
     * Provider registrations made so far, for tests and statistics.
     *
     * @return the count
     */
    synchronized long registrationsMade() {
        return registered;
    }

    /**
     * Buffers registered now.
     *
     * @return the count
     */
    synchronized int size() {
        return entries.size();
    }

    /**
     * The connection ended: the endpoint's close releases the regions; nothing is kept.
     */
    synchronized void dropAll() {
        closed = true;
        for (Entry e : entries) {
            e.retired = true;
        }
        entries.clear();
        bytes = 0;
    }

    private Entry find(ByteBuffer buffer) {
        for (Entry e : entries) {
            if (e.buffer == buffer) {
                return e;
            }
        }
        return null;
    }

    private boolean evictOne(List<Entry> evicted) {
        Entry lru = null;
        for (Entry e : entries) {
            if (e.users == 0 && (lru == null || e.lastUse < lru.lastUse)) {
                lru = e;
            }
        }
        if (lru == null) {
            return false; // every registration is in use: the bound holds again as they end
        }
        retire(lru, evicted);
        return true;
    }

    private void retire(Entry e, List<Entry> evicted) {
        entries.remove(e);
        bytes -= e.bytes();
        e.retired = true;
        if (e.users == 0) {
            evicted.add(e);
        }
    }

    private Entry register(ByteBuffer buffer, boolean writable, Endpoint ep) throws RdmaException {
        ByteBuffer whole = buffer.duplicate().clear();
        List<MemoryRegion> regions = new ArrayList<>();
        try {
            for (ByteBuffer part : RdmaTransfer.chunks(whole, chunk)) {
                regions.add(ep.register(part, writable ? Access.LOCAL_WRITE : 0));
            }
        } catch (RdmaException e) {
            Registrations.deregisterQuietly(ep, regions);
            throw e;
        }
        return new Entry(buffer, regions.toArray(new MemoryRegion[0]), chunk, writable, ep);
    }

    private static void deregister(List<Entry> gone) {
        for (Entry e : gone) {
            Registrations.deregisterQuietly(e.endpoint, List.of(e.regions));
        }
    }
}
