package org.smbdirect.protocol.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.RdmaInterface;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;
import org.smbdirect.transport.TransportStatistics;

/**
 * The SMB Direct transport: connections and listeners over a preference-ordered set of RDMA
 * providers, the engine threads, the timer scheduler, and the statistics. Used by the DS
 * component and by the plain factory alike.
 *
 * <p>Provider swap (ARCHITECTURE.md): a connection lives and dies with the provider that carries
 * it; new connections and listeners use the preferred provider, and listeners move when the
 * preferred provider changes.
 */
public final class SmbDirectTransport implements SmbDirect {
    private static final System.Logger LOG = System.getLogger(SmbDirectTransport.class.getName());

    private final Scheduler scheduler;
    private final boolean ownsScheduler;
    private final EventLoopGroup loops;
    private volatile SmbDirectConfig config;
    private final CopyOnWriteArrayList<Binding> providers = new CopyOnWriteArrayList<>();
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Set<Listener> listeners = ConcurrentHashMap.newKeySet();
    private final Object totalsLock = new Object();
    private long[] endedTotals = new long[ConnectionCounters.Snapshot.FIELDS];
    private final EnumMap<TerminationReason, Long> terminations = new EnumMap<>(TerminationReason.class);
    private long established;
    private long failedAttempts;
    private volatile boolean closed;
    /**
     * Read: choosing a provider and registering the connection or listener made on it (by the
     * upper layer's threads; a provider's own threads, in {@link #arrive}, never take it). Write:
     * changing the providers and closing the transport, so that no connection or listener is made
     * on a provider after its removal has looked for them. Never held while waiting.
     */
    private final ReentrantReadWriteLock providerLock = new ReentrantReadWriteLock();
    private final java.util.concurrent.atomic.AtomicLong internalErrors = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Creates a transport with no provider yet.
     *
     * @param config the configuration
     * @param scheduler the clock and timers
     * @param ownsScheduler whether {@link #close()} shuts the scheduler down
     */
    public SmbDirectTransport(SmbDirectConfig config, Scheduler scheduler, boolean ownsScheduler) {
        this.config = config;
        this.scheduler = scheduler;
        this.ownsScheduler = ownsScheduler;
        int threads = config.engineThreads() > 0 ? config.engineThreads()
                : Math.max(2, Runtime.getRuntime().availableProcessors());
        this.loops = new EventLoopGroup("smbdirect-engine", threads, config.engineSpinMicroseconds() * 1000L);
    }

    Scheduler scheduler() {
        return scheduler;
    }

    // ------------------------------------------------------------ providers

    /**
     * Adds a provider.
     *
     * @param provider the provider
     * @param ranking higher is preferred
     * @param order breaks ties: lower is preferred (for services, the service id)
     */
    public void addProvider(RdmaProvider provider, int ranking, long order) {
        providerLock.writeLock().lock();
        try {
            providers.add(new Binding(provider, ranking, order));
            sortProviders();
        } finally {
            providerLock.writeLock().unlock();
        }
        rebindListeners();
    }

    /**
     * Changes a provider's ranking.
     *
     * @param provider the provider
     * @param ranking the new ranking
     */
    public void updateProvider(RdmaProvider provider, int ranking) {
        providerLock.writeLock().lock();
        try {
            for (Binding b : providers) {
                if (b.provider == provider) {
                    b.ranking = ranking;
                }
            }
            sortProviders();
        } finally {
            providerLock.writeLock().unlock();
        }
        rebindListeners();
    }

    /**
     * Removes a provider: its connections end with {@link TerminationReason#PROVIDER_STOPPED} and
     * its listeners move to the next preferred provider. Returns once those connections have
     * ended and released what they held of the provider (bounded by twice the keepalive response
     * timeout): the provider's owner closes it next, and in OSGi its bundle may then go away, so
     * nothing here may touch it afterwards.
     *
     * @param provider the provider going away
     */
    public void removeProvider(RdmaProvider provider) {
        String detail = "provider " + provider.type() + "/" + provider.name() + " stopped";
        List<Connection> carried = new ArrayList<>();
        providerLock.writeLock().lock();
        try {
            providers.removeIf(b -> b.provider == provider);
            for (Connection c : connections) {
                if (c.provider == provider) {
                    carried.add(c);
                }
            }
            // Every connection learns that the provider is going first, then they end: ending one
            // disconnects its peer, which may be another of these connections.
            for (Connection c : carried) {
                c.providerStopping(detail);
            }
        } finally {
            providerLock.writeLock().unlock();
        }
        for (Connection c : carried) {
            c.execute(() -> c.terminate(TerminationReason.PROVIDER_STOPPED, detail));
        }
        for (Listener l : listeners) {
            l.providerGone(provider);
        }
        rebindListeners();
        awaitEnded(carried, detail);
    }

    /** Waits until the connections have ended, unless on an engine thread (which they need). */
    private void awaitEnded(List<Connection> ending, String why) {
        if (ending.isEmpty() || Actor.inStep()) {
            return;
        }
        List<CompletableFuture<Void>> ends = new ArrayList<>();
        for (Connection c : ending) {
            ends.add(c.ended());
        }
        try {
            CompletableFuture.allOf(ends.toArray(new CompletableFuture<?>[0]))
                    .get(config.keepaliveResponseTimeout().toMillis() * 2 + 1000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "not every connection ended (" + why + "): " + e);
        }
    }

    /** Whether the provider is one this transport may use. */
    private boolean bound(RdmaProvider p) {
        for (Binding b : providers) {
            if (b.provider == p) {
                return true;
            }
        }
        return false;
    }

    private synchronized void sortProviders() {
        List<Binding> sorted = new ArrayList<>(providers);
        sorted.sort(Comparator.comparingInt((Binding b) -> -b.ranking).thenComparingLong(b -> b.order));
        providers.clear();
        providers.addAll(sorted);
    }

    private RdmaProvider preferred() {
        List<Binding> p = providers;
        return p.isEmpty() ? null : p.get(0).provider;
    }

    private void rebindListeners() {
        providerLock.readLock().lock();
        try {
            RdmaProvider p = preferred();
            for (Listener l : listeners) {
                l.follow(p);
            }
        } finally {
            providerLock.readLock().unlock();
        }
    }

    /**
     * Replaces the configuration; connections made from now on use it, established connections
     * keep what they negotiated.
     *
     * @param newConfig the configuration
     */
    public void updateConfig(SmbDirectConfig newConfig) {
        if (newConfig.engineThreads() != config.engineThreads()
                || newConfig.engineSpinMicroseconds() != config.engineSpinMicroseconds()) {
            LOG.log(System.Logger.Level.INFO, "engineThreads and engineSpinMicroseconds take effect when the "
                    + "transport restarts");
        }
        this.config = newConfig;
    }

    // ------------------------------------------------------------ SmbDirect

    @Override
    public CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, ConnectionHandler handler) {
        return connect(remote, null, handler);
    }

