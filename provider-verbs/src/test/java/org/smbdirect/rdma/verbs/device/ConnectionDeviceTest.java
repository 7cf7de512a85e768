package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/** The connection service over a real (or Soft-RoCE) device: rdma_cm with private data and IRD/ORD. */
class ConnectionDeviceTest {
    private Fixture f;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
    }

    @AfterEach
    void close() {
        f.close();
    }

    /** The prefix of received private data must be what was sent (InfiniBand/RoCE pad it with zeros). */
    private static void assertPrivateData(byte[] sent, byte[] received) {
        assertTrue(received.length >= sent.length, () -> "received " + Arrays.toString(received));
        assertArrayEquals(sent, Arrays.copyOf(received, sent.length));
        for (int i = sent.length; i < received.length; i++) {
            assertEquals(0, received[i], "padding after the private data must be zero");
        }
    }

    /** MS-SMBD 6: the IRD/ORD negotiate header travels in the private data; IRD/ORD are set on the queue pairs. */
    @Test
    void connect_acceptWithPrivateDataAndIrdOrd_bothSidesSeeThem() throws Exception {
        Fixture.Listening l = f.listen();
        Fixture.Cq cq = f.cq(32);
        RecordingListener clientEvents = new RecordingListener();
        RecordingListener serverEvents = new RecordingListener();
        Endpoint client = f.track(f.provider.createEndpoint(f.options(cq).build(), clientEvents));
        assertEquals(EndpointState.IDLE, client.state());
        byte[] hello = {0x10, 0, 0, 0, 0x08, 0, 0, 0, 'S', 'M', 'B'};
        client.connect(l.listener.localAddress(), hello, 3, 5);
        assertEquals(EndpointState.CONNECTING, client.state());

        ConnectionRequest request = l.next(Fixture.TIMEOUT);
        assertPrivateData(hello, request.peerPrivateData());
        assertEquals(3, request.peerIrd(), "the peer offered IRD 3");
        assertEquals(5, request.peerOrd(), "the peer asked for ORD 3");
        assertEquals(l.listener.localAddress(), request.localAddress());
        assertEquals(f.address, request.remoteAddress().getAddress());

        Endpoint server = f.track(request.createEndpoint(f.options(cq).build(), serverEvents));
        byte[] reply = {5, 0, 0, 0, 3, 0, 0, 0};
        request.accept(server, reply, 5, 3);
        RecordingListener.Event s = serverEvents.expect("ESTABLISHED", Fixture.TIMEOUT);
        RecordingListener.Event c = clientEvents.expect("ESTABLISHED", Fixture.TIMEOUT);
        assertNotEquals(Thread.currentThread(), c.thread, "events arrive on a provider thread");

        assertEquals(EndpointState.CONNECTED, client.state());
        assertEquals(EndpointState.CONNECTED, server.state());
        assertPrivateData(reply, client.peerPrivateData());
        assertPrivateData(hello, server.peerPrivateData());
        assertEquals(5, server.ird());
        assertEquals(3, server.ord());
        assertEquals(3, client.ird(), "the client serves as many reads as the server issues");
        assertEquals(5, client.ord(), "the client issues as many reads as the server serves");
        assertEquals(l.listener.localAddress(), client.remoteAddress());
        assertEquals(client.localAddress(), server.remoteAddress());
        assertNotNull(server.localAddress());
    }

    @Test
    void reject_withPrivateData_connectFailsRefusedWithPeerData() throws Exception {
        Fixture.Listening l = f.listen();
        Fixture.Cq cq = f.cq(8);
        RecordingListener events = new RecordingListener();
        Endpoint client = f.track(f.provider.createEndpoint(f.options(cq).build(), events));
        client.connect(l.listener.localAddress(), null, 1, 1);
        ConnectionRequest request = l.next(Fixture.TIMEOUT);
        request.reject(new byte[] {42, 43});
        RecordingListener.Event e = events.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status);
        assertPrivateData(new byte[] {42, 43}, client.peerPrivateData());
        assertEquals(EndpointState.DISCONNECTED, client.state());
        assertThrows(RdmaException.class, () -> request.reject(null), "a request is answered once");
        events.expectNothing(200);
    }

    @Test
    void connect_nobodyListening_refused() throws Exception {
        Fixture.Listening l = f.listen();
        InetSocketAddress gone = l.listener.localAddress();
        l.listener.close();
        Fixture.Cq cq = f.cq(8);
        RecordingListener events = new RecordingListener();
        Endpoint client = f.track(f.provider.createEndpoint(f.options(cq).build(), events));
        client.connect(gone, null, 1, 1);
        RecordingListener.Event e = events.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status, e.reason);
    }

    @Test
    void disconnect_flushesOutstandingReceivesAndBothSidesHearIt() throws Exception {
        Fixture.Pair p = f.connect();
        MemoryRegion r = p.server.register(Fixture.direct(256), Access.LOCAL_WRITE);
        p.server.postReceive("r1", new Sge[] {Sge.of(r, 0, 128)}, 1);
        p.server.postReceive("r2", new Sge[] {Sge.of(r, 128, 128)}, 1);
        p.client.disconnect();
        p.client.disconnect(); // idempotent
        p.clientEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
        p.serverEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
        List<CompletionResult> flushed = p.serverCq.take(2, Fixture.TIMEOUT);
        assertEquals("r1", flushed.get(0).requestContext());
        assertEquals("r2", flushed.get(1).requestContext());
        for (CompletionResult c : flushed) {
            assertEquals(RdmaStatus.FLUSHED, c.status());
            assertEquals(OperationType.RECEIVE, c.type());
            assertEquals(0, c.bytesTransferred());
        }
        assertEquals(EndpointState.DISCONNECTED, p.server.state());
        RdmaException e = assertThrows(RdmaException.class,
                () -> p.server.postReceive("late", new Sge[] {Sge.of(r, 0, 8)}, 1));
        assertEquals(RdmaStatus.NOT_CONNECTED, e.status());
        p.clientEvents.expectNothing(200);
        p.serverEvents.expectNothing(0);
    }

    @Test
    void close_idleEndpoint_noEventsAndReceivesFlushed() throws Exception {
        Fixture.Cq cq = f.cq(8);
        RecordingListener events = new RecordingListener();
        Endpoint ep = f.provider.createEndpoint(f.options(cq).build(), events);
        MemoryRegion r = ep.register(Fixture.direct(64), Access.LOCAL_WRITE);
        ep.postReceive("idle", new Sge[] {Sge.of(r)}, 1);
        ep.close();
        ep.close();
        assertEquals(EndpointState.CLOSED, ep.state());
        CompletionResult c = cq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.FLUSHED, c.status());
        assertEquals("idle", c.requestContext());
        events.expectNothing(300);
        assertTrue(!r.isValid());
    }

    @Test
    void listen_sameAddressTwice_addressInUse() throws Exception {
        Fixture.Listening l = f.listen();
        RdmaException e = assertThrows(RdmaException.class,
                () -> f.provider.listen(l.listener.localAddress(), r -> { }));
        assertEquals(RdmaStatus.ADDRESS_IN_USE, e.status());
    }

    @Test
    void listen_addressOfNoDevice_invalidParameter() {
        RdmaException e = assertThrows(RdmaException.class,
                () -> f.provider.listen(new InetSocketAddress("192.0.2.1", 0), r -> { }));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
    }

    @Test
    void connect_twiceOrOnPassiveEndpoint_invalidState() throws Exception {
        Fixture.Pair p = f.connect();
        RdmaException e1 = assertThrows(RdmaException.class,
                () -> p.client.connect(p.server.localAddress(), null, 1, 1));
        assertEquals(RdmaStatus.INVALID_STATE, e1.status());
        RdmaException e2 = assertThrows(RdmaException.class,
                () -> p.server.connect(p.client.localAddress(), null, 1, 1));
        assertEquals(RdmaStatus.INVALID_STATE, e2.status());
    }

    @Test
    void connect_outOfRangeParameters_invalidParameter() throws Exception {
        Fixture.Listening l = f.listen();
        Fixture.Cq cq = f.cq(8);
        Endpoint client = f.track(f.provider.createEndpoint(f.options(cq).build(), new RecordingListener()));
        int max = f.provider.capabilities().maxPrivateData();
        assertEquals(RdmaStatus.INVALID_PARAMETER, assertThrows(RdmaException.class,
                () -> client.connect(l.listener.localAddress(), new byte[max + 1], 1, 1)).status());
        assertEquals(RdmaStatus.INVALID_PARAMETER, assertThrows(RdmaException.class,
                () -> client.connect(l.listener.localAddress(), null, f.provider.capabilities().maxIrd() + 1, 1)).status());
        assertEquals(RdmaStatus.INVALID_PARAMETER, assertThrows(RdmaException.class,
                () -> client.connect(l.listener.localAddress(), null, 1, -1)).status());
        assertEquals(EndpointState.IDLE, client.state(), "a rejected call leaves the endpoint as it was");
    }

    @Test
    void accept_afterProviderGaveUp_timeout() throws Exception {
        f.close();
        f = new Fixture(java.util.Map.of("connectionRequestTimeoutMillis", 300));
        Fixture.Listening l = f.listen();
        Fixture.Cq cq = f.cq(8);
        RecordingListener events = new RecordingListener();
        Endpoint client = f.track(f.provider.createEndpoint(f.options(cq).build(), events));
        client.connect(l.listener.localAddress(), null, 1, 1);
        ConnectionRequest request = l.next(Fixture.TIMEOUT);
        Endpoint server = f.track(request.createEndpoint(f.options(cq).build(), new RecordingListener()));
        RecordingListener.Event e = events.expect("ERROR", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.CONNECTION_REFUSED, e.status, e.reason);
        RdmaException late = assertThrows(RdmaException.class, () -> request.accept(server, null, 1, 1));
        assertEquals(RdmaStatus.TIMEOUT, late.status());
    }

    @Test
    void providerClose_endsEveryConnectionWithOnDisconnected_thenCallsFailInvalidState() throws Exception {
        Fixture.Pair p = f.connect();
        RdmaListener other = f.provider.listen(new InetSocketAddress(f.address, 0), r -> { });
        f.provider.close();
        p.clientEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
        p.serverEvents.expect("DISCONNECTED", Fixture.TIMEOUT);
        assertEquals(RdmaStatus.INVALID_STATE, assertThrows(RdmaException.class,
                () -> f.provider.createCompletionQueue(4, q -> { })).status());
        assertEquals(RdmaStatus.INVALID_STATE, assertThrows(RdmaException.class,
                () -> f.provider.listen(other.localAddress(), r -> { })).status());
        assertEquals(RdmaStatus.NOT_CONNECTED, assertThrows(RdmaException.class,
                () -> p.client.postSend(null, new Sge[0], 0, 0)).status());
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("smbdirect-verbs-") && t.getName().endsWith(f.provider.name())) {
                throw new AssertionError("thread " + t.getName() + " outlived the provider");
            }
        }
    }
}
