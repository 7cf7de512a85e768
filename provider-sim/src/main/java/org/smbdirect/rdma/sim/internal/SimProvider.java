package org.smbdirect.rdma.sim.internal;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequestHandler;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A simulated RDMA adapter on a {@link Fabric}. It owns a small pool of fabric threads, a timer
 * thread (started when needed), the region table, the fault injector and, when configured, the
 * capture file.
 */
final class SimProvider implements RdmaProvider {
    /** The value of {@link RdmaProvider#PROP_TYPE}. */
    static final String TYPE = "sim";
    private static final AtomicInteger INSTANCES = new AtomicInteger();
    private static final Set<String> NAMES = ConcurrentHashMap.newKeySet();
    private static final long CLOSE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    final SimSettings settings;
    private volatile SimSettings live;
    final Fabric fabric;
    final InetAddress address;
    final int ipv4;
    final Scheduler scheduler;
    final Timer timer;
    final RegionTable regions = new RegionTable();
    final FaultInjector faults = new FaultInjector(this);
    private final SecureRandom random = new SecureRandom();
    private final AtomicInteger qpns = new AtomicInteger(0x11);
    private final AtomicInteger connections = new AtomicInteger();
    private final Set<SimEndpoint> endpoints = ConcurrentHashMap.newKeySet();
    private final Set<SimCompletionQueue> queues = ConcurrentHashMap.newKeySet();
    private final Set<SimListener> listeners = ConcurrentHashMap.newKeySet();
    private volatile PcapWriter capture;
    private volatile boolean closed;

    private SimProvider(SimSettings s) throws IOException {
        String n = claimName(s.name);
        Fabric f;
        try {
            f = Fabric.join(s.fabric, this, s.address);
        } catch (RuntimeException e) {
            NAMES.remove(n);
            throw e;
        }
        this.fabric = f;
        this.address = fabric.addressOf(this);
        this.ipv4 = CaptureSet.ipv4(address.getAddress());
        this.settings = s.withIdentity(n, address.getHostAddress());
        this.live = settings;
        this.timer = new Timer(Scheduler.THREAD_PREFIX + n + "-timer");
        this.scheduler = new Scheduler(n, s.fabricThreads, timer);
        try {
            openCapture(settings);
        } catch (IOException | RuntimeException e) {
            scheduler.stop(CLOSE_TIMEOUT_NANOS);
            fabric.leave(this);
            NAMES.remove(n);
            throw e;
        }
    }

    /** Provider names are unique among live simulated providers ({@code provider.name} is unique per type). */
    private static String claimName(String requested) {
        if (!requested.isEmpty()) {
            if (!NAMES.add(requested)) {
                throw new IllegalArgumentException("invalid configuration: name = " + requested
                        + " is already used by another simulated provider");
            }
            return requested;
        }
        for (;;) {
            String n = "sim" + INSTANCES.getAndIncrement();
            if (NAMES.add(n)) {
                return n;
            }
        }
    }

    /**
     * Creates a provider and joins its fabric.
     *
     * @throws IllegalArgumentException for an address already taken on the fabric
     * @throws IOException when the capture file cannot be opened
     */
    static SimProvider open(SimSettings s) throws IOException {
        return new SimProvider(s);
    }

    SimSettings live() {
        return live;
    }

    /**
     * Applies the settings that can change while the provider runs: latency model, faults, capture
     * and the connect timeout. The caller has checked {@link SimSettings#needsRestart} is false.
     */
    void reconfigure(SimSettings next) throws IOException {
        SimSettings merged = next.withIdentity(settings.name, settings.address);
        if (live.captureChanged(merged)) {
            openCapture(merged);
        }
        live = merged;
    }

    private synchronized void openCapture(SimSettings s) throws IOException {
        PcapWriter old = capture;
        capture = s.captureEnabled ? new PcapWriter(Path.of(s.capturePath), s.captureMaxFileBytes,
                s.captureSnapLength, s.captureMtu) : null;
        if (old != null) {
            old.close();
        }
    }

    PcapWriter capture() {
        return capture;
    }

    /** Flushes the capture file, if any, so that it can be read while the provider runs. */
    void flushCapture() {
        PcapWriter w = capture;
        if (w != null) {
            w.flush();
        }
    }

    int nextConnectionOrdinal() {
        return connections.incrementAndGet();
    }

    /** The faults injected so far (for tests and diagnostics). */
    List<String> injectedFaults() {
        return faults.injected();
    }

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public String name() {
        return settings.name;
    }

