package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.RdmaProviderTck;

/** The whole conformance kit on two simulated providers, one per side, sharing a fabric. */
class SimProviderTckTest extends RdmaProviderTck {
    private final ProviderFixture fixture = new SimFixture(false);

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }
}
