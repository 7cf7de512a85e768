package org.smbdirect.rdma.verbs.internal;

import java.io.IOException;
import java.lang.System.Logger;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequestHandler;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.TransportType;

import com.ibm.disni.verbs.IbvContext;
import com.ibm.disni.verbs.RdmaCm;
import com.ibm.disni.verbs.RdmaCmId;
import com.ibm.disni.verbs.RdmaEventChannel;
import com.ibm.disni.verbs.impl.NatObject;

/**
 * The verbs provider of one RDMA device (InfiniBand, RoCE or iWARP).
 *
 * <p>Native resources: one rdma_cm event channel and one identifier bound to the device's first
 * address (to reach the device's verbs context, both through DiSNI), and per completion queue a
 * completion channel and a CQ, per endpoint an identifier, a protection domain and a queue pair,
 * per registration a memory region and, for remote access, a memory window. Two threads: the
 * connection thread ({@link CmEventLoop}) and the completion thread ({@link CqEventLoop}).
 */
public final class VerbsProvider implements RdmaProvider {
    static final Logger LOG = System.getLogger("org.smbdirect.rdma.verbs");

    /** The provider type. */
    public static final String TYPE = "verbs";
    /** Service property: the device's IPv4 and IPv6 addresses (String[]). */
    public static final String PROP_ADDRESSES = "provider.addresses";

    // enum rdma_cm_event_type
    static final int CM_ADDR_RESOLVED = 0;
    static final int CM_ADDR_ERROR = 1;
    static final int CM_ROUTE_RESOLVED = 2;
    static final int CM_ROUTE_ERROR = 3;
    static final int CM_CONNECT_REQUEST = 4;
    static final int CM_CONNECT_RESPONSE = 5;
    static final int CM_CONNECT_ERROR = 6;
    static final int CM_UNREACHABLE = 7;
    static final int CM_REJECTED = 8;
    static final int CM_ESTABLISHED = 9;
    static final int CM_DISCONNECTED = 10;
    static final int CM_DEVICE_REMOVAL = 11;
    static final int CM_TIMEWAIT_EXIT = 15;

    // enum ibv_event_type
    private static final int EV_CQ_ERR = 0;
    private static final int EV_QP_FATAL = 1;
    private static final int EV_QP_REQ_ERR = 2;
    private static final int EV_QP_ACCESS_ERR = 3;
    private static final int EV_DEVICE_FATAL = 8;
    private static final int EV_PORT_ERR = 10;

    private static final int IBV_TRANSPORT_IWARP = 1;
    private static final int IBV_LINK_LAYER_ETHERNET = 2;
    /** Private data an InfiniBand/RoCE connect request carries (92 bytes less rdma_cm's header). */
    private static final int IB_PRIVATE_DATA = 56;
    /** Private data of an iWARP MPA request, kept well below MPA's 512 bytes. */
    private static final int IWARP_PRIVATE_DATA = 196;
    private static final int INLINE_PROBE_LIMIT = 1024;
    private static final int IBV_WC_IP_CSUM_OK = 1 << 2;
    private static final int IBV_WC_WITH_INV = 1 << 3;
    private static final long RXE_VENDOR_ID = 0xffffff;

    private final String name;
    private final List<InetAddress> addresses;
    final Settings settings;
    private final TransportType transport;
    private final ProviderCapabilities capabilities;
    final boolean memoryWindows;
    final int maxCqe;
    /**
     * The wc_flags bits that mean "this receive invalidated a token". Soft-RoCE (rdma_rxe, vendor
     * 0xffffff) hands user space the kernel's IB_WC_WITH_INVALIDATE (bit 2, IBV_WC_IP_CSUM_OK to
     * libibverbs) instead of IBV_WC_WITH_INV (bit 3); IP_CSUM_OK never occurs on a reliable
     * connection's receive, so both bits are taken there.
     */
    final int withInvalidateFlags;
    /** The device is Soft-RoCE, whose completion statuses need translating ({@link WcStatus#map}). */
    final boolean softRoce;

