package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * Caller misuse: every mistake gets a clear status at the call, nothing is queued, the endpoint is
 * unchanged and other connections carry on.
 */
public abstract class MisuseTck extends ProviderTck {

    /** For subclasses. */
    protected MisuseTck() {
    }

    /**
     * Posting on a disconnected endpoint fails NOT_CONNECTED; another connection is unaffected.
     *
     * @throws Exception on failure
     */
    @Test
    public void post_onDisconnectedEndpoint_notConnected_otherConnectionUntouched() throws Exception {
        Link gone = link();
        Link alive = link();
        MemoryRegion r = gone.client().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        gone.client().endpoint().disconnect();
        gone.client().events().awaitTerminal();
        gone.server().events().awaitTerminal();
        Endpoint e = gone.client().endpoint();
        Sge[] sgl = {Sge.of(r)};
        assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postSend("s", sgl, 1, 0));
        assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postReceive("r", sgl, 1));
        assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postWrite("w", sgl, 1, 0, 1, 0));
        if (caps().rdmaRead()) {
            assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postRead("r", sgl, 1, 0, 1, 0));
        }
        if (caps().remoteInvalidate()) {
            assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postSendAndInvalidate("s", sgl, 1, 0, 1));
            assertFails(RdmaStatus.NOT_CONNECTED, () -> e.postInvalidate("i", r, 0));
        }
        assertEquals(EndpointState.DISCONNECTED, e.state());
        assertEquals(List.of(EventRecorder.Kind.ESTABLISHED), alive.client().events().kinds());
        assertRoundTrip(alive);
    }

    /**
     * Unknown flag bits, and flags a request does not take, are invalid parameters.
     *
     * @throws Exception on failure
     */
    @Test
    public void flags_unknownOrNotValidForTheRequest_invalidParameter() throws Exception {
        Link l = link();
        Link other = link();
        Endpoint e = l.client().endpoint();
        MemoryRegion r = l.client().register(64, Access.LOCAL_WRITE);
        MemoryRegion remote = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        Sge[] sgl = {Sge.of(r)};
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", sgl, 1, 0x100));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postWrite("w", sgl, 1, remote.remoteOffset(), remote.token(), 0x100));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postWrite("w", sgl, 1, remote.remoteOffset(), remote.token(),
                RequestFlags.SOLICIT_EVENT));
        if (caps().rdmaRead()) {
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postRead("r", sgl, 1, remote.remoteOffset(), remote.token(),
                    RequestFlags.SOLICIT_EVENT));
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postRead("r", sgl, 1, remote.remoteOffset(), remote.token(),
                    RequestFlags.INLINE));
        }
        if (caps().remoteInvalidate()) {
            MemoryRegion own = l.client().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postInvalidate("i", own, RequestFlags.SOLICIT_EVENT));
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postInvalidate("i", own, RequestFlags.INLINE));
        }
        assertEquals(List.of(), l.client().sendCq().drain(), "nothing was queued");
        assertEquals(EndpointState.CONNECTED, e.state());
        assertRoundTrip(l);
        assertRoundTrip(other);
    }

    /**
     * Malformed element lists are invalid parameters: no array, too short an array, a null or
     * unset element, more elements than the endpoint allows, a receive without elements.
     *
     * @throws Exception on failure
     */
    @Test
    public void elementLists_malformed_invalidParameter() throws Exception {
        Link l = link();
        Endpoint e = l.client().endpoint();
        MemoryRegion r = l.client().register(64, Access.LOCAL_WRITE);
        int max = e.options().maxSendSge();
        Sge[] many = new Sge[max + 1];
        for (int i = 0; i < many.length; i++) {
            many[i] = Sge.of(r, 0, 4);
        }
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", null, 1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", new Sge[] {Sge.of(r)}, 2, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", new Sge[] {null}, 1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", new Sge[] {new Sge()}, 1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", many, max + 1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postSend("s", many, -1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postReceive("r", new Sge[0], 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> e.postReceive("r", many, e.options().maxReceiveSge() + 1));
        assertEquals(EndpointState.CONNECTED, e.state());
        assertRoundTrip(l);
    }

    /**
     * IRD and ORD out of range are refused at connect and accept.
     *
     * @throws Exception on failure
     */
    @Test
    public void depths_outOfRange_invalidParameter() throws Exception {
        Side c = side("client", client(), new LinkSpec(), b -> b, null);
        java.net.InetSocketAddress nowhere = closedListenerAddress();
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> c.endpoint().connect(nowhere, null, -1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> c.endpoint().connect(nowhere, null, 0, -1));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> c.endpoint().connect(nowhere, null, caps().maxIrd() + 1, 0));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> c.endpoint().connect(nowhere, null, 0, caps().maxOrd() + 1));
        assertEquals(EndpointState.IDLE, c.endpoint().state());
        assertEquals(List.of(), c.events().kinds());
    }

    /**
     * An endpoint cannot use completion queues of another provider.
     *
     * @throws Exception on failure
     */
    @Test
    public void createEndpoint_queuesOfAnotherProvider_invalidParameter() throws Exception {
        ProviderPair another = openAnother();
        CqProbe foreign = probe(another.client(), 8, "foreign");
        CqProbe own = probe(client(), 8, "own");
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                EndpointOptions.builder(foreign.queue(), own.queue()).build(), recorder("a")));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                EndpointOptions.builder(own.queue(), foreign.queue()).build(), recorder("b")));
    }
}
