package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;

import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectException;

/**
 * The upper layer's RDMA operations on one connection: MS-SMBD 3.1.4.5 (RDMA Write to Peer
 * Buffer) and 3.1.4.6 (RDMA Read from Peer Buffer). Each operation is cut at the peer's
 * descriptors and the local registrations into work requests, posted while fewer than {@link
 * #DEPTH} are in flight and, for reads, fewer than the negotiated ORD (section 6); the operation
 * completes when every one of its requests has.
 *
 * <p>Thread-safe by design: {@link #start} runs on any thread and only hands the planned
 * operation over through a concurrent queue; everything else runs on the connection's thread.
 * An operation handed over after the connection's loss was latched is failed by whichever side
 * takes it out of the queue, the starter or the teardown, never by both and never by neither.
 */
final class RdmaOperations {
    /** RDMA Read and Write work requests in flight at once per connection. */
    static final int DEPTH = 32;

    private final RdmaProvider provider;
    /** Whether the provider can RDMA Read. */
    private final boolean rdmaRead;
    private final ConnectionStateMachine lifecycle;
    private final LocalRegistrations locals;
    private final ConnectionCounters counters;
    private final Runnable signal;
    private final ConcurrentLinkedQueue<RdmaTransfer> intake = new ConcurrentLinkedQueue<>();
    /** Operations refused because the RDMA connection ended underneath: they fail with its loss. */
    private final ConcurrentLinkedQueue<CompletableFuture<Void>> awaitingLoss = new ConcurrentLinkedQueue<>();
    private final ArrayDeque<RdmaTransfer> queue = new ArrayDeque<>();
    /** Transfers handed over and not yet ended, oldest first: a list through their own fields. */
    private RdmaTransfer oldestActive;
    private RdmaTransfer newestActive;
    private int inFlight;
    private int readsInFlight;
    private int ordLimit = 1;

    /**
     * @param provider the connection's provider
     * @param lifecycle the connection's state
     * @param locals the pool of local registrations
     * @param counters the connection's counters
     * @param signal has the connection post new work (any thread)
     */
    RdmaOperations(RdmaProvider provider, ConnectionStateMachine lifecycle, LocalRegistrations locals,
            ConnectionCounters counters, Runnable signal) {
        this.provider = provider;
        this.rdmaRead = provider.capabilities().rdmaRead();
        this.lifecycle = lifecycle;
        this.locals = locals;
        this.counters = counters;
        this.signal = signal;
    }

    /**
     * The RDMA Reads this side may have outstanding: its ORD, at least 1 (section 6 and {@link
     * IrdOrdNegotiation} say how either side reads the negotiated values).
     *
     * @param ord the ORD in force
     */
    void establish(int ord) {
        ordLimit = Math.max(1, ord);
    }

    int ordLimit() {
        return ordLimit;
    }

    /**
     * MS-SMBD 3.1.4.5 / 3.1.4.6: checks the operation, takes the local buffer's registration from
     * the pool, plans the work requests and hands them to the connection. Any thread.
     *
     * @param read RDMA Read into {@code local}, else RDMA Write from it
     * @param local a direct buffer, position to limit
     * @param remote the peer's descriptors
     * @param offset into the buffer they describe
     * @param maxReadWriteSize Connection.MaxReadWriteSize, or -1 before negotiation
     * @param ep the connection's endpoint, or {@code null} when there is none (any more)
     * @return completes when every work request has; fails at once when the provider cannot RDMA Read
     */
    CompletionStage<Void> start(boolean read, ByteBuffer local, List<BufferDescriptorV1> remote, long offset,
            int maxReadWriteSize, Endpoint ep) {
        if (read && !rdmaRead) {
            return CompletableFuture.failedFuture(new SmbDirectException(
                    "the RDMA provider " + provider.type() + "/" + provider.name() + " cannot RDMA Read"));
        }
        if (!local.isDirect()) {
            throw new IllegalArgumentException("RDMA needs a direct local buffer");
        }
        int length = local.remaining();
        if (maxReadWriteSize >= 0 && length > maxReadWriteSize) {
            throw new IllegalArgumentException("RDMA of " + length + " bytes exceeds MaxReadWriteSize "
                    + maxReadWriteSize);
        }
        List<BufferDescriptorV1> ranges = RdmaTransfer.peerRanges(remote, offset, length);
        ConnectionLoss loss = lifecycle.loss();
        if (loss != null || ep == null) {
            return CompletableFuture.failedFuture(new ConnectionLostException(loss != null ? loss
                    : lifecycle.lossFor(org.smbdirect.transport.TerminationReason.LOCAL_CLOSE,
                            "connection not established")));
        }
        if (length == 0) {
            return CompletableFuture.completedFuture(null);
        }
        LocalRegistrations.Entry lease;
        try {
            lease = locals.acquire(local, read, ep);
        } catch (RdmaException e) {
            if (lifecycle.loss() == null && ep.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
                // MS-SMBD 3.1.7.1: the RDMA connection ended underneath, and the provider's event,
                // on its way, says why (a reset is not a disconnect): the operation fails with the
                // loss that event latches, as the operations already handed over do.
                CompletableFuture<Void> f = new CompletableFuture<>();
                awaitingLoss.add(f);
                if (lifecycle.loss() != null && awaitingLoss.remove(f)) {
                    f.completeExceptionally(new ConnectionLostException(lifecycle.loss()));
                }
                return f;
            }
            SmbDirectException f = lifecycle.providerFailure("registering the local buffer failed", e, ep);
            return CompletableFuture.failedFuture(f);
        }
        RdmaTransfer t = RdmaTransfer.plan(read, lease, local.position(), ranges);
        intake.add(t);
        if (lifecycle.loss() != null && intake.remove(t)) {
            fail(t, new ConnectionLostException(lifecycle.loss()));
        } else {
            signal.run();
        }
        return t.future;
    }

