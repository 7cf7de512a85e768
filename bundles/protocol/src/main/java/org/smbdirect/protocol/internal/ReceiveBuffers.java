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
 * The receive buffers of one connection: a slab of {@code count} x MaxReceiveSize bytes, sliced,
 * as ARCHITECTURE.md asks; registered as one region, or as several regions of whole slots where
 * the provider's region size limit requires. A slot is either posted (counted in
 * Connection.ReceiveCredits), being processed, or free. Actor-confined.
 */
final class ReceiveBuffers {
    private final Endpoint endpoint;
    private final List<MemoryRegion> regions = new ArrayList<>();
    private final Slot[] slots;
    private final int[] freeStack;
    private int freeCount;

    ReceiveBuffers(Endpoint endpoint, int count, int slotSize, long maxRegionSize) throws RdmaException {
        if (slotSize > maxRegionSize) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a receive buffer of " + slotSize
                    + " bytes exceeds the provider's region size limit of " + maxRegionSize);
        }
        this.endpoint = endpoint;
        this.slots = new Slot[count];
        this.freeStack = new int[count];
        int perRegion = (int) Math.min(count, maxRegionSize / slotSize);
        try {
            for (int first = 0; first < count; first += perRegion) {
                int n = Math.min(perRegion, count - first);
                ByteBuffer slab = ByteBuffer.allocateDirect(n * slotSize).order(ByteOrder.LITTLE_ENDIAN);
                MemoryRegion region = endpoint.register(slab, Access.LOCAL_WRITE);
                regions.add(region);
                for (int i = 0; i < n; i++) {
                    slots[first + i] = new Slot(first + i, slab, region, i * slotSize, slotSize);
                }
            }
        } catch (RdmaException | OutOfMemoryError e) {
            release();
            throw e instanceof RdmaException ? (RdmaException) e
                    : new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "receive buffers: " + e.getMessage());
        }
        for (int i = count - 1; i >= 0; i--) {
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
            try {
                endpoint.deregister(r);
            } catch (RdmaException e) {
                // already gone with the endpoint
            }
        }
        regions.clear();
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
