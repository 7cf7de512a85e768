package org.smbdirect.itest.lifecycle;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceReference;

/**
 * What the framework holds at one moment, as far as leaks go: the live threads whose names start
 * with {@code smbdirect-} (by name: a restarted bundle starts threads of the same names), the
 * registered services in all, per bundle and per object class of ours ({@code org.smbdirect.*}:
 * transports, bulk transfer, providers), the services each of our bundles uses, and our JMX
 * MBeans. Two snapshots are compared whole, so the message of a failed comparison shows both.
 */
final class Snapshot {
    static final String THREAD_PREFIX = "smbdirect-";
    private static final ObjectName OUR_MBEANS;

    static {
        try {
            OUR_MBEANS = new ObjectName("org.smbdirect*:*");
        } catch (MalformedObjectNameException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final List<String> threads;
    final int services;
    final Map<String, Integer> servicesByBundle;
    final Map<String, Integer> servicesByClass;
    final Map<String, Integer> servicesInUse;
    final Set<String> mbeans;

    private Snapshot(List<String> threads, int services, Map<String, Integer> servicesByBundle,
            Map<String, Integer> servicesByClass, Map<String, Integer> servicesInUse, Set<String> mbeans) {
        this.threads = threads;
        this.services = services;
        this.servicesByBundle = servicesByBundle;
        this.servicesByClass = servicesByClass;
        this.servicesInUse = servicesInUse;
        this.mbeans = mbeans;
    }

    static Snapshot take(BundleContext context, String productPrefix, String testPrefix) {
        Map<String, Integer> byBundle = new TreeMap<>();
        Map<String, Integer> inUse = new TreeMap<>();
        for (Bundle b : context.getBundles()) {
            String name = b.getSymbolicName();
            ServiceReference<?>[] registered = b.getRegisteredServices();
            byBundle.put(name, registered == null ? 0 : registered.length);
            if (name.startsWith(productPrefix) && !name.startsWith(testPrefix)) {
                ServiceReference<?>[] used = b.getServicesInUse();
                inUse.put(name, used == null ? 0 : used.length);
            }
        }
        int all;
        Map<String, Integer> byClass = new TreeMap<>();
        try {
            ServiceReference<?>[] refs = context.getAllServiceReferences(null, null);
            all = refs == null ? 0 : refs.length;
            for (ServiceReference<?> r : refs == null ? new ServiceReference<?>[0] : refs) {
                Object classes = r.getProperty(org.osgi.framework.Constants.OBJECTCLASS);
                if (classes instanceof String[]) {
                    for (String c : (String[]) classes) {
                        if (c.startsWith(productPrefix)) {
                            byClass.merge(c, 1, Integer::sum);
                        }
                    }
                }
            }
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
        Set<String> mbeans = new TreeSet<>();
        for (ObjectName n : ManagementFactory.getPlatformMBeanServer().queryNames(OUR_MBEANS, null)) {
            mbeans.add(n.toString());
        }
        return new Snapshot(threads(), all, byBundle, byClass, inUse, mbeans);
    }

    /** Names of the live {@code smbdirect-} threads, sorted, duplicates kept. */
    static List<String> threads() {
        List<String> names = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith(THREAD_PREFIX)) {
                names.add(t.getName());
            }
        }
        names.sort(null);
        return names;
    }

    /** Whether every thread here is also in {@code baseline} (as many times): nothing grew. */
    boolean threadsWithin(Snapshot baseline) {
        List<String> rest = new ArrayList<>(baseline.threads);
        for (String t : threads) {
            if (!rest.remove(t)) {
                return false;
            }
        }
        return true;
    }

    /** Everything equal but the threads. */
    boolean servicesEqual(Snapshot o) {
        return services == o.services && servicesByBundle.equals(o.servicesByBundle)
                && servicesByClass.equals(o.servicesByClass)
                && servicesInUse.equals(o.servicesInUse) && mbeans.equals(o.mbeans);
    }

    boolean sameAs(Snapshot o) {
        return threads.equals(o.threads) && servicesEqual(o);
    }

    @Override
    public String toString() {
        return "threads " + threads + ", services " + services + " " + servicesByBundle + " " + servicesByClass
                + ", in use " + servicesInUse
                + ", MBeans " + mbeans;
    }
}
