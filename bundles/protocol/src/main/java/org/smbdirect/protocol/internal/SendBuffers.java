package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
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
    private final List<Slot> all = new ArrayList<>();
    /** The free slots' indexes in {@link #all}, a stack: the slot freed last is reused first. */
    private int[] free = new int[FIRST_CHUNK];
    private int freeCount;
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
        if (freeCount == 0) {
            if (allocated == maxSlots) {
                return null;
            }
            grow();
        }
        return all.get(free[--freeCount]);
    }

    void release(Slot s) {
        free[freeCount++] = s.index;
    }

    boolean allFree() {
        return freeCount == allocated;
    }

    int allocated() {
        return allocated;
    }

    private void grow() throws RdmaException {
        int n = Math.min(Math.min(allocated == 0 ? FIRST_CHUNK : allocated, maxSlots - allocated), slotsPerRegion);
        ByteBuffer chunk = ByteBuffer.allocateDirect(n * slotSize).order(ByteOrder.LITTLE_ENDIAN);
        MemoryRegion region = endpoint.register(chunk, 0);
        regions.add(region);
        if (free.length < allocated + n) {
            free = Arrays.copyOf(free, allocated + n);
        }
        for (int i = n - 1; i >= 0; i--) {
            free[freeCount++] = allocated + i; // the chunk's first slot on top
        }
        for (int i = 0; i < n; i++) {
            all.add(new Slot(allocated + i, chunk, region, i * slotSize));
        }
        allocated += n;
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
        freeCount = 0;
    }

    /** One send buffer. */
    static final class Slot {
        /** {@link #message} of a slot that carries no upper-layer message. */
        static final long NO_MESSAGE = -1;

        final int index;
        final ByteBuffer buffer;
        final int base;
        final MemoryRegion region;
        final Sge[] sgl = {new Sge()};
        /**
         * The sequence number in Connection.SendQueue of the message this slot carries a fragment
         * of, or {@link #NO_MESSAGE} (an empty message of the engine's own, a Negotiate message).
         */
        long message = NO_MESSAGE;
        /** Whether the fragment is its message's last. */
        boolean lastFragment;
        int dataLength;
        /** How the fragment in it is to be posted: flags, and the peer's token to invalidate. */
        int postFlags;
        boolean invalidate;
        int remoteToken;

        Slot(int index, ByteBuffer buffer, MemoryRegion region, int base) {
            this.index = index;
            this.buffer = buffer;
            this.region = region;
            this.base = base;
        }
    }
}
