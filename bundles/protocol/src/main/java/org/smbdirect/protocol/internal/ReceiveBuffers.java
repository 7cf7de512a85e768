package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.Sge;

/**
 * The receive buffers of one connection: one registered slab of {@code count} x MaxReceiveSize
 * bytes, sliced, as ARCHITECTURE.md asks. A slot is either posted (counted in
 * Connection.ReceiveCredits), being processed, or free. Actor-confined.
 */
final class ReceiveBuffers {
    private final Endpoint endpoint;
    private final MemoryRegion region;
    private final Slot[] slots;
    private final int[] freeStack;
    private int freeCount;

    ReceiveBuffers(Endpoint endpoint, int count, int slotSize) throws RdmaException {
        this.endpoint = endpoint;
        ByteBuffer slab = ByteBuffer.allocateDirect(count * slotSize).order(ByteOrder.LITTLE_ENDIAN);
        this.region = endpoint.register(slab, Access.LOCAL_WRITE);
        this.slots = new Slot[count];
        this.freeStack = new int[count];
        for (int i = 0; i < count; i++) {
            slots[i] = new Slot(slab, region, i * slotSize, slotSize);
            freeStack[freeCount++] = count - 1 - i;
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
        freeStack[freeCount++] = s.index();
    }

    int freeCount() {
        return freeCount;
    }

    void release() {
        try {
            endpoint.deregister(region);
        } catch (RdmaException e) {
            // already gone with the endpoint
        }
    }

    /** One receive buffer: a slice of the slab. */
    static final class Slot {
        final ByteBuffer buffer;
        final int base;
        final int size;
        final Sge[] sgl;
        /** A read-only view of this slot for the upper layer; position and limit are set per message. */
        final ByteBuffer view;

        Slot(ByteBuffer slab, MemoryRegion region, int base, int size) {
            this.buffer = slab;
            this.base = base;
            this.size = size;
            this.sgl = new Sge[] {Sge.of(region, base, size)};
            this.view = slab.slice(base, size).asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }

        int index() {
            return base / size;
        }
    }
}