    private final RdmaEventChannel channel;
    private final long channelPtr;
    private final RdmaCmId anchor;
    final IbvContext context;
    final long contextPtr;
    final CmEventLoop cmLoop;
    final CqEventLoop cqLoop;

    private final AtomicLong serials = new AtomicLong();
    private final AtomicInteger endpointIds = new AtomicInteger();
    private final Map<Long, Object> cmObjects = new ConcurrentHashMap<>();
    private final Map<Integer, VerbsEndpoint> endpoints = new ConcurrentHashMap<>();
    private final Map<Long, VerbsEndpoint> byQp = new ConcurrentHashMap<>();
    private final Set<VerbsCompletionQueue> queues = ConcurrentHashMap.newKeySet();
    private final Set<VerbsListener> listeners = ConcurrentHashMap.newKeySet();
    private final SecureRandom random = new SecureRandom();
    /**
     * Key bytes drawn from {@link #random} a block at a time (under its lock): each draw of a
     * NativePRNG reads the kernel's generator and mixes in a SHA-1, and every registration of
     * remote memory takes a key.
     */
    private final byte[] keyBytes = new byte[64];
    private int keyBytesUsed = keyBytes.length;
    private final Object closeLock = new Object();
    private volatile boolean closed;

    VerbsProvider(Discovery.Device device, Settings settings) throws RdmaException {
        this.name = device.name;
        this.addresses = device.addresses;
        this.settings = settings;
        RdmaEventChannel ch = null;
        RdmaCmId id = null;
        CmEventLoop cm = null;
        CqEventLoop cq = null;
        try {
            ch = RdmaEventChannel.createEventChannel();
            long chPtr = ((NatObject) ch).getObjId();
            id = ch.createId(RdmaCm.RDMA_PS_TCP);
            VerbsNative.bind(((NatObject) id).getObjId(), new InetSocketAddress(addresses.get(0), 0));
            IbvContext ctx = id.getVerbs();
            long ctxPtr = ((NatObject) ctx).getObjId();
            if (!name.equals(VerbsNative.deviceName(ctxPtr))) {
                throw new RdmaException(RdmaStatus.DEVICE_ERROR, addresses.get(0) + " belongs to "
                        + VerbsNative.deviceName(ctxPtr) + ", not " + name);
            }
            long[] dev = VerbsNative.queryDevice(ctxPtr);
            int inline = settings.inlineLimit == 0 ? 0 : VerbsNative.probeMaxInline(ctxPtr, INLINE_PROBE_LIMIT);
            if (settings.inlineLimit > 0) {
                inline = Math.min(inline, settings.inlineLimit);
            }
            boolean windows = settings.remoteInvalidate && (dev[VerbsNative.DEV_CAP_FLAGS]
                    & (VerbsNative.CAP_MEM_WINDOW_TYPE_2A | VerbsNative.CAP_MEM_WINDOW_TYPE_2B)) != 0
                    && dev[VerbsNative.DEV_MAX_MW] > 0;
            boolean iwarp = dev[VerbsNative.DEV_TRANSPORT] == IBV_TRANSPORT_IWARP;
            this.transport = iwarp ? TransportType.IWARP
                    : dev[VerbsNative.DEV_LINK_LAYER] == IBV_LINK_LAYER_ETHERNET ? TransportType.ROCE
                    : TransportType.INFINIBAND;
            this.maxCqe = (int) Math.min(Integer.MAX_VALUE, dev[VerbsNative.DEV_MAX_CQE]);
            long sge = dev[VerbsNative.DEV_MAX_SGE];
            if (dev[VerbsNative.DEV_MAX_SGE_RD] > 0) {
                sge = Math.min(sge, dev[VerbsNative.DEV_MAX_SGE_RD]);
            }
            int reserve = windows ? SendQueueLedger.BIND_RESERVE : 0;
            long queueDepth = Math.min(dev[VerbsNative.DEV_MAX_QP_WR] - reserve, (maxCqe - reserve) / 2L);
            this.memoryWindows = windows;
            this.softRoce = dev[VerbsNative.DEV_VENDOR_ID] == RXE_VENDOR_ID;
            this.withInvalidateFlags = IBV_WC_WITH_INV | (softRoce ? IBV_WC_IP_CSUM_OK : 0);
            this.capabilities = ProviderCapabilities.builder()
                    .rdmaRead(settings.rdmaRead)
                    .remoteInvalidate(windows)
                    .inlineLimit(inline)
                    .maxSge((int) Math.max(1, Math.min(sge, 256)))
                    .maxRegionSize(Math.min(dev[VerbsNative.DEV_MAX_MR_SIZE], Integer.MAX_VALUE))
                    // 255 means "the most the device allows" to rdma_cm, so it is never a value of ours.
                    .maxIrd((int) Math.min(dev[VerbsNative.DEV_MAX_QP_RD_ATOM], 254))
                    .maxOrd((int) Math.min(dev[VerbsNative.DEV_MAX_QP_INIT_RD_ATOM], 254))
                    .maxQueueDepth((int) Math.max(1, Math.min(queueDepth, Integer.MAX_VALUE)))
                    .maxCompletionQueueDepth(Math.max(1, maxCqe))
                    .maxPrivateData(iwarp ? IWARP_PRIVATE_DATA : IB_PRIVATE_DATA)
                    // decides where private data is the section 6 IRD/ORD header (iWARP) and the default port
                    .transportType(transport)
                    .linkSpeed(linkSpeed(dev[VerbsNative.DEV_ACTIVE_SPEED], dev[VerbsNative.DEV_ACTIVE_WIDTH]))
                    .build();
            this.channel = ch;
            this.channelPtr = chPtr;
            this.anchor = id;
            this.context = ctx;
            this.contextPtr = ctxPtr;
            cm = new CmEventLoop(this, chPtr, VerbsNative.eventChannelFd(chPtr), VerbsNative.asyncFd(ctxPtr));
            cq = new CqEventLoop(this);
            this.cmLoop = cm;
            this.cqLoop = cq;
        } catch (IOException | RuntimeException | LinkageError e) {
            destroyQuietly(id, ch);
            if (e instanceof NativeException) {
                throw ((NativeException) e).toRdmaException("opening " + name);
            }
            throw new RdmaException(RdmaStatus.DEVICE_ERROR, "opening " + name + ": " + e, e);
        } catch (RdmaException e) {
            destroyQuietly(id, ch);
            throw e;
        }
        cm.start();
        cq.start();
    }

