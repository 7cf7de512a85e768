package org.smbdirect.protocol.internal;

import java.util.List;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectFactory;

import aQute.bnd.annotation.Resolution;
import aQute.bnd.annotation.spi.ServiceProvider;

/** Builds transports without OSGi; published for {@link java.util.ServiceLoader}. */
// Optional: inside OSGi the DS component is the way in; no Service Loader Mediator is needed.
@ServiceProvider(value = SmbDirectFactory.class, resolution = Resolution.OPTIONAL)
public final class DefaultSmbDirectFactory implements SmbDirectFactory {

    /** Creates the factory (ServiceLoader needs a public no-argument constructor). */
    public DefaultSmbDirectFactory() {
    }

    @Override
    public SmbDirect create(List<RdmaProvider> providers, SmbDirectConfig config) {
        if (providers.isEmpty()) {
            throw new IllegalArgumentException("at least one RDMA provider is needed");
        }
        SmbDirectTransport t = new SmbDirectTransport(config, new SystemScheduler("smbdirect-timers"), true);
        for (int i = 0; i < providers.size(); i++) {
            t.addProvider(providers.get(i), -i, i);
        }
        return t;
    }
}
