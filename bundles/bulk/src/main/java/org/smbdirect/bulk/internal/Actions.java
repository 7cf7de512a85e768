package org.smbdirect.bulk.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Work decided while holding a session's lock and done after releasing it, in order: completing
 * an application's send, calling its handler, deregistering, starting RDMA operations. Nothing
 * that can call back into the session runs under its lock.
 */
final class Actions {
    private static final System.Logger LOG = System.getLogger(Actions.class.getName());

    private final List<Runnable> list = new ArrayList<>(4);

    void add(Runnable action) {
        list.add(action);
    }

    /** Runs every action in order; one that throws is logged and the rest still run. */
    void run() {
        for (int i = 0; i < list.size(); i++) {
            try {
                list.get(i).run();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "bulk session action failed", e);
            }
        }
        list.clear();
    }
}
