package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.TransportType;
import org.smbdirect.rdma.RdmaStatus;

/**
 * The connection service: connect, accept, reject, private data, IRD/ORD, disconnect, close, and
 * the events of {@link org.smbdirect.rdma.ConnectionListener}: at most one ESTABLISHED, then
 * exactly one terminal event, in order, on provider threads.
 */
public abstract class ConnectionTck extends ProviderTck {

    /** For subclasses. */
    protected ConnectionTck() {
    }

    private Side idleClient(String name) throws Exception {
        return side(name, client(), new LinkSpec(), b -> b, null);
    }

    /**
     * Both sides see exactly ESTABLISHED, on a provider thread, and agree on addresses.
     *
     * @throws Exception on failure
     */
    @Test
    public void connect_accept_bothSidesEstablishedOnce_withAddresses() throws Exception {
        Link l = link();
        Endpoint c = l.client().endpoint();
        Endpoint s = l.server().endpoint();
        assertEquals(List.of(EventRecorder.Kind.ESTABLISHED), l.client().events().kinds());
        assertEquals(List.of(EventRecorder.Kind.ESTABLISHED), l.server().events().kinds());
        assertNotSame(Thread.currentThread(), l.client().events().events().get(0).thread());
        assertEquals(l.listener().localAddress(), c.remoteAddress(), "client's remote address is the listener's");
        assertEquals(l.listener().localAddress(), s.localAddress(), "server's local address is the listener's");
        assertNotNull(c.localAddress());
        assertEquals(c.localAddress(), s.remoteAddress(), "server sees the client's local address");
        assertEquals(c.localAddress(), l.request().remoteAddress());
        assertEquals(l.listener().localAddress(), l.request().localAddress());
        assertEquals(client(), c.provider());
        assertEquals(server(), s.provider());
    }

    /**
     * A listener asked for port 0 gets a real port; the same address cannot be listened on twice.
     *
     * @throws Exception on failure
     */
    @Test
    public void listen_portZeroPicksPort_sameAddressTwiceIsAddressInUse() throws Exception {
        RdmaListener l = track(server().listen(pair().listenAddress(), r -> { }));
        InetSocketAddress a = l.localAddress();
        assertNotEquals(0, a.getPort(), "port 0 must be replaced by the chosen port");
        assertFails(RdmaStatus.ADDRESS_IN_USE, () -> server().listen(a, r -> { }));
        l.close();
        l.close(); // idempotent
        track(server().listen(a, r -> { })); // free again
    }

    /** The private data of an InfiniBand CM REJ, as rdma_cm delivers it on InfiniBand and RoCE. */
    static final int REJECT_PRIVATE_DATA_SIZE = 148;

    /**
     * Private data of the request reaches the passive side; private data of the acceptance
     * reaches the active side; the full {@code maxPrivateData} fits. It arrives as the transport
     * delivers it: exactly on iWARP, zero-padded to the CM message's fixed size on InfiniBand and
     * RoCE ({@link TransportType#requestPrivateDataSize()}, {@link TransportType#replyPrivateDataSize()}).
     *
     * @throws Exception on failure
     */
    @Test
    public void privateData_travelsWithRequestAndAcceptance() throws Exception {
        int max = caps().maxPrivateData();
        byte[] request = Bytes.pattern(max, 1);
        byte[] accept = Bytes.pattern(Math.min(max, server().capabilities().maxPrivateData()), 2);
        Link l = link(new LinkSpec().connectData(request).acceptData(accept));
        TransportType t = caps().transportType();
        assertDelivered(request, t.requestPrivateDataSize(), t, l.request().peerPrivateData());
        assertDelivered(request, t.requestPrivateDataSize(), t, l.server().endpoint().peerPrivateData());
        assertDelivered(accept, t.replyPrivateDataSize(), t, l.client().endpoint().peerPrivateData());
        byte[] copy = l.client().endpoint().peerPrivateData();
        if (copy.length > 0) {
            copy[0] ^= 1;
            assertDelivered(accept, t.replyPrivateDataSize(), t, l.client().endpoint().peerPrivateData());
        }
    }

