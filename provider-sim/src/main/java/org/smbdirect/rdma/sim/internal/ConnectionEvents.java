package org.smbdirect.rdma.sim.internal;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.RdmaStatus;

/**
 * An endpoint's connection events, delivered to its consumer's {@link ConnectionListener} from the
 * connection's actor: each call is announced to the scheduler as a consumer's call, and nothing it
 * throws escapes into the fabric thread.
 */
final class ConnectionEvents {
    private ConnectionEvents() {
    }

    static void established(SimEndpoint e) {
        ConnectionListener l = e.listener;
        Scheduler.beforeConsumerCall();
        try {
            l.onEstablished(e);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onEstablished", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }

    static void disconnected(SimEndpoint e) {
        Scheduler.beforeConsumerCall();
        try {
            e.listener.onDisconnected(e);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onDisconnected", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }

    static void error(SimEndpoint e, RdmaStatus status, String reason) {
        Scheduler.beforeConsumerCall();
        try {
            e.listener.onError(e, status, reason);
        } catch (Throwable t) {
            SimLog.error("connection listener failed in onError", t);
        } finally {
            Scheduler.afterConsumerCall();
        }
    }
}
