package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;

import aQute.bnd.annotation.Resolution;
import aQute.bnd.annotation.spi.ServiceProvider;

/**
 * Creates verbs providers without OSGi, one per usable RDMA device, found through {@link
 * java.util.ServiceLoader}. Keys and defaults are those of {@link VerbsConfiguration}. Outside
 * OSGi, {@code libdisni.so} (packaged in the jar under {@code META-INF/native/linux-x86-64/}) must be on
 * {@code java.library.path}.
 */
@ServiceProvider(value = RdmaProviderFactory.class, resolution = Resolution.OPTIONAL)
public final class VerbsProviderFactory implements RdmaProviderFactory {

    private volatile String lastReason;

    /** Used by {@link java.util.ServiceLoader}. */
    public VerbsProviderFactory() {
    }

    @Override
    public String type() {
        return VerbsProvider.TYPE;
    }

    @Override
    public List<RdmaProvider> create(Map<String, ?> configuration) throws RdmaException {
        Settings settings = Settings.from(configuration == null ? Map.of() : configuration);
        Discovery.Result found = Discovery.discover(settings);
        if (found.devices.isEmpty()) {
            lastReason = found.reason;
            VerbsProvider.LOG.log(Level.INFO, "smbdirect verbs: no provider: " + found.reason);
            return List.of();
        }
        List<RdmaProvider> providers = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (Discovery.Device d : found.devices) {
            try {
                providers.add(new VerbsProvider(d, settings));
            } catch (RdmaException e) {
                failures.add(d.name + ": " + e.getMessage());
            }
        }
        lastReason = failures.isEmpty() ? null : String.join("; ", failures);
        if (!failures.isEmpty()) {
            VerbsProvider.LOG.log(Level.WARNING, "smbdirect verbs: devices not usable: " + lastReason);
        }
        return providers;
    }

    /**
     * Why the last {@link #create} returned fewer providers than there are devices.
     *
     * @return the reason, or {@code null} when every device gave a provider
     */
    public String lastReason() {
        return lastReason;
    }
}