    /**
     * No private data sent: on iWARP none arrives; on InfiniBand and RoCE the whole fixed-size
     * field arrives, all zeros (what made an MS-SMBD IRD/ORD header of zeros appear where none was
     * sent).
     *
     * @throws Exception on failure
     */
    @Test
    public void privateData_noneSent_arrivesEmptyOrAsZeroPadding() throws Exception {
        Link l = link(new LinkSpec().connectData(null).acceptData(null));
        TransportType t = caps().transportType();
        assertDelivered(new byte[0], t.requestPrivateDataSize(), t, l.request().peerPrivateData());
        assertDelivered(new byte[0], t.replyPrivateDataSize(), t, l.client().endpoint().peerPrivateData());
    }

    /**
     * The provider names its transport in its capabilities and its service properties, and each
     * endpoint reports the same.
     *
     * @throws Exception on failure
     */
    @Test
    public void transportType_reportedByProviderAndEndpoints() throws Exception {
        TransportType t = caps().transportType();
        assertNotNull(t);
        assertEquals(t.displayName(), caps().toServiceProperties().get(RdmaProvider.PROP_TRANSPORT));
        Link l = link();
        assertEquals(t, l.client().endpoint().transportType());
        assertEquals(server().capabilities().transportType(), l.server().endpoint().transportType());
    }

    /** Asserts that {@code sent} arrived as {@code t} delivers private data padded to {@code padded} bytes. */
    static void assertDelivered(byte[] sent, int padded, TransportType t, byte[] received) {
        if (t.exactPrivateData()) {
            assertArrayEquals(sent, received, t + " delivers private data at its exact length");
            return;
        }
        assertEquals(padded, received.length, t + " delivers the whole fixed-size private data field");
        assertArrayEquals(sent, java.util.Arrays.copyOf(received, sent.length), "the bytes sent come first");
        for (int i = sent.length; i < received.length; i++) {
            assertEquals(0, received[i], "padding byte " + i + " must be zero");
        }
    }

