package org.smbdirect.rdma.verbs.internal;

import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * The receive queue of one endpoint's queue pair: a ring that keeps each outstanding receive's
 * context and the regions it names, filled when a receive is posted (under the receive lock) and
 * emptied by the completion side (under the receive completion queue's lock), in the order the
 * device completes receives. A receive's work request id carries {@link #RECV_BIT}.
 */
final class ReceiveQueue {
    static final long RECV_BIT = 1L << 31;
    static final long SEQ_MASK = RECV_BIT - 1;

    private final VerbsEndpoint endpoint;
    private final EndpointOptions options;
    private final EndpointConnection connection;
    private final WorkRequestRecords records;

    private final Object recvLock = new Object();
    private final Object[] recvContext;
    /** The region, or regions, each outstanding receive names. */
    private final Object[] recvRegions;
    private long recvSeq;
    private final AtomicInteger receives = new AtomicInteger();

    ReceiveQueue(VerbsEndpoint endpoint, EndpointConnection connection, WorkRequestRecords records) {
        this.endpoint = endpoint;
        this.options = endpoint.options;
        this.connection = connection;
        this.records = records;
        this.recvContext = new Object[options.receiveQueueDepth()];
        this.recvRegions = new Object[options.receiveQueueDepth()];
    }

    /** Posts a receive (see {@link org.smbdirect.rdma.Endpoint#postReceive}). */
    void post(Object context, Sge[] sgl, int count) throws RdmaException {
        if (sgl == null || count < 1 || count > options.maxReceiveSge() || count > sgl.length) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a receive takes 1 to " + options.maxReceiveSge()
                    + " elements, got " + count);
        }
        EndpointState s = connection.state();
        if (s == EndpointState.DISCONNECTED || s == EndpointState.CLOSED) {
            throw new RdmaException(RdmaStatus.NOT_CONNECTED, "the endpoint is " + s);
        }
        if (receives.get() >= recvContext.length) {
            endpoint.recvCq.reap();
        }
        synchronized (recvLock) {
            if (receives.get() >= recvContext.length) {
                throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "the receive queue holds "
                        + recvContext.length + " receives");
            }
            long seq = recvSeq;
            int slot = (int) (seq % recvContext.length);
            records.receiveRequest(((long) endpoint.id << 32) | RECV_BIT | slot, sgl, count);
            recvContext[slot] = context;
            recvRegions[slot] = records.receiveRegions();
            receives.incrementAndGet();
            endpoint.nativeLock.readLock().lock();
            try {
                if (endpoint.qpReleased) {
                    throw new NativeException("ibv_post_recv", 107, "the queue pair was released");
                }
                VerbsNative.postRecv(endpoint.qp, records.receiveAddress);
            } catch (NativeException e) {
                recvContext[slot] = null;
                recvRegions[slot] = null;
                receives.decrementAndGet();
                throw e.toRdmaException("posting a receive");
            } finally {
                endpoint.nativeLock.readLock().unlock();
            }
            recvSeq = seq + 1;
        }
    }

    /** Receives posted whose completion is still due. */
    int outstanding() {
        return receives.get();
    }

    // ------------------------------------------------------------------ completion side (receive CQ's lock)

    Object context(int slot) {
        return recvContext[slot];
    }

    /** The region, or regions, the receive in {@code slot} names. */
    Object regions(int slot) {
        return recvRegions[slot];
    }

    /** The receive in {@code slot} completed: its slot is free. */
    void retire(int slot) {
        recvContext[slot] = null;
        recvRegions[slot] = null;
        receives.decrementAndGet();
    }
}
