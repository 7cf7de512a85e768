package org.smbdirect.rdma.sim.internal;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.Hashtable;
import java.util.Map;

import javax.management.JMException;
import javax.management.ObjectName;
import javax.management.StandardMBean;

import org.osgi.annotation.bundle.Capability;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceRegistration;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.ConfigurationPolicy;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.metatype.annotations.Designate;
import org.smbdirect.rdma.RdmaProvider;

/**
 * The simulated provider as a Declarative Services component. Without configuration it starts one
 * provider with the defaults; each factory configuration of {@link SimConfig#PID} makes another.
 * It registers the provider itself (rather than letting SCR do it) so that the service properties
 * are exactly {@code provider.type=sim}, {@code provider.name} and the capability properties.
 *
 * <p>Changes of the latency model, faults, capture and connect timeout apply to the running
 * provider. Changes of its identity (name, fabric, address), capabilities or thread count replace
 * it: every connection of the old provider ends with {@code onDisconnected}, then the new one is
 * registered. An invalid change is rejected (the exception names the key and its range) and the
 * provider keeps running as it was.
 *
 * <p>{@code service.ranking} in the configuration (OSGi only, not a provider setting) is published
 * as the service's ranking, so that a consumer preferring the highest ranking can be steered to
 * one provider; changing it updates the registration without replacing the provider.
 *
 * <p>While the service is registered, the provider's {@link ProviderDiagnostics} (live endpoints,
 * regions, completion queues, listeners) are a platform MBean named {@link #objectName}, so that
 * leak checks and operators can read them without importing anything of this bundle.
 */
// The component registers the service itself; declare it so that resolvers see the capability.
@Capability(namespace = "osgi.service", attribute = "objectClass:List<String>=\"org.smbdirect.rdma.RdmaProvider\"",
        uses = RdmaProvider.class, effective = "active")
@Component(service = {}, configurationPid = SimConfig.PID, configurationPolicy = ConfigurationPolicy.OPTIONAL,
        immediate = true)
@Designate(ocd = SimConfig.class, factory = true)
public final class SimProviderComponent {
    /** The JMX domain of the providers' diagnostics. */
    public static final String JMX_DOMAIN = "org.smbdirect.rdma.sim";
    private static final System.Logger LOG = System.getLogger(SimProviderComponent.class.getName());
    private final BundleContext context;
    private SimSettings requested;
    private SimProvider provider;
    private ServiceRegistration<RdmaProvider> registration;
    private ObjectName diagnostics;
    private Integer ranking;

    /**
     * Validates the configuration, creates the provider and registers it.
     *
     * @param context the bundle's context, to register the service
     * @param config the configuration
     * @param properties the configuration's raw properties, for {@code service.ranking}
     * @throws IOException when the capture file cannot be opened
     * @throws IllegalArgumentException naming the key and range of an invalid value
     */
    @Activate
    public SimProviderComponent(BundleContext context, SimConfig config, Map<String, Object> properties)
            throws IOException {
        this.context = context;
        SimSettings s = SimSettings.from(config);
        Integer r = ranking(properties);
        synchronized (this) {
            ranking = r;
            start(s);
        }
    }

    /**
     * Applies a changed configuration.
     *
     * @param config the new configuration
     * @param properties the configuration's raw properties, for {@code service.ranking}
     * @throws IOException when a new capture file cannot be opened
     * @throws IllegalArgumentException naming the key and range of an invalid value
     */
    @Modified
    void modified(SimConfig config, Map<String, Object> properties) throws IOException {
        SimSettings next = SimSettings.from(config);
        Integer r = ranking(properties);
        synchronized (this) {
            boolean rankingChanged = !java.util.Objects.equals(r, ranking);
            ranking = r;
            if (requested.needsRestart(next)) {
                stop();
                start(next);
            } else {
                provider.reconfigure(next);
                requested = next;
                if (rankingChanged) {
                    registration.setProperties(serviceProperties(provider));
                }
            }
        }
    }

    /** {@code service.ranking} as an Integer (the framework ignores any other type), or null when absent. */
    static Integer ranking(Map<String, Object> properties) {
        Object v = properties.get(Constants.SERVICE_RANKING);
        if (v == null) {
            return null;
        }
        if (v instanceof Integer || v instanceof Short || v instanceof Byte
                || v instanceof Long && (Long) v == ((Long) v).intValue()) {
            return ((Number) v).intValue();
        }
        if (v instanceof String) {
            try {
                return Integer.valueOf(((String) v).trim());
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        throw new IllegalArgumentException("invalid configuration: " + Constants.SERVICE_RANKING + " = " + v
                + " is out of range; expected an integer from " + Integer.MIN_VALUE + " to " + Integer.MAX_VALUE);
    }

    /** Unregisters and closes the provider: its connections end, its threads stop. */
    @Deactivate
    void deactivate() {
        synchronized (this) {
            stop();
        }
    }

    private void start(SimSettings s) throws IOException {
        SimProvider p = SimProvider.open(s);
        provider = p;
        requested = s;
        registration = context.registerService(RdmaProvider.class, p, serviceProperties(p));
        diagnostics = registerDiagnostics(p);
    }

    /**
     * The name of a provider's diagnostics MBean.
     *
     * @param providerName the provider's name
     * @return {@code org.smbdirect.rdma.sim:type=SimProvider,name="<providerName>"}
     */
    public static ObjectName objectName(String providerName) {
        try {
            return new ObjectName(JMX_DOMAIN + ":type=SimProvider,name=" + ObjectName.quote(providerName));
        } catch (javax.management.MalformedObjectNameException e) {
            throw new IllegalArgumentException(e); // a quoted value is always well formed
        }
    }

    /** Diagnostics are an aid: a provider works without its MBean, so a failure is only logged. */
    private static ObjectName registerDiagnostics(SimProvider p) {
        ObjectName name = objectName(p.name());
        ProviderDiagnostics d = new ProviderDiagnostics() {
            @Override
            public String getName() {
                return p.name();
            }

            @Override
            public String getFabric() {
                return p.fabric.name;
            }

            @Override
            public int getEndpoints() {
                return p.endpointCount();
            }

            @Override
            public int getRegions() {
                return p.regions.size();
            }

            @Override
            public int getCompletionQueues() {
                return p.completionQueueCount();
            }

            @Override
            public int getListeners() {
                return p.listenerCount();
            }
        };
        try {
            ManagementFactory.getPlatformMBeanServer().registerMBean(new StandardMBean(d, ProviderDiagnostics.class),
                    name);
            return name;
        } catch (JMException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "diagnostics MBean " + name + " not registered: " + e);
            return null;
        }
    }

    private Hashtable<String, Object> serviceProperties(SimProvider p) {
        Hashtable<String, Object> props = new Hashtable<>();
        for (Map.Entry<String, Object> e : p.serviceProperties().entrySet()) {
            props.put(e.getKey(), e.getValue());
        }
        if (ranking != null) {
            props.put(Constants.SERVICE_RANKING, ranking);
        }
        return props;
    }

    private void stop() {
        if (registration != null) {
            try {
                registration.unregister();
            } catch (IllegalStateException e) {
                // already unregistered because the bundle is stopping
            }
            registration = null;
        }
        if (diagnostics != null) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(diagnostics);
            } catch (JMException e) {
                LOG.log(System.Logger.Level.WARNING, "diagnostics MBean " + diagnostics + " not unregistered: " + e);
            }
            diagnostics = null;
        }
        if (provider != null) {
            provider.close();
            provider = null;
        }
    }

    /** The running provider (for tests in this package). */
    synchronized SimProvider provider() {
        return provider;
    }
}
