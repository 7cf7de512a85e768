package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.function.Executable;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;

/**
 * The base of every area of the kit: opens a fresh {@link ProviderPair} before each test, closes it
 * after, checks the listener and notification guarantees of everything the test created, and
 * offers the helpers the tests share.
 */
public abstract class ProviderTck {
    private ProviderPair pair;
    private final List<AutoCloseable> resources = new ArrayList<>();
    private final List<EventRecorder> recorders = Collections.synchronizedList(new ArrayList<>());
    private final List<CqProbe> probes = Collections.synchronizedList(new ArrayList<>());

    /** For subclasses. */
    protected ProviderTck() {
    }

    /**
     * The provider module's fixture.
     *
     * @return the fixture; may be the same object every time
     */
    protected abstract ProviderFixture fixture();

    /**
     * Opens the providers for the test.
     *
     * @throws Exception from the fixture
     */
    @BeforeEach
    protected final void openProviders() throws Exception {
        pair = fixture().open();
        assertNotNull(pair, "fixture().open() returned null");
    }

    /**
     * Checks the guarantees of everything the test created, then releases it.
     *
     * @throws Exception from closing
     */
    @AfterEach
    protected final void closeProviders() throws Exception {
        List<String> violations = new ArrayList<>();
        synchronized (recorders) {
            for (EventRecorder r : recorders) {
                violations.addAll(r.violations());
            }
        }
        synchronized (probes) {
            for (CqProbe p : probes) {
                violations.addAll(p.violations());
            }
        }
        for (int i = resources.size() - 1; i >= 0; i--) {
            try {
                resources.get(i).close();
            } catch (Exception e) {
                // the test may have closed it already or the provider may be gone
            }
        }
        resources.clear();
        if (pair != null) {
            pair.close();
            pair = null;
        }
        if (!violations.isEmpty()) {
            fail("provider broke listener/notification guarantees: " + violations);
        }
    }

    // ---------------------------------------------------------------- providers

    /**
     * The test's providers.
     *
     * @return the pair
     */
    protected final ProviderPair pair() {
        return pair;
    }

    /**
     * The active side's provider.
     *
     * @return the provider
     */
    protected final RdmaProvider client() {
        return pair.client();
    }

    /**
     * The passive side's provider.
     *
     * @return the provider
     */
    protected final RdmaProvider server() {
        return pair.server();
    }

    /**
     * The capabilities of the active side's provider.
     *
     * @return the capabilities
     */
    protected final ProviderCapabilities caps() {
        return pair.client().capabilities();
    }

    /**
     * Opens a further pair without a capability, closed after the test; skips the test (with the
     * fixture's reason) when the implementation cannot be configured so.
     *
     * @param capability the capability to leave out
     * @return the pair
     * @throws Exception from the fixture
     */
    protected final ProviderPair openWithout(Capability capability) throws Exception {
        Optional<ProviderPair> p = fixture().openWithout(capability);
        Assumptions.assumeTrue(p.isPresent(), () -> fixture().whyNotWithout(capability));
        return track(p.get());
    }

    /**
     * Opens a further pair with every capability, closed after the test.
     *
     * @return the pair
     * @throws Exception from the fixture
     */
    protected final ProviderPair openAnother() throws Exception {
        return track(fixture().open());
    }

    /**
     * Closes a resource after the test.
     *
     * @param <T> its type
     * @param resource the resource
     * @return the resource
     */
    protected final <T extends AutoCloseable> T track(T resource) {
        resources.add(resource);
        return resource;
    }

    /**
     * Creates a completion queue with a probe; checked and closed after the test.
     *
     * @param provider the provider
     * @param depth its depth
     * @param name for messages
     * @return the probe
     * @throws RdmaException from the provider
     */
    protected final CqProbe probe(RdmaProvider provider, int depth, String name) throws RdmaException {
        CqProbe p = CqProbe.create(provider, depth, name);
        probes.add(p);
        track(p.queue());
        return p;
    }