    /**
     * Too much private data is refused at the call, and the endpoint or request can still be used.
     *
     * @throws Exception on failure
     */
    @Test
    public void privateData_tooLong_refusedAtCall_nothingChanged() throws Exception {
        int max = caps().maxPrivateData();
        Side c = idleClient("client");
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(server().listen(pair().listenAddress(), requests::add));
        assertFails(RdmaStatus.INVALID_PARAMETER,
                () -> c.endpoint().connect(listener.localAddress(), new byte[max + 1], 1, 1));
        assertEquals(EndpointState.IDLE, c.endpoint().state());
        c.endpoint().connect(listener.localAddress(), new byte[0], Math.min(1, caps().maxIrd()), Math.min(1, caps().maxOrd()));
        ConnectionRequest r = nextRequest(requests);
        int smax = server().capabilities().maxPrivateData();
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> r.reject(new byte[smax + 1]));
        Side s = side("server", server(), new LinkSpec(), b -> b, r);
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> r.accept(s.endpoint(), new byte[smax + 1], 0, 0));
        r.accept(s.endpoint(), null, Math.min(1, server().capabilities().maxIrd()), Math.min(1, server().capabilities().maxOrd()));
        c.events().awaitEstablished();
        s.events().awaitEstablished();
    }

    /**
     * The request carries the active side's IRD and ORD; the passive side uses the values it
     * accepted with, and the active side mirrors them as RDMA connection management does (its ORD
     * is the accepted IRD, its IRD the accepted ORD).
     *
     * @throws Exception on failure
     */
    @Test
    public void irdOrd_requestCarriesOffer_activeSideMirrorsAcceptedValues() throws Exception {
        int ci = Math.min(3, caps().maxIrd());
        int co = Math.min(2, caps().maxOrd());
        int si = Math.min(1, server().capabilities().maxIrd());
        int so = Math.min(2, server().capabilities().maxOrd());
        Link l = link(new LinkSpec().connectDepths(ci, co).acceptDepths(si, so));
        assertEquals(ci, l.request().peerIrd());
        assertEquals(co, l.request().peerOrd());
        assertEquals(si, l.server().endpoint().ird());
        assertEquals(so, l.server().endpoint().ord());
        assertEquals(so, l.client().endpoint().ird(), "the active side's IRD is the accepted ORD");
        assertEquals(si, l.client().endpoint().ord(), "the active side's ORD is the accepted IRD");
    }

    /**
     * A rejection with private data ends the attempt with CONNECTION_REFUSED once; the endpoint
     * created for the request becomes DISCONNECTED without events.
     *
     * @throws Exception on failure
     */
    @Test
    public void reject_activeSideRefusedWithPrivateData_passiveEndpointEndsSilently() throws Exception {
        Side c = idleClient("client");
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(server().listen(pair().listenAddress(), requests::add));
        c.endpoint().connect(listener.localAddress(), null, 0, 0);
        assertEquals(EndpointState.CONNECTING, c.endpoint().state());
        ConnectionRequest r = nextRequest(requests);
        Side s = side("server", server(), new LinkSpec(), b -> b, r);
        byte[] why = Bytes.pattern(Math.min(8, server().capabilities().maxPrivateData()), 5);
        r.reject(why);
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(EventRecorder.Kind.ERROR, e.kind());
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status());
        TransportType t = caps().transportType();
        assertDelivered(why, REJECT_PRIVATE_DATA_SIZE, t, c.endpoint().peerPrivateData());
        assertEquals(EndpointState.DISCONNECTED, c.endpoint().state());
        assertEquals(EndpointState.DISCONNECTED, s.endpoint().state());
        assertFails(RdmaStatus.INVALID_STATE, () -> r.reject(null));
        assertFails(RdmaStatus.INVALID_STATE, () -> r.accept(s.endpoint(), null, 0, 0));
        assertEquals(List.of(), s.events().kinds(), "an endpoint of a rejected request gets no events");
        assertEquals(1, c.events().events().size());
    }

    /**
     * Connecting where nobody listens is refused.
     *
     * @throws Exception on failure
     */
    @Test
    public void connect_whereNobodyListens_refused() throws Exception {
        InetSocketAddress nobody = closedListenerAddress();
        Side c = idleClient("client");
        c.endpoint().connect(nobody, null, 0, 0);
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(EventRecorder.Kind.ERROR, e.kind());
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status());
        assertEquals(EndpointState.DISCONNECTED, c.endpoint().state());
        assertEquals(1, c.events().events().size());
    }

    /**
     * Closing a listener rejects the requests it has not answered; accepting one afterwards fails.
     *
     * @throws Exception on failure
     */
    @Test
    public void listenerClose_rejectsUnansweredRequests() throws Exception {
        Side c = idleClient("client");
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(server().listen(pair().listenAddress(), requests::add));
        c.endpoint().connect(listener.localAddress(), null, 0, 0);
        ConnectionRequest r = nextRequest(requests);
        listener.close();
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status());
        Side s = null;
        try {
            s = side("server", server(), new LinkSpec(), b -> b, r);
        } catch (org.smbdirect.rdma.RdmaException ex) {
            assertEquals(RdmaStatus.INVALID_STATE, ex.status());
        }
        if (s != null) {
            Endpoint se = s.endpoint();
            org.smbdirect.rdma.RdmaException ex = org.junit.jupiter.api.Assertions.assertThrows(
                    org.smbdirect.rdma.RdmaException.class, () -> r.accept(se, null, 0, 0));
            assertTrue(ex.status() == RdmaStatus.INVALID_STATE || ex.status() == RdmaStatus.TIMEOUT, ex.getMessage());
        }
    }

    /**
     * A request handler that throws rejects the request.
     *
     * @throws Exception on failure
     */
    @Test
    public void requestHandlerThrows_requestRejected() throws Exception {
        Side c = idleClient("client");
        RdmaListener listener = track(server().listen(pair().listenAddress(), r -> {
            throw new IllegalStateException("handler failure on purpose");
        }));
        c.endpoint().connect(listener.localAddress(), null, 0, 0);
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status());
    }

    /**
     * Calls out of order fail with INVALID_STATE and change nothing.
     *
     * @throws Exception on failure
     */
    @Test
    public void connectionCalls_outOfOrder_invalidState() throws Exception {
        Link l = link();
        Endpoint c = l.client().endpoint();
        Endpoint s = l.server().endpoint();
        assertFails(RdmaStatus.INVALID_STATE, () -> c.connect(l.listener().localAddress(), null, 0, 0));
        assertFails(RdmaStatus.INVALID_STATE, () -> s.connect(l.listener().localAddress(), null, 0, 0));
        assertFails(RdmaStatus.INVALID_STATE, () -> l.request().accept(s, null, 0, 0));
        assertFails(RdmaStatus.INVALID_STATE, () -> l.request().reject(null));
        assertFails(RdmaStatus.INVALID_STATE, () -> l.request().createEndpoint(
                EndpointOptions.builder(l.server().sendCq().queue(), l.server().recvCq().queue()).build(), recorder("x")));
        assertEquals(EndpointState.CONNECTED, c.state());
        assertEquals(EndpointState.CONNECTED, s.state());
        assertRoundTrip(l);
    }

    /**
     * An active endpoint connects from the local address its options name, which must be one of
     * the provider's: the listener sees that address as the peer's; another address is refused
     * when the endpoint is created. Every address of the client's (IPv4 and IPv6, link-local left
     * out) that the server has an address of the same family for is tried.
     *
     * @throws Exception on failure
     */
    @Test
    public void localAddress_ownIsUsed_foreignRefused() throws Exception {
        InetAddress foreign = InetAddress.getByAddress(new byte[] {(byte) 192, 0, 2, 77}); // TEST-NET-1
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> side("foreign", client(), new LinkSpec(),
                b -> b.localAddress(foreign), null));
        int tried = 0;
        for (InetAddress from : client().addresses()) {
            InetAddress to = server().addresses().stream()
                    .filter(a -> a.getClass() == from.getClass() && !a.isLinkLocalAddress()).findFirst().orElse(null);
            if (to == null || from.isLinkLocalAddress()) {
                continue;
            }
            BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
            RdmaListener l = track(server().listen(new InetSocketAddress(to, 0), requests::add));
            Side c = side("client-" + tried, client(), new LinkSpec(), b -> b.localAddress(from), null);
            c.endpoint().connect(l.localAddress(), null, 0, 0);
            ConnectionRequest r = nextRequest(requests);
            assertEquals(from, r.remoteAddress().getAddress(), "the listener sees the chosen local address");
            r.reject(null);
            tried++;
        }
        assertTrue(tried > 0, "no address pair of one family: " + client().addresses() + " / " + server().addresses());
    }

    /**
     * A request accepts only the endpoint created for it, and creates only one.
     *
     * @throws Exception on failure
     */
    @Test
    public void accept_foreignEndpoint_orSecondEndpoint_invalidState() throws Exception {
        Side c = idleClient("client");
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(server().listen(pair().listenAddress(), requests::add));
        c.endpoint().connect(listener.localAddress(), null, 0, 0);
        ConnectionRequest r = nextRequest(requests);
        Side foreign = side("foreign", server(), new LinkSpec(), b -> b, null);
        assertFails(RdmaStatus.INVALID_STATE, () -> r.accept(foreign.endpoint(), null, 0, 0));
        Side s = side("server", server(), new LinkSpec(), b -> b, r);
        assertFails(RdmaStatus.INVALID_STATE, () -> r.createEndpoint(
                EndpointOptions.builder(s.sendCq().queue(), s.recvCq().queue()).build(), recorder("second")));
        r.accept(s.endpoint(), null, 0, 0);
        c.events().awaitEstablished();
        s.events().awaitEstablished();
        assertEquals(List.of(), foreign.events().kinds());
    }

    /**
     * A disconnect by the active side gives both sides exactly one onDisconnected.
     *
     * @throws Exception on failure
     */
    @Test
    public void disconnect_byActiveSide_bothSidesDisconnectedOnce() throws Exception {
        disconnectBy(true);
    }

    /**
     * A disconnect by the passive side gives both sides exactly one onDisconnected.
     *
     * @throws Exception on failure
     */
    @Test
    public void disconnect_byPassiveSide_bothSidesDisconnectedOnce() throws Exception {
        disconnectBy(false);
    }

    private void disconnectBy(boolean active) throws Exception {
        Link l = link();
        Side by = active ? l.client() : l.server();
        by.endpoint().disconnect();
        by.endpoint().disconnect(); // idempotent
        for (Side s : new Side[] {l.client(), l.server()}) {
            EventRecorder.Event e = s.events().awaitTerminal();
            assertEquals(EventRecorder.Kind.DISCONNECTED, e.kind(), s.name() + ": " + e);
        }
        for (Side s : new Side[] {l.client(), l.server()}) {
            assertEquals(EndpointState.DISCONNECTED, s.endpoint().state());
            s.endpoint().disconnect(); // nothing happens any more
            s.endpoint().close();
            assertEquals(EndpointState.CLOSED, s.endpoint().state());
            assertEquals(List.of(EventRecorder.Kind.ESTABLISHED, EventRecorder.Kind.DISCONNECTED), s.events().kinds());
        }
    }

    /**
     * Closing a connected endpoint ends the connection: the closed side still gets its one
     * terminal event, the peer gets onDisconnected, outstanding receives flush.
     *
     * @throws Exception on failure
     */
    @Test
    public void close_connectedEndpoint_endsConnection_terminalEventsOnBothSides() throws Exception {
        Link l = link();
        MemoryRegion r = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("pending", r);
        l.client().endpoint().close();
        assertEquals(EndpointState.CLOSED, l.client().endpoint().state());
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.client().events().awaitTerminal().kind());
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.server().events().awaitTerminal().kind());
        Completion flushed = l.server().recvCq().next();
        assertEquals(RdmaStatus.FLUSHED, flushed.status());
        assertEquals("pending", flushed.context());
        assertEquals(EndpointState.CLOSED, l.client().endpoint().state(), "states only move forward");
    }

    /**
     * An idle endpoint closes without events; its posted receives complete FLUSHED.
     *
     * @throws Exception on failure
     */
    @Test
    public void close_idleEndpoint_noEvents_postedReceivesFlushed() throws Exception {
        Side c = idleClient("client");
        MemoryRegion r = c.register(64, Access.LOCAL_WRITE);
        c.postReceive("a", r);
        c.postReceive("b", r);
        c.endpoint().close();
        c.endpoint().close(); // idempotent
        List<Completion> got = c.recvCq().poll(2);
        assertEquals("a", got.get(0).context());
        assertEquals("b", got.get(1).context());
        for (Completion x : got) {
            assertEquals(RdmaStatus.FLUSHED, x.status());
            assertEquals(OperationType.RECEIVE, x.type());
        }
        assertEquals(List.of(), c.events().kinds());
        assertEquals(EndpointState.CLOSED, c.endpoint().state());
    }

    /**
     * Closing the provider ends every connection it carries with onDisconnected, flushes their
     * work, and afterwards the provider refuses everything with INVALID_STATE.
     *
     * @throws Exception on failure
     */
    @Test
    public void providerClose_endsEveryConnectionWithOnDisconnected_andFlushesWork() throws Exception {
        Link a = link();
        Link b = link();
        MemoryRegion ra = a.server().register(64, Access.LOCAL_WRITE);
        MemoryRegion rb = b.server().register(64, Access.LOCAL_WRITE);
        a.server().postReceive("a", ra);
        b.server().postReceive("b", rb);
        for (Link l : new Link[] {a, b}) {
            // the flushed completions are taken by the handler: the provider may release its queues on close
            l.server().recvCq().collectOnNotification();
            l.server().recvCq().arm(org.smbdirect.rdma.ArmType.ANY);
        }
        server().close();
        for (Link l : new Link[] {a, b}) {
            assertEquals(EventRecorder.Kind.DISCONNECTED, l.server().events().awaitTerminal().kind(),
                    "endpoints of the closed provider end with onDisconnected");
            EventRecorder.Event peer = l.client().events().awaitTerminal();
            if (pair().sameProvider()) {
                assertEquals(EventRecorder.Kind.DISCONNECTED, peer.kind());
            }
            Completion f = l.server().recvCq().awaitCollected(1).get(0);
            assertEquals(RdmaStatus.FLUSHED, f.status());
        }
        assertFails(RdmaStatus.INVALID_STATE, () -> server().createCompletionQueue(4, q -> { }));
        assertFails(RdmaStatus.INVALID_STATE, () -> server().listen(pair().listenAddress(), r -> { }));
        server().close(); // idempotent
    }
}
