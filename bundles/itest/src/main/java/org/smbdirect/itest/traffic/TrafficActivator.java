package org.smbdirect.itest.traffic;

import org.osgi.framework.BundleActivator;
import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.osgi.util.tracker.ServiceTracker;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;

/**
 * The traffic bundle of the lifecycle test: once the test registers its {@link TrafficProbe},
 * drives SMB Direct and bulk traffic through the product's services until the probe goes or this
 * bundle stops (a refresh of a bundle it imports from stops it too; it starts again afterwards).
 */
public final class TrafficActivator implements BundleActivator {
    private ServiceTracker<TrafficProbe, Traffic> tracker;

    @Override
    public void start(BundleContext context) {
        tracker = new ServiceTracker<>(context, TrafficProbe.class, null) {
            @Override
            public Traffic addingService(ServiceReference<TrafficProbe> reference) {
                TrafficProbe probe = context.getService(reference);
                if (probe == null) {
                    return null;
                }
                Traffic t = new Traffic(context, probe);
                t.start();
                return t;
            }

            @Override
            public void removedService(ServiceReference<TrafficProbe> reference, Traffic traffic) {
                traffic.stop();
                context.ungetService(reference);
            }
        };
        tracker.open();
    }

    @Override
    public void stop(BundleContext context) {
        tracker.close();
    }
}