    /**
     * Creates an event recorder that is checked after the test.
     *
     * @param name for messages
     * @return the recorder
     */
    protected final EventRecorder recorder(String name) {
        EventRecorder r = new EventRecorder(name);
        recorders.add(r);
        return r;
    }

    // ---------------------------------------------------------------- connections

    /**
     * Connects a client endpoint to a server endpoint with default settings and waits until both
     * are established.
     *
     * @return the link
     * @throws Exception when any step fails
     */
    protected final Link link() throws Exception {
        return link(pair, new LinkSpec());
    }

    /**
     * Connects with the given settings and waits until both sides are established.
     *
     * @param spec the settings
     * @return the link
     * @throws Exception when any step fails
     */
    protected final Link link(LinkSpec spec) throws Exception {
        return link(pair, spec);
    }

    /**
     * Connects between the providers of another pair.
     *
     * @param providers the pair
     * @param spec the settings
     * @return the link
     * @throws Exception when any step fails
     */
    protected final Link link(ProviderPair providers, LinkSpec spec) throws Exception {
        RdmaProvider cp = providers.client();
        RdmaProvider sp = providers.server();
        Side client = side("client", cp, spec, spec.client, null);
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(sp.listen(providers.listenAddress(), requests::add));
        if (spec.beforeConnect != null) {
            spec.beforeConnect.accept(client);
        }
        client.endpoint().connect(listener.localAddress(), spec.connectData,
                spec.connectIrd >= 0 ? spec.connectIrd : Math.min(4, cp.capabilities().maxIrd()),
                spec.connectOrd >= 0 ? spec.connectOrd : Math.min(4, cp.capabilities().maxOrd()));
        ConnectionRequest request = nextRequest(requests);
        Side server = side("server", sp, spec, spec.server, request);
        if (spec.beforeAccept != null) {
            spec.beforeAccept.accept(server);
        }
        request.accept(server.endpoint(), spec.acceptData,
                spec.acceptIrd >= 0 ? spec.acceptIrd : Math.min(4, sp.capabilities().maxIrd()),
                spec.acceptOrd >= 0 ? spec.acceptOrd : Math.min(4, sp.capabilities().maxOrd()));
        client.events().awaitEstablished();
        server.events().awaitEstablished();
        assertEquals(EndpointState.CONNECTED, client.endpoint().state());
        assertEquals(EndpointState.CONNECTED, server.endpoint().state());
        return new Link(client, server, listener, request);
    }

    /**
     * Creates an idle side (endpoint with fresh queues) on a provider.
     *
     * @param name for messages
     * @param provider the provider
     * @param spec queue depth and sharing
     * @param options adjusts the endpoint options
     * @param request the request to create it for, or {@code null} for an active endpoint
     * @return the side
     * @throws RdmaException from the provider
     */
    protected final Side side(String name, RdmaProvider provider, LinkSpec spec,
            java.util.function.UnaryOperator<EndpointOptions.Builder> options, ConnectionRequest request)
            throws RdmaException {
        CqProbe send = probe(provider, spec.cqDepth, name + ".sendCq");
        CqProbe recv = spec.sharedCq ? send
                : request != null && spec.serverRecvCq != null ? spec.serverRecvCq
                        : probe(provider, spec.cqDepth, name + ".recvCq");
        EventRecorder events = recorder(name);
        EndpointOptions o = options.apply(EndpointOptions.builder(send.queue(), recv.queue())).build();
        Endpoint e = request == null ? provider.createEndpoint(o, events) : request.createEndpoint(o, events);
        track(e);
        return new Side(name, e, events, send, recv);
    }

