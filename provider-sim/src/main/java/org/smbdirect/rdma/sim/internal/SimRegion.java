package org.smbdirect.rdma.sim.internal;

import java.nio.ByteBuffer;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;

/** A registered region: a slice of the consumer's direct buffer plus its token and rights. */
final class SimRegion implements MemoryRegion {
    static final int VALID = 0;
    static final int INVALIDATED = 1;
    static final int DEREGISTERED = 2;

    final SimEndpoint endpoint;
    /** The registered bytes: position 0, limit {@link #length}. Only absolute operations are used. */
    final ByteBuffer mem;
    final int length;
    final int access;
    final long remoteOffset;
    int token;
    /** Guarded by the endpoint's region lock for transitions; read without it on the data path. */
    volatile int state;
    /**
     * RDMA Reads the peer's requests have been granted on this region whose data has not been placed
     * yet. Deregistration waits for them. Guarded by the endpoint's region lock.
     */
    int pins;
    /**
     * Registered with {@link org.smbdirect.rdma.RequestFlags#DEFER}: the token is not usable by the
     * peer until the endpoint posts its next send-queue request.
     */
    volatile boolean bindPending;

    SimRegion(SimEndpoint endpoint, ByteBuffer mem, int access, long remoteOffset) {
        this.endpoint = endpoint;
        this.mem = mem;
        this.length = mem.capacity();
        this.access = access;
        this.remoteOffset = remoteOffset;
    }

    @Override
    public int token() {
        return token;
    }

    @Override
    public long remoteOffset() {
        return remoteOffset;
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public int access() {
        return access;
    }

    @Override
    public ByteBuffer buffer() {
        return mem.duplicate().clear();
    }

    @Override
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    public boolean isValid() {
        return state == VALID && !endpoint.isClosed();
    }

    /** Whether the {@code count} regions of a scatter/gather list from {@code base} are all still valid. */
    static boolean allValid(SimRegion[] list, int base, int count) {
        for (int i = 0; i < count; i++) {
            if (list[base + i].state != VALID) {
                return false;
            }
        }
        return true;
    }

    /** Releases a read's pin; called with the endpoint's region lock held. */
    void unpin() {
        if (--pins == 0) {
            endpoint.regionLock.notifyAll();
        }
    }

    boolean canWriteLocally() {
        return (access & Access.LOCAL_WRITE) != 0;
    }

    /**
     * Whether the remote range {@code [offset, offset + len)} lies inside this region, without
     * overflow for any inputs.
     */
    boolean containsRemote(long offset, int len) {
        long rel = offset - remoteOffset;
        return offset >= remoteOffset && rel <= length && len >= 0 && len <= length - rel;
    }

    @Override
    public String toString() {
        return "SimRegion[token=0x" + Integer.toHexString(token) + ", length=" + length + ", access="
                + Access.toString(access) + ", state=" + state + "]";
    }
}
