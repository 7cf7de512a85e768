package org.smbdirect.rdma.sim.internal;

import org.junit.jupiter.api.Nested;
import org.smbdirect.rdma.tck.CapabilityTck;
import org.smbdirect.rdma.tck.CompletionQueueTck;
import org.smbdirect.rdma.tck.ConnectionTck;
import org.smbdirect.rdma.tck.InvalidationTck;
import org.smbdirect.rdma.tck.MisuseTck;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ReadWriteTck;
import org.smbdirect.rdma.tck.RegistrationTck;
import org.smbdirect.rdma.tck.SendReceiveTck;

/**
 * The whole conformance kit on one simulated provider used for both sides of every connection.
 * Each area is its own nested class here (rather than inherited from RdmaProviderTck) so that
 * its reports are named apart from the two-provider run.
 */
class SimSingleProviderTckTest {
    private final ProviderFixture fixture = new SimFixture(true);

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

    @Nested
    class ReadWrite extends ReadWriteTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class Invalidation extends InvalidationTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class Registration extends RegistrationTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class CompletionQueues extends CompletionQueueTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class Capabilities extends CapabilityTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }

    @Nested
    class Misuse extends MisuseTck {
        @Override
        protected ProviderFixture fixture() {
            return fixture;
        }
    }
}
