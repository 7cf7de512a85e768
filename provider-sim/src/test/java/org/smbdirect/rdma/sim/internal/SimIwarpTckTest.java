package org.smbdirect.rdma.sim.internal;

import java.util.Map;

import org.junit.jupiter.api.Nested;
import org.smbdirect.rdma.tck.ConnectionTck;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.SendReceiveTck;

/**
 * The connection and send/receive areas of the kit on simulated providers with the iWARP
 * personality: private data arrives at its exact length (the RoCE default pads it as rdma_cm
 * does, which the other runs check).
 */
class SimIwarpTckTest {
    private final ProviderFixture fixture = new SimFixture(false, Map.of("transport", "iWARP"));

    @Nested
    class Connection extends ConnectionTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class SendReceive extends SendReceiveTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }
}
