package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.RdmaProviderTck;

/** The whole conformance kit on one simulated provider used for both sides of every connection. */
class SimSingleProviderTckTest extends RdmaProviderTck {
    private final ProviderFixture fixture = new SimFixture(true);

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }
}
