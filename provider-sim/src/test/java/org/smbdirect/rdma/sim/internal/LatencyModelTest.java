package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.Completion;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;

/**
 * With the latency model on (50 ms one way), requests stay in flight long enough to observe
 * queue depths and ORD. No assertion here is about time itself.
 */
class LatencyModelTest extends ProviderTck {
    private final ProviderFixture fixture = new SimFixture(false,
            Map.of("latency.enabled", true, "latency.microseconds", 50_000, "latency.bandwidthMbps", 1000));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    @Test
    void ord_limitsReadsInFlight() throws Exception {
        for (int ord : new int[] {1, 4}) {
            Link l = link(new LinkSpec().acceptDepths(ord, ord).connectDepths(ord, ord));
            MemoryRegion source = l.server().register(4096, Access.REMOTE_READ);
            MemoryRegion dst = l.client().register(4096, Access.LOCAL_WRITE);
            for (int i = 0; i < 6; i++) {
                l.client().endpoint().postRead("rd" + i, new Sge[] {Sge.of(dst, i * 512, 512)}, 1,
                        source.remoteOffset() + i * 512L, source.token(), i < 5 ? RequestFlags.DEFER : 0);
            }
            assertEquals(6, l.client().sendCq().poll(6).size());
            int peak = ((SimEndpoint) l.client().endpoint()).peakReadsOutstanding;
            assertEquals(ord, peak, "reads in flight with ORD " + ord);
        }
    }

    @Test
    void dataArrivesIntact_andInOrder_underLatency() throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(8192, Access.LOCAL_WRITE);
        for (int i = 0; i < 4; i++) {
            l.server().endpoint().postReceive("r" + i, new Sge[] {Sge.of(in, i * 2048, 2048)}, 1);
        }
        MemoryRegion out = l.client().register(8192, 0);
        fill(out, 5);
        for (int i = 0; i < 4; i++) {
            l.client().send("s" + i, out, i * 2048, 2048, 0);
        }
        List<Completion> r = l.server().recvCq().poll(4);
        for (int i = 0; i < 4; i++) {
            assertEquals("r" + i, r.get(i).context());
        }
        assertBytes(bytes(out, 0, 8192), bytes(in, 0, 8192), "data");
        assertTrue(l.client().sendCq().poll(4).stream().allMatch(c -> c.status() == RdmaStatus.SUCCESS));
    }
}
