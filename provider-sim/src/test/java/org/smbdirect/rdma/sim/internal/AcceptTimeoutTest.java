package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;
import org.smbdirect.rdma.tck.Side;

/** An unanswered request is rejected after connectTimeoutMillis; the peer sees TIMEOUT. */
class AcceptTimeoutTest extends ProviderTck {
    private final ProviderFixture fixture = new SimFixture(false, Map.of("connectTimeoutMillis", 100));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    @Test
    void unansweredRequest_timesOut_acceptThenFailsTimeout() throws Exception {
        Side c = side("client", client(), new LinkSpec(), b -> b, null);
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = track(server().listen(pair().listenAddress(), requests::add));
        c.endpoint().connect(listener.localAddress(), null, 1, 1);
        ConnectionRequest r = nextRequest(requests);
        Side s = side("server", server(), new LinkSpec(), b -> b, r);
        EventRecorder.Event e = c.events().awaitTerminal();
        assertEquals(RdmaStatus.TIMEOUT, e.status());
        assertFails(RdmaStatus.TIMEOUT, () -> r.accept(s.endpoint(), null, 1, 1));
        assertEquals(EndpointState.DISCONNECTED, s.endpoint().state());
    }
}
