package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * Capabilities: a provider states them in {@link RdmaProvider#capabilities()} and its service
 * properties, and a provider configured without one rejects what needs it cleanly, leaving the
 * endpoint usable. These tests open providers through {@link ProviderFixture#openWithout}; they
 * are skipped only where an implementation cannot be configured without the capability.
 */
public abstract class CapabilityTck extends ProviderTck {

    /** For subclasses. */
    protected CapabilityTck() {
    }

    private void assertStated(RdmaProvider p, String key, Object value) {
        ProviderCapabilities c = p.capabilities();
        assertEquals(value, c.toServiceProperties().get(key), key + " in toServiceProperties()");
        Optional<Map<String, Object>> props = fixture().serviceProperties(p);
        props.ifPresent(m -> {
            assertEquals(value, m.get(key), key + " in the service properties");
            assertEquals(p.type(), m.get(RdmaProvider.PROP_TYPE));
            assertEquals(p.name(), m.get(RdmaProvider.PROP_NAME));
        });
    }

    /**
     * The providers state their capabilities, as service properties too.
     *
     * @throws Exception on failure
     */
    @Test
    public void capabilities_statedAsServiceProperties() throws Exception {
        for (RdmaProvider p : new RdmaProvider[] {client(), server()}) {
            Map<String, Object> expected = p.capabilities().toServiceProperties();
            for (Map.Entry<String, Object> e : expected.entrySet()) {
                assertStated(p, e.getKey(), e.getValue());
            }
            assertFalse(p.addresses().isEmpty(), "a provider has at least one address");
        }
    }

    /**
     * A provider without RDMA Read says so and rejects reads and remote-read registrations with
     * NOT_SUPPORTED; the endpoint stays usable.
     *
     * @throws Exception on failure
     */
    @Test
    public void withoutRdmaRead_saysSo_rejectsReadsWithNotSupported() throws Exception {
        ProviderPair p = openWithout(Capability.RDMA_READ);
        assertFalse(p.client().capabilities().rdmaRead());
        assertStated(p.client(), RdmaProvider.PROP_RDMA_READ, Boolean.FALSE);
        Link l = link(p, new LinkSpec());
        MemoryRegion dst = l.client().register(64, Access.LOCAL_WRITE);
        assertFails(RdmaStatus.NOT_SUPPORTED, () -> l.client().endpoint().postRead("r", new Sge[] {Sge.of(dst)}, 1,
                0, 1, 0));
        assertFails(RdmaStatus.NOT_SUPPORTED, () -> l.client().endpoint().register(ByteBuffer.allocateDirect(64),
                Access.REMOTE_READ));
        assertRoundTrip(l);
    }

    /**
     * A provider without invalidation says so and rejects send-and-invalidate and local invalidate
     * with NOT_SUPPORTED; the endpoint stays usable.
     *
     * @throws Exception on failure
     */
    @Test
    public void withoutRemoteInvalidate_saysSo_rejectsInvalidationWithNotSupported() throws Exception {
        ProviderPair p = openWithout(Capability.REMOTE_INVALIDATE);
        assertFalse(p.client().capabilities().remoteInvalidate());
        assertStated(p.client(), RdmaProvider.PROP_REMOTE_INVALIDATE, Boolean.FALSE);
        Link l = link(p, new LinkSpec());
        MemoryRegion out = l.client().register(64, 0);
        MemoryRegion target = l.client().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        assertFails(RdmaStatus.NOT_SUPPORTED, () -> l.client().endpoint().postSendAndInvalidate("s",
                new Sge[] {Sge.of(out)}, 1, 0, 1234));
        assertFails(RdmaStatus.NOT_SUPPORTED, () -> l.client().endpoint().postInvalidate("i", target, 0));
        assertRoundTrip(l);
    }

    /**
     * A provider without inline data says so, refuses an inline threshold, and refuses INLINE
     * requests with INVALID_PARAMETER; the endpoint stays usable.
     *
     * @throws Exception on failure
     */
    @Test
    public void withoutInline_saysSo_rejectsInlineRequests() throws Exception {
        ProviderPair p = openWithout(Capability.INLINE);
        assertEquals(0, p.client().capabilities().inlineLimit());
        assertStated(p.client(), RdmaProvider.PROP_INLINE_LIMIT, 0);
        CqProbe q = probe(p.client(), 8, "cq");
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> p.client().createEndpoint(
                EndpointOptions.builder(q.queue(), q.queue()).inlineThreshold(1).build(), recorder("x")));
        Link l = link(p, new LinkSpec());
        Sge[] data = {Sge.inline(ByteBuffer.allocate(4))};
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> l.client().endpoint().postSend("s", data, 1, RequestFlags.INLINE));
        assertRoundTrip(l);
    }

    /**
     * Endpoint options beyond the capabilities are refused with INVALID_PARAMETER.
     *
     * @throws Exception on failure
     */
    @Test
    public void endpointOptions_beyondCapabilities_invalidParameter() throws Exception {
        ProviderCapabilities c = caps();
        CqProbe q = probe(client(), 8, "cq");
        EndpointOptions.Builder base = EndpointOptions.builder(q.queue(), q.queue());
        if (c.maxQueueDepth() < Integer.MAX_VALUE) {
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                    EndpointOptions.builder(q.queue(), q.queue()).sendQueueDepth(c.maxQueueDepth() + 1).build(), recorder("a")));
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                    EndpointOptions.builder(q.queue(), q.queue()).receiveQueueDepth(c.maxQueueDepth() + 1).build(), recorder("b")));
        }
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                EndpointOptions.builder(q.queue(), q.queue()).maxSendSge(c.maxSge() + 1).build(), recorder("c")));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                EndpointOptions.builder(q.queue(), q.queue()).maxReceiveSge(c.maxSge() + 1).build(), recorder("d")));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createEndpoint(
                EndpointOptions.builder(q.queue(), q.queue()).inlineThreshold(c.inlineLimit() + 1).build(), recorder("e")));
        track(client().createEndpoint(base.build(), recorder("ok")));
    }
}
