package org.smbdirect.rdma.sim.internal;

import java.lang.System.Logger;
import java.lang.System.Logger.Level;

/** The simulator's logging, through {@link System.Logger} so that it needs no dependency. */
final class SimLog {
    private static final Logger LOG = System.getLogger("org.smbdirect.rdma.sim");

    private SimLog() {
    }

    static void error(String message, Throwable t) {
        LOG.log(Level.ERROR, message, t);
    }

    static void warn(String message) {
        LOG.log(Level.WARNING, message);
    }

    static void info(String message) {
        LOG.log(Level.INFO, message);
    }

    static boolean debugEnabled() {
        return LOG.isLoggable(Level.DEBUG);
    }

    static void debug(String message) {
        LOG.log(Level.DEBUG, message);
    }
}
