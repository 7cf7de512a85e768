package org.smbdirect.rdma.tck;

import java.nio.ByteBuffer;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.Sge;

/** One end of a test connection: its endpoint, its event recorder and its two completion queues. */
public final class Side {
    private final String name;
    private final Endpoint endpoint;
    private final EventRecorder events;
    private final CqProbe sendCq;
    private final CqProbe recvCq;

    Side(String name, Endpoint endpoint, EventRecorder events, CqProbe sendCq, CqProbe recvCq) {
        this.name = name;
        this.endpoint = endpoint;
        this.events = events;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
    }

    /**
     * The side's name, {@code client} or {@code server}.
     *
     * @return the name
     */
    public String name() {
        return name;
    }

    /**
     * The endpoint.
     *
     * @return the endpoint
     */
    public Endpoint endpoint() {
        return endpoint;
    }

    /**
     * The endpoint's events.
     *
     * @return the recorder
     */
    public EventRecorder events() {
        return events;
    }

    /**
     * The send-side completion queue.
     *
     * @return the probe
     */
    public CqProbe sendCq() {
        return sendCq;
    }

    /**
     * The receive completion queue (may be the same as {@link #sendCq()}).
     *
     * @return the probe
     */
    public CqProbe recvCq() {
        return recvCq;
    }

    /**
     * Registers a new zero-filled direct buffer.
     *
     * @param size bytes
     * @param access an access mask
     * @return the region
     * @throws RdmaException from {@link Endpoint#register}
     */
    public MemoryRegion register(int size, int access) throws RdmaException {
        return endpoint.register(ByteBuffer.allocateDirect(size), access);
    }

    /**
     * Posts a receive into a whole region.
     *
     * @param context the request context
     * @param region the region
     * @throws RdmaException from {@link Endpoint#postReceive}
     */
    public void postReceive(Object context, MemoryRegion region) throws RdmaException {
        endpoint.postReceive(context, new Sge[] {Sge.of(region)}, 1);
    }

    /**
     * Posts a send of part of a region.
     *
     * @param context the request context
     * @param region the region
     * @param offset the first byte
     * @param length the byte count
     * @param flags request flags
     * @throws RdmaException from {@link Endpoint#postSend}
     */
    public void send(Object context, MemoryRegion region, int offset, int length, int flags) throws RdmaException {
        endpoint.postSend(context, new Sge[] {Sge.of(region, offset, length)}, 1, flags);
    }

    @Override
    public String toString() {
        return name + " " + endpoint;
    }
}