    /**
     * Waits for the next connection request a listener's handler queued.
     *
     * @param requests the handler's queue
     * @return the request
     * @throws InterruptedException when interrupted
     */
    protected static ConnectionRequest nextRequest(BlockingQueue<ConnectionRequest> requests) throws InterruptedException {
        ConnectionRequest r = requests.poll(Tck.timeout().toMillis(), TimeUnit.MILLISECONDS);
        if (r == null) {
            fail("no connection request arrived within " + Tck.timeout());
        }
        return r;
    }

    /**
     * An address of the passive side's provider where nobody listens.
     *
     * @return the address of a listener that was opened and closed again
     * @throws RdmaException from the provider
     */
    protected final InetSocketAddress closedListenerAddress() throws RdmaException {
        RdmaListener l = server().listen(pair.listenAddress(), r -> { });
        InetSocketAddress a = l.localAddress();
        l.close();
        return a;
    }

    // ---------------------------------------------------------------- bytes and checks

    /**
     * A direct buffer filled with a pattern.
     *
     * @param size bytes
     * @param seed varies the pattern
     * @return the buffer, position 0, limit {@code size}
     */
    protected static ByteBuffer pattern(int size, int seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(size);
        for (int i = 0; i < size; i++) {
            b.put(i, (byte) (seed * 31 + i * 7 + (i >>> 8)));
        }
        return b;
    }

    /**
     * Fills a region's bytes with a pattern.
     *
     * @param r the region
     * @param seed varies the pattern
     */
    protected static void fill(MemoryRegion r, int seed) {
        ByteBuffer b = r.buffer();
        ByteBuffer p = pattern(r.length(), seed);
        b.put(p);
    }

    /**
     * Copies bytes out of a region.
     *
     * @param r the region
     * @param offset the first byte
     * @param length the count
     * @return the bytes
     */
    protected static byte[] bytes(MemoryRegion r, int offset, int length) {
        byte[] a = new byte[length];
        r.buffer().get(offset, a, 0, length);
        return a;
    }

    /**
     * The bytes of a pattern.
     *
     * @param size bytes
     * @param seed the pattern's seed
     * @return the bytes
     */
    protected static byte[] patternBytes(int size, int seed) {
        byte[] a = new byte[size];
        pattern(size, seed).get(0, a, 0, size);
        return a;
    }

    /**
     * Checks that two byte ranges are equal.
     *
     * @param expected the expected bytes
     * @param actual the actual bytes
     * @param what for the message
     */
    protected static void assertBytes(byte[] expected, byte[] actual, String what) {
        assertArrayEquals(expected, actual, what);
    }

    /**
     * Checks that a call fails at once with the given status.
     *
     * @param status the expected status
     * @param call the call
     * @return the exception
     */
    protected static RdmaException assertFails(RdmaStatus status, Executable call) {
        RdmaException e = assertThrows(RdmaException.class, call);
        assertEquals(status, e.status(), () -> "wrong status: " + e.getMessage());
        return e;
    }

    /**
     * Checks that a link still works both ways: a send each way arrives.
     *
     * @param link the link
     * @throws Exception when it does not
     */
    protected static void assertRoundTrip(Link link) throws Exception {
        for (Side[] d : new Side[][] {{link.client(), link.server()}, {link.server(), link.client()}}) {
            Side from = d[0];
            Side to = d[1];
            MemoryRegion in = to.register(64, org.smbdirect.rdma.Access.LOCAL_WRITE);
            MemoryRegion out = from.register(64, 0);
            fill(out, 99);
            to.postReceive("rt-recv", in);
            from.send("rt-send", out, 0, 48, 0);
            Completion s = from.sendCq().next();
            assertEquals(RdmaStatus.SUCCESS, s.status(), "round trip send " + from.name() + " -> " + to.name());
            Completion r = to.recvCq().next();
            assertEquals(RdmaStatus.SUCCESS, r.status(), "round trip receive at " + to.name());
            assertEquals(48, r.bytes());
            assertBytes(bytes(out, 0, 48), bytes(in, 0, 48), "round trip data");
            to.endpoint().deregister(in);
            from.endpoint().deregister(out);
        }
    }
}
