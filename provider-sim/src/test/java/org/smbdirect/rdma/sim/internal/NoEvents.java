package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaStatus;

/** A listener for endpoints whose events a test does not look at. */
final class NoEvents implements ConnectionListener {
    @Override
    public void onEstablished(Endpoint endpoint) {
    }

    @Override
    public void onDisconnected(Endpoint endpoint) {
    }

    @Override
    public void onError(Endpoint endpoint, RdmaStatus status, String reason) {
    }
}
