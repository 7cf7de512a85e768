package org.smbdirect.itest.traffic;

import java.util.List;

import org.osgi.framework.BundleContext;
import org.osgi.framework.InvalidSyntaxException;
import org.osgi.framework.ServiceEvent;
import org.osgi.framework.ServiceListener;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.transport.SmbDirect;

/** The drivers, woken by every change of the services they use or of the RDMA providers below them. */
final class Traffic implements ServiceListener {
    private static final String FILTER = "(|(objectClass=" + SmbDirect.class.getName() + ")(objectClass="
            + BulkTransfer.class.getName() + ")(objectClass=org.smbdirect.rdma.RdmaProvider))";

    private final BundleContext context;
    private final List<Driver<?, ?, ?>> drivers;

    Traffic(BundleContext context, TrafficProbe probe) {
        this.context = context;
        this.drivers = List.of(new MessageDriver(context, probe), new BulkDriver(context, probe));
    }

    void start() {
        try {
            context.addServiceListener(this, FILTER);
        } catch (InvalidSyntaxException e) {
            throw new IllegalStateException(e);
        }
        drivers.forEach(Driver::start);
    }

    void stop() {
        drivers.forEach(Driver::halt);
        drivers.forEach(Driver::stop);
        try {
            context.removeServiceListener(this);
        } catch (IllegalStateException e) {
            // the bundle is stopping
        }
    }

    @Override
    public void serviceChanged(ServiceEvent event) {
        for (Driver<?, ?, ?> d : drivers) {
            if (event.getType() == ServiceEvent.UNREGISTERING) {
                d.unregistering(event.getServiceReference());
            }
            d.wake();
        }
    }
}
