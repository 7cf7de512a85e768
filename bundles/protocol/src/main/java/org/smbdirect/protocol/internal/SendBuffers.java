package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.Sge;

/**
 * The registered send buffers of one connection: up to {@code maxSlots} slots of MaxSendSize
 * bytes, each holding one Data Transfer message while its send is outstanding. Registered in
 * chunks as traffic needs them (an idle connection keeps only the first chunk), never more than
 * the configured number. Actor-confined.
 */
final class SendBuffers {
    private static final int FIRST_CHUNK = 4;

    private final Endpoint endpoint;
    private final int slotSize;
    private final int maxSlots;
    private final ArrayDeque<Slot> free = new ArrayDeque<>();
    private final List<Slot> all = new ArrayList<>();
    private final List<MemoryRegion> regions = new ArrayList<>();
    private int allocated;

    private final int slotsPerRegion;

    SendBuffers(Endpoint endpoint, int slotSize, int maxSlots, long maxRegionSize) {
        this.endpoint = endpoint;
        this.slotSize = slotSize;
        this.maxSlots = maxSlots;
        this.slotsPerRegion = (int) Math.max(1, Math.min(maxSlots, maxRegionSize / slotSize));
    }

    /**
     * A free slot, registering a new chunk when all are busy and the limit allows.
     *
     * @return a slot, or {@code null} when every slot is in flight
     * @throws RdmaException when a new chunk cannot be registered
     */
    Slot acquire() throws RdmaException {
        Slot s = free.poll();
        if (s == null && allocated < maxSlots) {
            grow();
            s = free.poll();
        }
        return s;
    }

    void release(Slot s) {
        s.owner = null;
        free.push(s);
    }

    boolean allFree() {
        return free.size() == allocated;
    }

    int allocated() {
        return allocated;
    }

    private void grow() throws RdmaException {
        int n = Math.min(Math.min(allocated == 0 ? FIRST_CHUNK : allocated, maxSlots - allocated), slotsPerRegion);
        ByteBuffer chunk = ByteBuffer.allocateDirect(n * slotSize).order(ByteOrder.LITTLE_ENDIAN);
        MemoryRegion region = endpoint.register(chunk, 0);
        regions.add(region);
        for (int i = 0; i < n; i++) {
            Slot slot = new Slot(chunk, region, i * slotSize);
            all.add(slot);
            free.add(slot);
        }
        allocated += n;
    }

    /** Adds the messages that slots in flight carry fragments of. */
    void collectOwners(java.util.Collection<OutgoingMessage> out) {
        for (Slot s : all) {
            if (s.owner != null) {
                out.add(s.owner);
            }
        }
    }

    /** Deregisters every chunk (the endpoint's close would too; this releases them early). */
    void release() {
        for (MemoryRegion r : regions) {
            try {
                endpoint.deregister(r);
            } catch (RdmaException e) {
                // already gone with the endpoint
            }
        }
        regions.clear();
        free.clear();
    }

    /** One send buffer. */
    static final class Slot {
        final ByteBuffer buffer;
        final int base;
        final MemoryRegion region;
        final Sge[] sgl = {new Sge()};
        /** The message this slot carries a fragment of; {@code null} for an internal empty message. */
        OutgoingMessage owner;
        int dataLength;
        /** How the fragment in it is to be posted: flags, and the peer's token to invalidate. */
        int postFlags;
        boolean invalidate;
        int remoteToken;

        Slot(ByteBuffer buffer, MemoryRegion region, int base) {
            this.buffer = buffer;
            this.region = region;
            this.base = base;
        }
    }
}
