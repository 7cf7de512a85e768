package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * The receive buffers of one connection: slabs of MaxReceiveSize slots, sliced, as ARCHITECTURE.md
 * asks, each slab registered as one region (or as several regions of whole slots where the
 * provider's region size limit requires). The connection starts with a few slots and adds slabs
 * as its peer uses them, up to ReceiveCreditMax, so that an idle connection holds little memory.
 * A slot is either posted (counted in Connection.ReceiveCredits), being processed, or free.
 * Actor-confined.
 */
final class ReceiveBuffers {
    private final Endpoint endpoint;
    private final int slotSize;
    private final long maxRegionSize;
    private final List<MemoryRegion> regions = new ArrayList<>();
    private final Slot[] slots;
    private final int[] freeStack;
    private int count;
    private int freeCount;

    /**
     * @param initial the slots to start with
     * @param max the most slots there will ever be (ReceiveCreditMax)
     */
    ReceiveBuffers(Endpoint endpoint, int initial, int max, int slotSize, long maxRegionSize) throws RdmaException {
        if (slotSize > maxRegionSize) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a receive buffer of " + slotSize
                    + " bytes exceeds the provider's region size limit of " + maxRegionSize);
        }
        this.endpoint = endpoint;
        this.slotSize = slotSize;
        this.maxRegionSize = maxRegionSize;
        this.slots = new Slot[max];
        this.freeStack = new int[max];
        grow(initial);
    }

    /** The slots there are now. */
    int capacity() {
        return count;
    }

    /** The most slots there may be. */
    int max() {
        return slots.length;
    }

    /**
     * Adds up to {@code n} free slots, never beyond {@link #max()}; on failure nothing is added.
     *
     * @throws RdmaException when memory cannot be allocated or registered
     */
    void grow(int n) throws RdmaException {
        n = Math.min(n, slots.length - count);
        int perRegion = (int) Math.min(n, maxRegionSize / slotSize);
        int before = count;
        int regionsBefore = regions.size();
        try {
            while (count < before + n) {
                int k = Math.min(perRegion, before + n - count);
                ByteBuffer slab = ByteBuffer.allocateDirect(k * slotSize).order(ByteOrder.LITTLE_ENDIAN);
                MemoryRegion region = endpoint.register(slab, Access.LOCAL_WRITE);
                regions.add(region);
                for (int i = 0; i < k; i++) {
                    slots[count] = new Slot(count, slab, region, i * slotSize, slotSize);
                    count++;
                }
            }
        } catch (RdmaException | OutOfMemoryError e) {
            while (regions.size() > regionsBefore) {
                deregister(regions.remove(regions.size() - 1));
            }
            for (int i = before; i < count; i++) {
                slots[i] = null;
            }
            count = before;
            throw e instanceof RdmaException ? (RdmaException) e
                    : new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "receive buffers: " + e.getMessage());
        }
        for (int i = count - 1; i >= before; i--) {
            freeStack[freeCount++] = i;
        }
    }

    /**
     * Posts up to {@code n} free slots as receives.
     *
     * @param n how many to post
     * @return how many were posted
     * @throws RdmaException when the provider refuses a post
     */
    int post(int n) throws RdmaException {
        int posted = 0;
        while (posted < n && freeCount > 0) {
            Slot s = slots[freeStack[freeCount - 1]];
            endpoint.postReceive(s, s.sgl, 1);
            freeCount--;
            posted++;
        }
        return posted;
    }

    /** Returns a processed slot to the free set. */
    void free(Slot s) {
        freeStack[freeCount++] = s.index;
    }

    int freeCount() {
        return freeCount;
    }

    void release() {
        for (MemoryRegion r : regions) {
            deregister(r);
        }
        regions.clear();
    }

    private void deregister(MemoryRegion r) {
        try {
            endpoint.deregister(r);
        } catch (RdmaException e) {
            // already gone with the endpoint
        }
    }

    /** One receive buffer: a slice of a slab. */
    static final class Slot {
        final int index;
        final ByteBuffer buffer;
        final int base;
        final int size;
        final Sge[] sgl;
        /** A read-only view of this slot for the upper layer; position and limit are set per message. */
        final ByteBuffer view;

        Slot(int index, ByteBuffer slab, MemoryRegion region, int base, int size) {
            this.index = index;
            this.buffer = slab;
            this.base = base;
            this.size = size;
            this.sgl = new Sge[] {Sge.of(region, base, size)};
            this.view = slab.slice(base, size).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }
    }
}