    /**
     * Posts queued work requests while the depth, and for reads the ORD, allow. On the
     * connection's thread.
     *
     * @param ep the endpoint
     * @return the provider's refusal of a post, or {@code null}
     */
    RdmaException pump(Endpoint ep) {
        RdmaTransfer n;
        while ((n = intake.poll()) != null) {
            addActive(n);
            queue.add(n);
        }
        while (!queue.isEmpty() && inFlight < DEPTH) {
            RdmaTransfer t = queue.peek();
            if (t.read && readsInFlight >= ordLimit) {
                break;
            }
            RdmaTransfer.Segment s = t.segments[t.nextToPost];
            try {
                if (t.read) {
                    ep.postRead(s, s.sgl, 1, s.remoteOffset, s.remoteToken, 0);
                    readsInFlight++;
                } else {
                    ep.postWrite(s, s.sgl, 1, s.remoteOffset, s.remoteToken, 0);
                }
            } catch (RdmaException e) {
                return e;
            }
            inFlight++;
            t.nextToPost++;
            if (t.allPosted()) {
                queue.poll();
            }
        }
        return null;
    }

    /**
     * A work request completed. On the connection's thread.
     *
     * @param s its segment
     * @param r the completion
     * @return {@code true} when it succeeded; a failure ends the connection (the caller's)
     */
    boolean completed(RdmaTransfer.Segment s, CompletionResult r) {
        RdmaTransfer t = s.transfer;
        inFlight--;
        if (t.read) {
            readsInFlight--;
        }
        if (r.status() != RdmaStatus.SUCCESS) {
            return false;
        }
        if (t.read) {
            counters.rdmaReads++;
            counters.rdmaReadBytes += s.length;
        } else {
            counters.rdmaWrites++;
            counters.rdmaWriteBytes += s.length;
        }
        if (++t.completed == t.segments.length) {
            removeActive(t);
            locals.release(t.local);
            t.future.complete(null);
        }
        return true;
    }

    /**
     * Whether no operation is queued or in flight (a graceful close waits for this).
     *
     * @return {@code true} when idle
     */
    boolean idle() {
        return oldestActive == null && intake.isEmpty();
    }

    /**
     * The connection ended: every operation not yet complete fails. On the connection's thread,
     * after the loss was latched.
     *
     * @param failure the loss
     */
    void failAll(ConnectionLostException failure) {
        List<RdmaTransfer> all = new ArrayList<>();
        while (oldestActive != null) {
            all.add(oldestActive);
            removeActive(oldestActive);
        }
        RdmaTransfer n;
        while ((n = intake.poll()) != null) {
            all.add(n);
        }
        queue.clear();
        for (RdmaTransfer t : all) {
            fail(t, failure);
        }
        CompletableFuture<Void> f;
        while ((f = awaitingLoss.poll()) != null) {
            f.completeExceptionally(failure);
        }
    }

    private void addActive(RdmaTransfer t) {
        t.previousActive = newestActive;
        if (newestActive == null) {
            oldestActive = t;
        } else {
            newestActive.nextActive = t;
        }
        newestActive = t;
    }

    /** Takes {@code t} out of the active list; nothing when it is not in it (any more). */
    private void removeActive(RdmaTransfer t) {
        if (t.previousActive == null && oldestActive != t) {
            return;
        }
        if (t.previousActive == null) {
            oldestActive = t.nextActive;
        } else {
            t.previousActive.nextActive = t.nextActive;
        }
        if (t.nextActive == null) {
            newestActive = t.previousActive;
        } else {
            t.nextActive.previousActive = t.previousActive;
        }
        t.previousActive = null;
        t.nextActive = null;
    }

    private void fail(RdmaTransfer t, ConnectionLostException failure) {
        locals.release(t.local);
        t.future.completeExceptionally(failure);
    }
}