    @Override
    public ProviderCapabilities capabilities() {
        return settings.capabilities;
    }

    /** The OSGi service properties of this provider. */
    Map<String, Object> serviceProperties() {
        Map<String, Object> p = settings.capabilities.toServiceProperties();
        p.put(PROP_TYPE, TYPE);
        p.put(PROP_NAME, settings.name);
        p.put("provider.fabric", settings.fabric);
        p.put("provider.address", settings.address);
        return p;
    }

    @Override
    public List<InetAddress> addresses() {
        return List.of(address);
    }

    private void checkOpen(String what) throws RdmaException {
        if (closed) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, what + ": provider " + name() + " is closed");
        }
    }

    @Override
    public CompletionQueue createCompletionQueue(int depth, CompletionNotificationHandler handler) throws RdmaException {
        checkOpen("createCompletionQueue");
        if (depth < 1 || depth > capabilities().maxCompletionQueueDepth()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "createCompletionQueue: depth " + depth + " outside 1.."
                    + capabilities().maxCompletionQueueDepth());
        }
        if (handler == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "createCompletionQueue: handler is null");
        }
        SimCompletionQueue q = new SimCompletionQueue(this, depth, handler);
        queues.add(q);
        if (closed) {
            queues.remove(q);
            throw new RdmaException(RdmaStatus.INVALID_STATE, "createCompletionQueue: provider " + name() + " is closed");
        }
        return q;
    }

    @Override
    public Endpoint createEndpoint(EndpointOptions options, ConnectionListener listener) throws RdmaException {
        return newEndpoint(options, listener, null);
    }

    SimEndpoint newEndpoint(EndpointOptions options, ConnectionListener listener, SimConnectionRequest request)
            throws RdmaException {
        String what = request == null ? "createEndpoint" : "ConnectionRequest.createEndpoint";
        checkOpen(what);
        if (options == null || listener == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": options and listener are required");
        }
        ProviderCapabilities c = capabilities();
        check(what, "sendQueueDepth", options.sendQueueDepth(), c.maxQueueDepth());
        check(what, "receiveQueueDepth", options.receiveQueueDepth(), c.maxQueueDepth());
        check(what, "maxSendSge", options.maxSendSge(), c.maxSge());
        check(what, "maxReceiveSge", options.maxReceiveSge(), c.maxSge());
        if (options.inlineThreshold() > c.inlineLimit()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": inlineThreshold " + options.inlineThreshold()
                    + " exceeds the provider's inline limit " + c.inlineLimit());
        }
        if (request == null && options.localAddress() != null && !addresses().contains(options.localAddress())) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": localAddress "
                    + options.localAddress().getHostAddress() + " is not an address of provider " + name() + " "
                    + addresses());
        }
        for (CompletionQueue q : new CompletionQueue[] {options.sendQueue(), options.receiveQueue()}) {
            if (!(q instanceof SimCompletionQueue) || ((SimCompletionQueue) q).provider != this) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": completion queue " + q
                        + " does not belong to provider " + name());
            }
        }
        SimEndpoint e = new SimEndpoint(this, options, listener, request == null, request,
                qpns.getAndUpdate(v -> v >= 0xFFFFFF ? 0x11 : v + 1), random.nextInt() & 0xFFFFFF, random.nextInt());
        SimCompletionQueue sq = (SimCompletionQueue) options.sendQueue();
        SimCompletionQueue rq = (SimCompletionQueue) options.receiveQueue();
        sq.attach(e);
        try {
            rq.attach(e);
        } catch (RdmaException ex) {
            sq.detach(e);
            throw ex;
        }
        endpoints.add(e);
        if (closed) {
            e.close();
            throw new RdmaException(RdmaStatus.INVALID_STATE, what + ": provider " + name() + " is closed");
        }
        return e;
    }

    private static void check(String what, String name, int value, int max) throws RdmaException {
        if (value > max) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": " + name + " " + value
                    + " exceeds the provider's limit " + max);
        }
    }

    /** The private data of an InfiniBand CM REJ (rdma_cm passes it whole). */
    static final int REJECT_PRIVATE_DATA_SIZE = 148;

    /**
     * Checks private data and returns it as the peer will see it: on InfiniBand and RoCE zero-padded
     * to the fixed size of the CM message that carries it ({@code paddedSize}; rdma_cm hands the
     * receiver the whole field whatever was sent, even when nothing was), on iWARP exactly as sent.
     */
    byte[] checkPrivateData(String what, byte[] privateData, int paddedSize) throws RdmaException {
        if (privateData != null && privateData.length > capabilities().maxPrivateData()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": " + privateData.length
                    + " bytes of private data exceed maxPrivateData " + capabilities().maxPrivateData());
        }
        if (capabilities().transportType().exactPrivateData()) {
            return privateData == null ? SimEndpoint.NO_BYTES : privateData.clone();
        }
        return privateData == null ? new byte[paddedSize] : Arrays.copyOf(privateData, paddedSize);
    }

    void checkDepths(String what, int ird, int ord) throws RdmaException {
        if (ird < 0 || ird > capabilities().maxIrd()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": ird " + ird + " outside 0.." + capabilities().maxIrd());
        }
        if (ord < 0 || ord > capabilities().maxOrd()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + ": ord " + ord + " outside 0.." + capabilities().maxOrd());
        }
    }

    @Override
    public RdmaListener listen(InetSocketAddress local, ConnectionRequestHandler handler) throws RdmaException {
        checkOpen("listen");
        if (local == null || handler == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "listen: address and handler are required");
        }
        if (local.isUnresolved()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "listen: unresolved address " + local);
        }
        SimListener[] made = new SimListener[1];
        fabric.listen(this, local, a -> made[0] = new SimListener(this, a, handler));
        listeners.add(made[0]);
        if (closed) {
            made[0].close();
            throw new RdmaException(RdmaStatus.INVALID_STATE, "listen: provider " + name() + " is closed");
        }
        return made[0];
    }

    void forget(SimEndpoint e) {
        endpoints.remove(e);
    }

    void forget(SimCompletionQueue q) {
        queues.remove(q);
    }

    void forget(SimListener l) {
        listeners.remove(l);
    }

    boolean isClosed() {
        return closed;
    }

    /** Endpoints not yet closed or still ending, for diagnostics and the memory statement. */
    int endpointCount() {
        return endpoints.size();
    }

    /** Completion queues not yet closed, for diagnostics. */
    int completionQueueCount() {
        return queues.size();
    }

    /** Listeners not yet closed, for diagnostics. */
    int listenerCount() {
        return listeners.size();
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (Scheduler.onAnyFabricThread()) {
            // Called from a callback: finish on another thread; fabric threads (of this provider or of
            // the one hosting its connections) must keep running meanwhile.
            // A FutureTask lets go of the provider when the thread ends (see Scheduler.Worker).
            Thread t = new Thread(new FutureTask<>(this::shutdown, null), Scheduler.THREAD_PREFIX + name() + "-closer");
            t.setDaemon(true);
            t.start();
        } else {
            shutdown();
        }
    }

    private void shutdown() {
        long deadline = System.nanoTime() + CLOSE_TIMEOUT_NANOS;
        for (SimListener l : new ArrayList<>(listeners)) {
            l.close();
        }
        List<SimEndpoint> all = new ArrayList<>(endpoints);
        for (SimEndpoint e : all) {
            EndpointState s = e.state();
            if (s == EndpointState.CONNECTING || s == EndpointState.CONNECTED || s == EndpointState.CLOSED) {
                SimConnection c = e.connection;
                if (c != null) {
                    c.requestDisconnect(e);
                }
            }
        }
        // wait until every connection of this provider's endpoints has ended and its events went out
        for (SimEndpoint e : all) {
            SimConnection c = e.connection;
            while (c != null && !c.isTerminated() && System.nanoTime() - deadline < 0) {
                LockSupportSleep.brief();
            }
        }
        scheduler.awaitQuiet(Math.max(1, deadline - System.nanoTime()));
        for (SimEndpoint e : all) {
            e.close();
        }
        scheduler.awaitQuiet(Math.max(1, deadline - System.nanoTime()));
        for (SimCompletionQueue q : new ArrayList<>(queues)) {
            q.shutdown();
        }
        queues.clear();
        endpoints.clear();
        scheduler.stop(Math.max(1, deadline - System.nanoTime()));
        timer.stop();
        synchronized (this) {
            if (capture != null) {
                capture.close();
            }
        }
        fabric.leave(this);
        NAMES.remove(name());
    }

    @Override
    public String toString() {
        return "SimProvider[" + name() + " " + address.getHostAddress() + " on " + settings.fabric + "]";
    }
}
