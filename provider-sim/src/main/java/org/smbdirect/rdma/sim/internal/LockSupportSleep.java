package org.smbdirect.rdma.sim.internal;

import java.util.concurrent.locks.LockSupport;

/** A short pause for the rare waits of shutdown (never on the data path). */
final class LockSupportSleep {
    private LockSupportSleep() {
    }

    static void brief() {
        LockSupport.parkNanos(200_000);
    }
}
