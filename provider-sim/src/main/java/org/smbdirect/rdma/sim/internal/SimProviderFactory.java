package org.smbdirect.rdma.sim.internal;

import java.io.IOException;
import java.util.List;
import java.util.Map;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.rdma.RdmaStatus;

import aQute.bnd.annotation.Resolution;
import aQute.bnd.annotation.spi.ServiceProvider;

/**
 * Creates simulated providers without OSGi, through {@link java.util.ServiceLoader}. The
 * configuration keys and defaults are those of the OSGi configuration ({@link SimConfig}); each
 * call creates one provider, which the caller owns and closes.
 */
@ServiceProvider(value = RdmaProviderFactory.class, resolution = Resolution.OPTIONAL)
public final class SimProviderFactory implements RdmaProviderFactory {

    /** Creates the factory; {@link java.util.ServiceLoader} calls this. */
    public SimProviderFactory() {
    }

    @Override
    public String type() {
        return SimProvider.TYPE;
    }

    @Override
    public List<RdmaProvider> create(Map<String, ?> configuration) throws RdmaException {
        SimSettings settings;
        try {
            settings = SimSettings.fromMap(configuration == null ? Map.of() : configuration);
        } catch (IllegalArgumentException e) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, e.getMessage(), e);
        }
        try {
            return List.of(SimProvider.open(settings));
        } catch (IllegalArgumentException e) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, e.getMessage(), e);
        } catch (IOException e) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "invalid configuration: capture.path = "
                    + settings.capturePath + " cannot be written: " + e, e);
        }
    }
}
