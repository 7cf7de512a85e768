package org.smbdirect.shell.internal;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.osgi.framework.BundleContext;
import org.osgi.framework.Filter;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceReference;
import org.osgi.util.tracker.ServiceTracker;
import org.smbdirect.rdma.RdmaProvider;

/** Waiting for services that appear asynchronously (after a configuration change, at start-up). */
final class Services {
    private Services() {
    }

    /**
     * Waits for a service. The tracker stays open (and the service in use) until closed: the caller
     * closes it when done.
     *
     * @return the open tracker, or {@code null} (and closed) when no service appeared in time
     */
    static <T> ServiceTracker<T, T> await(BundleContext context, Class<T> type, String filter, Duration timeout)
            throws InterruptedException {
        String f = "(&(objectClass=" + type.getName() + ")" + (filter == null ? "" : filter) + ")";
        Filter compiled;
        try {
            compiled = context.createFilter(f);
        } catch (InvalidSyntaxException e) {
            throw new IllegalArgumentException("invalid filter " + f + ": " + e.getMessage(), e);
        }
        ServiceTracker<T, T> t = new ServiceTracker<>(context, compiled, null);
        t.open();
        if (t.waitForService(Math.max(1, timeout.toMillis())) == null) {
            t.close();
            return null;
        }
        return t;
    }

    /** Waits until no service matches. */
    static boolean awaitGone(BundleContext context, Class<?> type, String filter, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                Collection<? extends ServiceReference<?>> refs = context.getServiceReferences(type, filter);
                if (refs.isEmpty()) {
                    return true;
                }
            } catch (InvalidSyntaxException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            Thread.sleep(20);
        }
    }

    /** The RDMA provider services, best first (service ranking, then id). */
    static List<ServiceReference<RdmaProvider>> providers(BundleContext context) {
        try {
            List<ServiceReference<RdmaProvider>> refs = new ArrayList<>(
                    context.getServiceReferences(RdmaProvider.class, null));
            refs.sort((a, b) -> b.compareTo(a));
            return refs;
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static String string(ServiceReference<?> ref, String key) {
        Object v = ref.getProperty(key);
        return v == null ? "" : v.toString();
    }
}