    /** MS-SMBD 3.1.4.1 from a chosen local address ({@code null}: the preferred provider, its address). */
    @Override
    public CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, InetAddress local,
            ConnectionHandler handler) {
        java.util.Objects.requireNonNull(remote, "remote");
        java.util.Objects.requireNonNull(handler, "handler");
        Connection c;
        providerLock.readLock().lock();
        try {
            if (closed) {
                return CompletableFuture.failedFuture(new SmbDirectException("the SMB Direct transport is closed"));
            }
            RdmaProvider p = local == null ? preferred() : providerWith(local);
            if (p == null) {
                return CompletableFuture.failedFuture(new SmbDirectException(local == null
                        ? "no RDMA provider is available" : "no RDMA provider has the address " + local.getHostAddress()
                        + " (see interfaces())"));
            }
            if (remote.getPort() == 0) {
                remote = new InetSocketAddress(remote.getAddress(), p.capabilities().transportType().smbDirectPort());
            }
            c = Connection.connect(this, p, config, loops.next(), remote, local, handler);
            connections.add(c);
            c.start();
        } finally {
            providerLock.readLock().unlock();
        }
        return c.connectFuture();
    }

    /** The provider this transport may use that has {@code local} among its addresses, or {@code null}. */
    private RdmaProvider providerWith(InetAddress local) {
        for (Binding b : providers) {
            if (b.provider.addresses().contains(local)) {
                return b.provider;
            }
        }
        return null;
    }

    @Override
    public List<RdmaInterface> interfaces() {
        List<RdmaInterface> out = new ArrayList<>();
        for (Binding b : providers) {
            RdmaProvider p = b.provider;
            org.smbdirect.rdma.ProviderCapabilities caps = p.capabilities();
            out.add(new RdmaInterface(p.type() + "/" + p.name(), p.addresses(), caps.transportType().displayName(),
                    caps.linkSpeed(), caps.rdmaRead(), out.isEmpty()));
        }
        return out;
    }

    @Override
    public SmbDirectConnection connect(InetSocketAddress remote, ConnectionHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException {
        ConnectionHandle.refuseOnEngineThread("connect");
        return ConnectionHandle.await(connect(remote, handler).toCompletableFuture(), timeout, "connect to " + remote);
    }

    @Override
    public SmbDirectListener listen(InetSocketAddress local, AcceptHandler handler) throws SmbDirectException {
        java.util.Objects.requireNonNull(local, "local");
        java.util.Objects.requireNonNull(handler, "handler");
        providerLock.readLock().lock();
        try {
            if (closed) {
                throw new SmbDirectException("the SMB Direct transport is closed");
            }
            RdmaProvider p = preferred();
            if (p == null) {
                throw new SmbDirectException("no RDMA provider is available to listen on " + local);
            }
            Listener l = new Listener(local, handler);
            l.bind(p, true);
            listeners.add(l);
            return l;
        } finally {
            providerLock.readLock().unlock();
        }
    }

    /** A connection request reached a listener bound to {@code provider} (MS-SMBD 3.1.7.2). */
    void arrive(RdmaProvider provider, ConnectionRequest request, AcceptHandler handler) {
        // No lock here: this runs on the provider's thread, which its own listener close may wait
        // for. Checked before and after registering the connection: a removal (or close) that did
        // not find it has made the second check fail.
        if (!closed && bound(provider)) {
            Connection c = Connection.arrive(this, provider, config, loops.next(), request, handler);
            connections.add(c);
            if (!closed && bound(provider)) {
                c.start();
                return;
            }
            connections.remove(c);
        }
        try {
            request.reject(null);
        } catch (org.smbdirect.rdma.RdmaException e) {
            // already answered
        }
    }

    @Override
    public List<SmbDirectConnection> connections() {
        List<SmbDirectConnection> out = new ArrayList<>();
        for (Connection c : connections) {
            if (c.handle.parameters() != null && c.handle.isOpen()) {
                out.add(c.handle);
            }
        }
        out.sort(Comparator.comparingInt(c -> ((ConnectionHandle) c).id()));
        return out;
    }

    @Override
    public TransportStatistics statistics() {
        List<ConnectionCounters.Snapshot> live = new ArrayList<>();
        long open = 0;
        for (Connection c : connections) {
            if (c.handle.parameters() != null && c.handle.isOpen()) {
                live.add(c.statistics());
                open++;
            }
        }
        synchronized (totalsLock) {
            long[] sum = ConnectionCounters.Snapshot.sum(live, endedTotals);
            return new Statistics(sum, open, established, failedAttempts,
                    Collections.unmodifiableMap(new EnumMap<>(terminations)));
        }
    }

    @Override
    public SmbDirectConfig configuration() {
        return config;
    }

    @Override
    public int defaultPort() {
        RdmaProvider p = preferred();
        return p == null ? org.smbdirect.rdma.TransportType.ROCE.smbDirectPort()
                : p.capabilities().transportType().smbDirectPort();
    }

    @Override
    public String provider() {
        RdmaProvider p = preferred();
        return p == null ? null : p.type() + "/" + p.name();
    }

    void connectionEstablished(Connection c) {
        synchronized (totalsLock) {
            established++;
        }
    }

    void connectionEnded(Connection c, ConnectionLoss loss, boolean wasEstablished) {
        connections.remove(c);
        ConnectionCounters.Snapshot last = c.finalCounters();
        synchronized (totalsLock) {
            for (int i = 0; i < ConnectionCounters.Snapshot.FIELDS; i++) {
                endedTotals[i] += last.v[i];
            }
            terminations.merge(loss.reason(), 1L, Long::sum);
            if (!wasEstablished) {
                failedAttempts++;
            }
        }
    }

    /**
     * Shuts down: listeners close, every connection ends with {@link
     * TerminationReason#TRANSPORT_SHUTDOWN}, engine threads stop.
     */
    @Override
    public void close() {
        providerLock.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true; // from now on nothing new starts: connect, listen and arrive check it under the lock
        } finally {
            providerLock.writeLock().unlock();
        }
        for (Listener l : listeners) {
            l.close();
        }
        List<CompletableFuture<Void>> ends = new ArrayList<>();
        for (Connection c : connections) {
            ends.add(c.closeAsyncNow(TerminationReason.TRANSPORT_SHUTDOWN, "the SMB Direct transport was shut down"));
        }
        try {
            CompletableFuture.allOf(ends.toArray(new CompletableFuture<?>[0]))
                    .get(config.keepaliveResponseTimeout().toMillis() * 2 + 1000, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "not every connection ended before shutdown: " + e);
        }
        loops.shutdown();
        if (ownsScheduler) {
            scheduler.shutdown();
        }
    }

    void internalError() {
        internalErrors.incrementAndGet();
    }

    /** Internal errors caught so far (bugs); tests and the fuzzer assert there are none. */
    long internalErrors() {
        return internalErrors.get();
    }

    java.util.List<Connection> debugConnections() {
        return new ArrayList<>(connections);
    }

    /** Every connection the transport holds, negotiating ones included, for tests and diagnostics. */
    int connectionCount() {
        return connections.size();
    }

    /** The engine threads, for tests and diagnostics. */
    List<Thread> engineThreadList() {
        return loops.threads();
    }

    /** Engine loops moved to a new thread because a step held theirs too long (tests, diagnostics). */
    long engineHandOvers() {
        return loops.handOvers();
    }

    @Override
    public String toString() {
        return "SmbDirectTransport[" + provider() + ", " + connections.size() + " connections]";
    }

    private static final class Binding {
        final RdmaProvider provider;
        volatile int ranking;
        final long order;

        Binding(RdmaProvider provider, int ranking, long order) {
            this.provider = provider;
            this.ranking = ranking;
            this.order = order;
        }
    }

    /** A listener following the preferred provider. */
    private final class Listener implements SmbDirectListener {
        private final InetSocketAddress requested;
        private final AcceptHandler handler;
        private org.smbdirect.rdma.RdmaListener current;
        private RdmaProvider currentProvider;
        private boolean closedListener;

        Listener(InetSocketAddress requested, AcceptHandler handler) {
            this.requested = requested;
            this.handler = handler;
        }

        /** Listens on {@code p}, releasing the previous provider's listener. */
        synchronized void bind(RdmaProvider p, boolean fail) throws SmbDirectException {
            if (closedListener || p == currentProvider) {
                return;
            }
            org.smbdirect.rdma.RdmaListener next = null;
            InetSocketAddress address = current != null ? new InetSocketAddress(requested.getAddress(),
                    current.localAddress().getPort()) : requested;
            try {
                next = p.listen(address, req -> arrive(p, req, handler));
            } catch (org.smbdirect.rdma.RdmaException first) {
                if (!p.addresses().isEmpty() && !p.addresses().get(0).equals(address.getAddress())) {
                    try {
                        next = p.listen(new InetSocketAddress(p.addresses().get(0), address.getPort()),
                                req -> arrive(p, req, handler));
                    } catch (org.smbdirect.rdma.RdmaException second) {
                        // reported below
                    }
                }
                if (next == null) {
                    if (fail) {
                        throw new SmbDirectException("cannot listen on " + address + " with " + p.type() + "/"
                                + p.name() + ": " + first.getMessage(), first);
                    }
                    LOG.log(System.Logger.Level.WARNING, "listener " + requested + " cannot move to " + p.type()
                            + "/" + p.name() + ": " + first.getMessage());
                    return;
                }
            }
            if (current != null) {
                current.close();
            }
            current = next;
            currentProvider = p;
            LOG.log(System.Logger.Level.INFO, "listening on " + next.localAddress() + " with " + p.type() + "/"
                    + p.name());
        }

        void follow(RdmaProvider p) {
            if (p == null) {
                return;
            }
            try {
                bind(p, false);
            } catch (SmbDirectException e) {
                // not thrown with fail == false
            }
        }

        synchronized void providerGone(RdmaProvider p) {
            if (currentProvider == p) {
                if (current != null) {
                    current.close();
                }
                currentProvider = null;
                // keep 'current' as the source of the port to reuse
            }
        }

        @Override
        public synchronized InetSocketAddress localAddress() {
            return currentProvider == null || current == null ? null : current.localAddress();
        }

        @Override
        public synchronized String providerType() {
            return currentProvider == null ? null : currentProvider.type();
        }

        @Override
        public void close() {
            synchronized (this) {
                if (closedListener) {
                    return;
                }
                closedListener = true;
                if (current != null && currentProvider != null) {
                    current.close();
                }
            }
            listeners.remove(this);
        }

        @Override
        public String toString() {
            return "SmbDirectListener[" + localAddress() + "]";
        }
    }

    /** A snapshot of the transport's counters. */
    private static final class Statistics extends ConnectionCounters.Snapshot implements TransportStatistics {
        private final long open;
        private final long established;
        private final long failed;
        private final Map<TerminationReason, Long> terminations;

        Statistics(long[] sums, long open, long established, long failed, Map<TerminationReason, Long> terminations) {
            super(sums);
            this.open = open;
            this.established = established;
            this.failed = failed;
            this.terminations = terminations;
        }

        @Override
        public long connectionsOpen() {
            return open;
        }

        @Override
        public long connectionsEstablished() {
            return established;
        }

        @Override
        public long connectionsFailed() {
            return failed;
        }

        @Override
        public Map<TerminationReason, Long> terminations() {
            return terminations;
        }

        @Override
        public String toString() {
            return "connections open " + open + ", established " + established + ", failed " + failed + "; "
                    + super.toString() + "; terminations " + terminations;
        }
    }
}
