package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.Hashtable;
import java.util.List;

import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceRegistration;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.ConfigurationPolicy;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.metatype.annotations.Designate;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;

/**
 * Publishes one {@link RdmaProvider} service per usable RDMA device ({@code provider.type=verbs},
 * {@code provider.name} = device name). Without a device, or without the native libraries, it
 * logs one line saying why, starts no thread and holds no native resource; instead of providers it
 * registers one plain {@code Object} service carrying that reason in {@value #UNAVAILABLE} (with
 * {@code provider.type=verbs}), which the shell's {@code providers} command shows.
 * Deactivation closes every provider: each connection ends with {@code onDisconnected} and every
 * native resource is released.
 */
@Component(service = {}, immediate = true, configurationPid = VerbsConfiguration.PID,
        configurationPolicy = ConfigurationPolicy.OPTIONAL)
@Designate(ocd = VerbsConfiguration.class)
public final class VerbsProviderComponent {
    /** The service property saying why no verbs provider is offered. */
    public static final String UNAVAILABLE = "provider.unavailable";

    private final List<VerbsProvider> providers = new ArrayList<>();
    private final List<ServiceRegistration<RdmaProvider>> registrations = new ArrayList<>();
    private ServiceRegistration<Object> unavailable;

    /**
     * Discovers the devices and registers their providers.
     *
     * @param context the bundle's context
     * @param configuration the configuration
     */
    @Activate
    public VerbsProviderComponent(BundleContext context, VerbsConfiguration configuration) {
        Settings settings;
        try {
            settings = Settings.from(configuration);
        } catch (RdmaException e) {
            VerbsProvider.LOG.log(Level.ERROR, "smbdirect verbs: no provider registered: bad configuration: "
                    + e.getMessage());
            unavailable(context, "bad configuration: " + e.getMessage());
            return;
        }
        Discovery.Result found = Discovery.discover(settings);
        if (found.devices.isEmpty()) {
            VerbsProvider.LOG.log(Level.INFO, "smbdirect verbs: no RDMA provider registered: " + found.reason);
            unavailable(context, found.reason);
            return;
        }
        List<String> failures = new ArrayList<>();
        for (Discovery.Device d : found.devices) {
            try {
                VerbsProvider p = new VerbsProvider(d, settings);
                providers.add(p);
                Dictionary<String, Object> props = new Hashtable<>(p.serviceProperties());
                registrations.add(context.registerService(RdmaProvider.class, p, props));
            } catch (RdmaException | RuntimeException e) {
                failures.add(d.name + ": " + e.getMessage());
            }
        }
        if (providers.isEmpty()) {
            VerbsProvider.LOG.log(Level.WARNING, "smbdirect verbs: no RDMA provider registered: "
                    + String.join("; ", failures));
            unavailable(context, String.join("; ", failures));
        } else if (!failures.isEmpty()) {
            VerbsProvider.LOG.log(Level.WARNING, "smbdirect verbs: devices not published: "
                    + String.join("; ", failures));
        }
    }

    private void unavailable(BundleContext context, String reason) {
        Dictionary<String, Object> props = new Hashtable<>();
        props.put("provider.type", VerbsProvider.TYPE);
        props.put(UNAVAILABLE, reason);
        unavailable = context.registerService(Object.class, new Object(), props);
    }

    /** Unregisters and closes the providers. */
    @Deactivate
    void deactivate() {
        if (unavailable != null) {
            try {
                unavailable.unregister();
            } catch (IllegalStateException e) {
                // already gone with the bundle
            }
            unavailable = null;
        }
        for (ServiceRegistration<RdmaProvider> r : registrations) {
            try {
                r.unregister();
            } catch (IllegalStateException e) {
                // already gone with the bundle
            }
        }
        registrations.clear();
        for (VerbsProvider p : providers) {
            p.close();
        }
        providers.clear();
    }
}
