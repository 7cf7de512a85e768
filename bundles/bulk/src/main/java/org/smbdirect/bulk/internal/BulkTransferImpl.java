package org.smbdirect.bulk.internal;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.smbdirect.bulk.BulkAcceptHandler;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;

/**
 * The bulk-transfer layer over one SMB Direct transport: makes and accepts sessions, and keeps
 * track of them so that they can be closed together.
 */
final class BulkTransferImpl implements BulkTransfer {
    /** How long a session waits for the peer's HELLO once the connection is up. */
    static final Duration HELLO_TIMEOUT = Duration.ofSeconds(30);

    private final SmbDirect transport;
    private final Allocator allocator;
    private final Duration helloTimeout;
    private volatile BulkConfig config;
    private final Set<Session> sessions = ConcurrentHashMap.newKeySet();
    private final Set<Listener> listeners = ConcurrentHashMap.newKeySet();
    /** Set by {@link #closeAll}; guarded by {@code this} together with adding to the sets above. */
    private boolean closed;

    BulkTransferImpl(SmbDirect transport, BulkConfig config, Allocator allocator, Duration helloTimeout) {
        this.transport = Objects.requireNonNull(transport, "transport");
        this.config = Objects.requireNonNull(config, "config");
        this.allocator = allocator;
        this.helloTimeout = helloTimeout;
    }

    @Override
    public CompletionStage<BulkSession> connect(InetSocketAddress remote, BulkHandler handler) {
        return open(remote, handler).opened().copy();
    }

    @Override
    public BulkSession connect(InetSocketAddress remote, BulkHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException {
        Session.refuseOnEngineThread("connect with a timeout");
        Session s = open(remote, handler);
        try {
            return Session.await(s.opened(), timeout, "bulk connect to " + remote);
        } catch (SmbDirectException | InterruptedException e) {
            s.abandon(new SmbDirectException("the caller stopped waiting: " + e.getMessage()));
            throw e;
        }
    }

    private Session open(InetSocketAddress remote, BulkHandler handler) {
        Objects.requireNonNull(remote, "remote");
        Objects.requireNonNull(handler, "handler");
        Session s = new Session(this, config, allocator, handler, null);
        if (!track(s)) {
            s.connectFailed(closedException());
            return s;
        }
        CompletionStage<org.smbdirect.transport.SmbDirectConnection> connecting;
        try {
            connecting = transport.connect(remote, s);
        } catch (RuntimeException e) {
            sessions.remove(s);
            throw e;
        }
        connecting.whenComplete((c, e) -> {
            if (e != null) {
                s.connectFailed(e);
            } else {
                s.start(c);
                helloTimer(s);
            }
        });
        return s;
    }

    @Override
    public BulkListener listen(InetSocketAddress local, BulkAcceptHandler handler) throws SmbDirectException {
        Objects.requireNonNull(handler, "handler");
        synchronized (this) {
            if (closed) {
                throw closedException();
            }
        }
        SmbDirectListener l = transport.listen(local, c -> {
            Session s = new Session(this, config, allocator, null, handler);
            if (!track(s)) {
                return null; // arrived while the service was closing: the transport closes the connection
            }
            s.start(c);
            helloTimer(s);
            return s;
        });
        Listener made = new Listener(l);
        synchronized (this) {
            if (!closed) {
                listeners.add(made);
                return made;
            }
        }
        l.close();
        throw closedException();
    }

    /** Adds a session unless the service is closed (then {@link #closeAll} would not see it). */
    private synchronized boolean track(Session s) {
        if (closed) {
            return false;
        }
        sessions.add(s);
        return true;
    }

    private static SmbDirectException closedException() {
        return new SmbDirectException("the bulk-transfer service was closed (its component was deactivated)");
    }

    /**
     * A peer that never says HELLO does not keep its connection. The timeout is cancelled (and
     * dropped from the JDK's delay queue) as soon as the session opens or ends, so that an ended
     * session is not kept reachable for the rest of the timeout.
     */
    private void helloTimer(Session s) {
        s.opened().copy().orTimeout(helloTimeout.toNanos(), TimeUnit.NANOSECONDS).whenComplete((v, e) -> {
            if (e instanceof TimeoutException) {
                s.abandon(new SmbDirectException("the peer sent no HELLO within " + helloTimeout));
            }
        });
    }

    @Override
    public BulkConfig configuration() {
        return config;
    }

    /** Applies a configuration to sessions made from now on. */
    void configure(BulkConfig c) {
        config = Objects.requireNonNull(c);
    }

    /** A session ended. */
    void ended(Session s) {
        sessions.remove(s);
    }

    /**
     * Stops every listener and closes every session (the service goes away). From then on {@link
     * #listen} and {@link #connect} fail with {@link SmbDirectException}: a caller still holding the
     * service object cannot open what nobody would close.
     */
    void closeAll() {
        List<Listener> ls;
        List<Session> ss;
        synchronized (this) {
            closed = true;
            ls = new ArrayList<>(listeners);
            ss = new ArrayList<>(sessions);
        }
        for (Listener l : ls) {
            l.close();
        }
        for (Session s : ss) {
            s.closeAsync();
        }
    }

    /** Sessions currently open or opening (for tests). */
    Set<Session> sessions() {
        return sessions;
    }

    /** A listening endpoint. */
    private final class Listener implements BulkListener {
        private final SmbDirectListener listener;

        Listener(SmbDirectListener listener) {
            this.listener = listener;
        }

        @Override
        public InetSocketAddress localAddress() {
            return listener.localAddress();
        }

        @Override
        public void close() {
            listener.close();
            listeners.remove(this);
        }

        @Override
        public String toString() {
            return "BulkListener[" + listener.localAddress() + "]";
        }
    }
}