    private static void destroyQuietly(RdmaCmId id, RdmaEventChannel ch) {
        try {
            if (id != null) {
                id.destroyId();
            }
            if (ch != null) {
                ch.destroyEventChannel();
            }
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "releasing rdma_cm resources failed: " + e.getMessage());
        }
    }

    @Override
    public String type() {
        return TYPE;
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The device's transport.
     *
     * @return InfiniBand, RoCE or iWARP, from the device's transport and link layer
     */
    public TransportType transport() {
        return transport;
    }

    @Override
    public ProviderCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public List<InetAddress> addresses() {
        return List.copyOf(addresses);
    }

    /**
     * The service properties of this provider: type, name, capabilities, transport and addresses.
     *
     * @return a new mutable map
     */
    public Map<String, Object> serviceProperties() {
        Map<String, Object> p = capabilities.toServiceProperties();
        p.put(PROP_TYPE, TYPE);
        p.put(PROP_NAME, name);
        p.put(PROP_ADDRESSES, addresses.stream().map(InetAddress::getHostAddress).toArray(String[]::new));
        return p;
    }

    private void checkOpen() throws RdmaException {
        if (closed) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the provider " + name + " is closed");
        }
    }

    @Override
    public CompletionQueue createCompletionQueue(int depth, CompletionNotificationHandler handler) throws RdmaException {
        checkOpen();
        if (depth < 1 || depth > capabilities.maxCompletionQueueDepth()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "depth " + depth + " is outside 1.."
                    + capabilities.maxCompletionQueueDepth());
        }
        if (handler == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "handler is null");
        }
        VerbsCompletionQueue cq = new VerbsCompletionQueue(this, depth, handler);
        queues.add(cq);
        cqLoop.add(cq);
        if (closed) {
            cqLoop.remove(cq);
            cq.releaseNative();
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the provider " + name + " is closed");
        }
        return cq;
    }

    private void checkOptions(EndpointOptions options, Object listener) throws RdmaException {
        if (options == null || listener == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "options and listener are required");
        }
        for (CompletionQueue q : List.of(options.sendQueue(), options.receiveQueue())) {
            if (!(q instanceof VerbsCompletionQueue) || ((VerbsCompletionQueue) q).provider() != this) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "the completion queue " + q
                        + " does not belong to " + name);
            }
            if (((VerbsCompletionQueue) q).isClosed()) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "the completion queue " + q + " is closed");
            }
        }
        check("sendQueueDepth", options.sendQueueDepth(), capabilities.maxQueueDepth());
        check("receiveQueueDepth", options.receiveQueueDepth(), capabilities.maxQueueDepth());
        check("maxSendSge", options.maxSendSge(), capabilities.maxSge());
        check("maxReceiveSge", options.maxReceiveSge(), capabilities.maxSge());
        if (options.inlineThreshold() > capabilities.inlineLimit()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "inlineThreshold " + options.inlineThreshold()
                    + " exceeds " + name + "'s inline limit of " + capabilities.inlineLimit());
        }
    }

    private static void check(String what, int value, int max) throws RdmaException {
        if (value > max) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, what + " " + value + " exceeds " + max);
        }
    }

    @Override
    public Endpoint createEndpoint(EndpointOptions options, ConnectionListener listener) throws RdmaException {
        checkOpen();
        checkOptions(options, listener);
        InetAddress from = options.localAddress() == null ? addresses.get(0) : own(options.localAddress());
        long serial = newSerial();
        long cmId = newCmId(serial);
        try {
            // Bound now, so that the queue pair exists (and receives can be posted) before connecting.
            VerbsNative.bind(cmId, new InetSocketAddress(from, 0));
            VerbsEndpoint ep = new VerbsEndpoint(this, newEndpointId(), serial, cmId, true, options, listener, null);
            register(ep);
            return ep;
        } catch (NativeException e) {
            destroyIdQuietly(cmId);
            throw e.toRdmaException("binding an rdma_cm identifier to " + from.getHostAddress());
        } catch (RdmaException | RuntimeException e) {
            destroyIdQuietly(cmId);
            throw e;
        }
    }

    VerbsEndpoint newPassiveEndpoint(VerbsConnectionRequest request, EndpointOptions options,
            ConnectionListener listener) throws RdmaException {
        checkOpen();
        checkOptions(options, listener);
        VerbsEndpoint ep = new VerbsEndpoint(this, newEndpointId(), request.serial, request.cmId, false, options,
                listener, request);
        register(ep);
        return ep;
    }

    private int newEndpointId() {
        int id;
        do {
            id = endpointIds.incrementAndGet() & Integer.MAX_VALUE;
        } while (id == 0 || endpoints.containsKey(id));
        return id;
    }

    private void register(VerbsEndpoint ep) throws RdmaException {
        endpoints.put(ep.id, ep);
        byQp.put(ep.qp, ep);
        cmObjects.put(ep.serial, ep);
        if (closed) {
            ep.connection.shutdown();
            ep.releaseNative();
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the provider " + name + " is closed");
        }
    }

    void unregister(VerbsEndpoint ep) {
        endpoints.remove(ep.id, ep);
        byQp.remove(ep.qp, ep);
        cmObjects.remove(ep.serial, ep);
    }

    /** How many times this provider's live endpoints handed send-queue requests to the device (for tests). */
    long postSendCalls() {
        long n = 0;
        for (VerbsEndpoint e : endpoints.values()) {
            n += e.sends.postSendCalls();
        }
        return n;
    }

    VerbsEndpoint endpoint(int id) {
        return endpoints.get(id);
    }

    /** A new rdma_cm identifier on the provider's event channel, its events tagged {@code serial}. */
    private long newCmId(long serial) throws RdmaException {
        try {
            return VerbsNative.createCmId(channelPtr, serial);
        } catch (NativeException e) {
            throw e.toRdmaException("creating an rdma_cm identifier");
        }
    }

    long newSerial() {
        return serials.incrementAndGet();
    }

    void remember(long serial, Object o) {
        cmObjects.put(serial, o);
    }

    void forgetSerial(long serial, Object o, Object alternative) {
        cmObjects.remove(serial, o);
        if (alternative != null) {
            cmObjects.remove(serial, alternative);
        }
    }

    void forget(VerbsCompletionQueue cq) {
        queues.remove(cq);
    }

    void forget(VerbsListener listener) {
        listeners.remove(listener);
    }

    private static void destroyIdQuietly(long cmId) {
        try {
            VerbsNative.destroyCmId(cmId);
        } catch (NativeException e) {
            LOG.log(Level.WARNING, e.getMessage());
        }
    }

    /** A fresh key byte for a type 2 window's rkey, so that tokens cannot be guessed. */
    int newWindowKey(int rkey) {
        int old = rkey & 0xff;
        int key;
        synchronized (random) {
            do {
                if (keyBytesUsed == keyBytes.length) {
                    random.nextBytes(keyBytes);
                    keyBytesUsed = 0;
                }
                key = keyBytes[keyBytesUsed++] & 0xff;
            } while (key == old);
        }
        return (rkey & ~0xff) | key;
    }

    /**
     * This provider's own instance of an address given to it: a link-local IPv6 address named
     * without its scope takes the scope of the device's interface.
     */
    private InetAddress own(InetAddress address) throws RdmaException {
        for (InetAddress a : addresses) {
            if (a.equals(address)) {
                return a;
            }
        }
        throw new RdmaException(RdmaStatus.INVALID_PARAMETER, address.getHostAddress() + " is not an address of "
                + name + " " + addresses);
    }

    @Override
    public RdmaListener listen(InetSocketAddress local, ConnectionRequestHandler handler) throws RdmaException {
        checkOpen();
        if (handler == null || local == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "address and handler are required");
        }
        if (local.isUnresolved()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, local + " is not an address of " + name + " "
                    + addresses);
        }
        InetAddress at = own(local.getAddress());
        long serial = newSerial();
        long cmId = newCmId(serial);
        try {
            VerbsNative.bind(cmId, new InetSocketAddress(at, local.getPort()));
            VerbsNative.listen(cmId, 128);
        } catch (NativeException e) {
            destroyIdQuietly(cmId);
            throw e.toRdmaException("listening on " + local);
        }
        InetSocketAddress bound = VerbsNative.socketAddress(VerbsNative.address(cmId, false));
        VerbsListener l = new VerbsListener(this, serial, cmId, bound != null ? bound : local, handler);
        cmObjects.put(serial, l);
        listeners.add(l);
        if (closed) {
            l.close();
            throw new RdmaException(RdmaStatus.INVALID_STATE, "the provider " + name + " is closed");
        }
        return l;
    }

    // ------------------------------------------------------------------ events (connection thread)

    void onCmEvent(ByteBuffer ev) {
        int type = ev.getInt(VerbsNative.EV_TYPE);
        int status = ev.getInt(VerbsNative.EV_STATUS);
        long id = ev.getLong(VerbsNative.EV_ID);
        if (type == CM_CONNECT_REQUEST) {
            Object l = cmObjects.get(ev.getLong(VerbsNative.EV_LISTEN_CONTEXT));
            if (l instanceof VerbsListener && !((VerbsListener) l).isClosed() && !closed) {
                ((VerbsListener) l).onRequest(ev, id);
            } else {
                try {
                    VerbsNative.reject(id, null);
                } catch (NativeException e) {
                    LOG.log(Level.DEBUG, e.getMessage());
                }
                destroyIdQuietly(id);
            }
            return;
        }
        Object target = cmObjects.get(ev.getLong(VerbsNative.EV_ID_CONTEXT));
        if (target instanceof VerbsEndpoint) {
            VerbsEndpoint ep = (VerbsEndpoint) target;
            VerbsConnectionRequest unanswered = ep.connection.unansweredRequest();
            if (unanswered != null) {
                target = unanswered;
            } else {
                onEndpointEvent(ep.connection, type, status, ev);
                return;
            }
        }
        if (target instanceof VerbsConnectionRequest) {
            if (type == CM_DISCONNECTED || type == CM_REJECTED || type == CM_CONNECT_ERROR || type == CM_UNREACHABLE
                    || type == CM_DEVICE_REMOVAL) {
                ((VerbsConnectionRequest) target).expire("the peer gave up (rdma_cm event " + type + ")", false);
            }
        } else if (type == CM_DEVICE_REMOVAL) {
            LOG.log(Level.WARNING, "RDMA device " + name + " is being removed");
        }
    }

    private void onEndpointEvent(EndpointConnection connection, int type, int status, ByteBuffer ev) {
        switch (type) {
            case CM_ADDR_RESOLVED:
                connection.onAddressResolved();
                break;
            case CM_ROUTE_RESOLVED:
                connection.onRouteResolved();
                break;
            case CM_ADDR_ERROR:
            case CM_ROUTE_ERROR:
            case CM_UNREACHABLE:
            case CM_CONNECT_ERROR:
                connection.onAttemptError(type, status);
                break;
            case CM_REJECTED:
                connection.onRejected(status, privateData(ev));
                break;
            case CM_ESTABLISHED:
                connection.onEstablished(ev.getInt(VerbsNative.EV_RESPONDER_RESOURCES),
                        ev.getInt(VerbsNative.EV_INITIATOR_DEPTH), privateData(ev));
                break;
            case CM_DISCONNECTED:
                connection.onDisconnected();
                break;
            case CM_DEVICE_REMOVAL:
                connection.onDeviceRemoval();
                break;
            default:
                break; // CONNECT_RESPONSE does not occur with a queue pair; TIMEWAIT_EXIT, ADDR_CHANGE: nothing to do
        }
    }

    private static byte[] privateData(ByteBuffer ev) {
        byte[] data = new byte[ev.getInt(VerbsNative.EV_PRIVATE_DATA_LEN)];
        ev.get(VerbsNative.EV_PRIVATE_DATA, data);
        return data;
    }

    void onAsyncEvent(int type, long object) {
        switch (type) {
            case EV_CQ_ERR:
                for (VerbsCompletionQueue cq : queues) {
                    if (cq.cqPtr == object) {
                        cq.onDeviceOverflow();
                    }
                }
                break;
            case EV_QP_FATAL:
            case EV_QP_REQ_ERR:
            case EV_QP_ACCESS_ERR:
                VerbsEndpoint ep = byQp.get(object);
                if (ep != null) {
                    ep.connection.requestFailed(type == EV_QP_ACCESS_ERR ? RdmaStatus.LOCAL_PROTECTION_ERROR
                            : type == EV_QP_REQ_ERR ? RdmaStatus.LOCAL_OPERATION_ERROR : RdmaStatus.DEVICE_ERROR,
                            "the device reported a queue pair error (ibv_event_type " + type + ")");
                }
                break;
            case EV_DEVICE_FATAL:
                LOG.log(Level.ERROR, "RDMA device " + name + " reported a fatal error");
                for (VerbsEndpoint e : endpoints.values()) {
                    e.connection.requestFailed(RdmaStatus.DEVICE_ERROR, "the RDMA device " + name + " failed");
                }
                break;
            case EV_PORT_ERR:
                LOG.log(Level.WARNING, "RDMA device " + name + ": port error");
                break;
            default:
                break;
        }
    }

    // ------------------------------------------------------------------ shutdown

    @Override
    public void close() {
        synchronized (closeLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        long timeout = settings.closeTimeoutMillis;
        for (VerbsListener l : List.copyOf(listeners)) {
            cmLoop.executeAndWait(l::destroy, timeout + 1000);
        }
        List<VerbsEndpoint> all = new ArrayList<>(endpoints.values());
        for (VerbsEndpoint ep : all) {
            ep.connection.shutdown();
        }
        // Let rdma_cm finish the disconnections (DREQ/DREP): destroying identifiers in the middle of
        // them makes the kernel wait out its retries.
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout);
        while (!cmLoop.inLoop() && System.nanoTime() - deadline < 0
                && !all.stream().allMatch(ep -> ep.connection.isTerminated())) {
            sleep(5);
        }
        // Every endpoint that began connecting hears onDisconnected, on the connection thread.
        cmLoop.executeAndWait(() -> all.forEach(ep -> ep.connection.deliverTerminal()), timeout + 1000);
        while (System.nanoTime() - deadline < 0 && !all.stream().allMatch(VerbsEndpoint::isDrained)) {
            for (VerbsCompletionQueue cq : queues) {
                cq.reap();
            }
            if (!all.stream().allMatch(VerbsEndpoint::isDrained)) {
                sleep(5);
            }
        }
        cmLoop.executeAndWait(() -> all.forEach(VerbsEndpoint::releaseNative), timeout + 1000);
        // Notifications for the flushed requests are delivered before the completion thread ends.
        cqLoop.stop(timeout + 1000);
        cmLoop.stop(timeout + 1000);
        for (VerbsEndpoint ep : all) {
            ep.releaseNative();
        }
        for (VerbsCompletionQueue cq : List.copyOf(queues)) {
            cq.releaseNative();
        }
        queues.clear();
        cmObjects.clear();
        if (cmLoop.inLoop()) {
            // closed from a connection listener: the channel goes when this thread ends
            cmLoop.onExit(() -> destroyQuietly(anchor, channel));
        } else if (cmLoop.isAlive()) {
            // Its thread is stuck in a listener and may still read the channel: leave it rather
            // than free it under the thread.
            LOG.log(Level.WARNING, "the connection thread of provider " + name + " did not end in time; its "
                    + "rdma_cm event channel is left open");
        } else {
            destroyQuietly(anchor, channel);
        }
        cqLoop.closeFds();
        cmLoop.closeFds();
        if (cqLoop.isAlive()) {
            LOG.log(Level.WARNING, "the completion thread of provider " + name + " did not end in time");
        }
    }

    boolean isClosed() {
        return closed;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "VerbsProvider[" + name + ", " + transport + ", " + addresses + "]";
    }

    /**
     * The link speed of port 1 from its active speed and width (ibv_port_attr), as SMB3
     * multichannel reports it: lanes times the data rate per lane.
     *
     * @param activeSpeed IBV_SPEED_*: 1 SDR, 2 DDR, 4 QDR, 8 FDR10, 16 FDR, 32 EDR, 64 HDR, 128 NDR, 256 XDR
     * @param activeWidth IBV_WIDTH_*: 1 1x, 2 4x, 4 8x, 8 12x, 16 2x
     * @return bits per second, 0 when the port does not say
     */
    static long linkSpeed(long activeSpeed, long activeWidth) {
        long lane;
        switch ((int) activeSpeed) {
            case 1:
                lane = 2_500_000_000L;
                break;
            case 2:
                lane = 5_000_000_000L;
                break;
            case 4:
            case 8:
                lane = 10_000_000_000L;
                break;
            case 16:
                lane = 14_000_000_000L;
                break;
            case 32:
                lane = 25_000_000_000L;
                break;
            case 64:
                lane = 50_000_000_000L;
                break;
            case 128:
                lane = 100_000_000_000L;
                break;
            case 256:
                lane = 200_000_000_000L;
                break;
            default:
                return 0;
        }
        int lanes;
        switch ((int) activeWidth) {
            case 1:
                lanes = 1;
                break;
            case 2:
                lanes = 4;
                break;
            case 4:
                lanes = 8;
                break;
            case 8:
                lanes = 12;
                break;
            case 16:
                lanes = 2;
                break;
            default:
                return 0;
        }
        return lane * lanes;
    }
}
