package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.tck.CqProbe;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;
import org.smbdirect.rdma.tck.Side;

/** An unanswered request is rejected after connectTimeoutMillis; the peer sees TIMEOUT. */
class AcceptTimeoutTest extends ProviderTck {
    private final ProviderFixture fixture = new SimFixture(false, Map.of("connectTimeoutMillis", 300));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    @Test
    void unansweredRequest_timesOut_acceptThenFailsTimeout() throws Exception {
        Side c = side("client", client(), new LinkSpec(), b -> b, null);
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        BlockingQueue<Object> endpoints = new LinkedBlockingQueue<>();
        EventRecorder serverEvents = recorder("server");
        CqProbe q = probe(server(), 8, "server.cq");
        RdmaListener listener = track(server().listen(pair().listenAddress(), r -> {
            // created at once, in the handler, so that the time-out cannot come first
            try {
                endpoints.add(r.createEndpoint(EndpointOptions.builder(q.queue(), q.queue()).build(), serverEvents));
            } catch (RdmaException e) {
                endpoints.add(e);
            }
            requests.add(r);
        }));
        c.endpoint().connect(listener.localAddress(), null, 1, 1);
        ConnectionRequest r = nextRequest(requests);
        Object made = endpoints.take();
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(RdmaStatus.TIMEOUT, e.status());
        if (made instanceof Endpoint) {
            Endpoint s = track((Endpoint) made);
            assertFails(RdmaStatus.TIMEOUT, () -> r.accept(s, null, 1, 1));
            assertEquals(EndpointState.DISCONNECTED, s.state());
        } else {
            assertEquals(RdmaStatus.INVALID_STATE, ((RdmaException) made).status(), "only the time-out may come first");
        }
        assertEquals(List.of(), serverEvents.kinds());
    }
}
