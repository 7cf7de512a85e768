package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;

import org.smbdirect.rdma.ConnectionRequestHandler;
import org.smbdirect.rdma.RdmaListener;

/** A listening address on the fabric; its actor hands requests to the handler one at a time. */
final class SimListener extends Actor implements RdmaListener {
    final SimProvider provider;
    private final InetSocketAddress address;
    private final ConnectionRequestHandler handler;
    // guarded by this
    private SimConnectionRequest first;
    private SimConnectionRequest last;
    private boolean closed;
    /** Requests handed to the handler and not yet answered; guarded by this. */
    private final java.util.Set<SimConnectionRequest> unanswered = new java.util.HashSet<>();

    SimListener(SimProvider provider, InetSocketAddress address, ConnectionRequestHandler handler) {
        super(provider.scheduler);
        this.provider = provider;
        this.address = address;
        this.handler = handler;
    }

    @Override
    public InetSocketAddress localAddress() {
        return address;
    }

    /** Called by the active side's connection actor. */
    void deliver(SimConnectionRequest r) {
        boolean reject;
        synchronized (this) {
            reject = closed;
            if (!closed) {
                if (last == null) {
                    first = r;
                } else {
                    last.nextPending = r;
                }
                last = r;
                unanswered.add(r);
            }
        }
        if (reject) {
            r.answerNegatively(SimConnectionRequest.REJECTED, null, "the listener closed");
            return;
        }
        provider.timer.schedule(r, System.nanoTime() + provider.live().connectTimeoutMillis * 1_000_000L);
        kick();
    }

    @Override
    protected void act() {
        for (;;) {
            SimConnectionRequest r;
            synchronized (this) {
                r = first;
                if (r == null) {
                    return;
                }
                first = r.nextPending;
                if (first == null) {
                    last = null;
                }
                r.nextPending = null;
            }
            Scheduler.beforeConsumerCall();
            try {
                handler.onConnectionRequest(r);
            } catch (Throwable t) {
                // ConnectionRequestHandler: an exception thrown by the handler rejects the request.
                SimLog.error("connection request handler failed; rejecting " + r, t);
                r.answerNegatively(SimConnectionRequest.REJECTED, null, "the listener's handler failed: " + t);
            } finally {
                Scheduler.afterConsumerCall();
            }
        }
    }

    /** A request was answered (or timed out, or withdrawn). */
    synchronized void answered(SimConnectionRequest r) {
        unanswered.remove(r);
    }

    @Override
    public void close() {
        java.util.List<SimConnectionRequest> pending;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            pending = new java.util.ArrayList<>(unanswered);
            unanswered.clear();
            first = last = null;
        }
        provider.fabric.unlisten(this);
        for (SimConnectionRequest r : pending) {
            r.answerNegatively(SimConnectionRequest.REJECTED, null, "the listener closed");
        }
        provider.forget(this);
    }

    @Override
    public String toString() {
        return "SimListener[" + address + "]";
    }
}
