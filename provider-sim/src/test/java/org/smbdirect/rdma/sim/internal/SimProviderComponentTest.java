package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.junit.jupiter.api.Test;
import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceRegistration;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderPair;
import org.smbdirect.rdma.tck.ProviderTck;
import org.smbdirect.rdma.tck.ProviderFixture;

/**
 * The DS component's life cycle, driven directly (the OSGi integration test drives it through SCR):
 * registration and its properties, live reconfiguration, replacement on identity or capability
 * changes, rejection of invalid changes, deactivation.
 */
class SimProviderComponentTest extends ProviderTck {
    private final List<Registration> registrations = new ArrayList<>();

    /** What the fake framework recorded of one registration. */
    private static final class Registration {
        final Object service;
        final Map<String, Object> properties = new HashMap<>();
        boolean unregistered;

        Registration(Object service, Dictionary<String, ?> props) {
            this.service = service;
            for (java.util.Enumeration<String> k = props.keys(); k.hasMoreElements();) {
                String key = k.nextElement();
                properties.put(key, props.get(key));
            }
        }
    }

    private BundleContext context() {
        return (BundleContext) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {BundleContext.class},
                (p, m, a) -> {
                    if (m.getName().equals("registerService")) {
                        @SuppressWarnings("unchecked")
                        Registration r = new Registration(a[1], (Dictionary<String, ?>) a[2]);
                        registrations.add(r);
                        return Proxy.newProxyInstance(getClass().getClassLoader(),
                                new Class<?>[] {ServiceRegistration.class}, (p2, m2, a2) -> {
                                    if (m2.getName().equals("unregister")) {
                                        r.unregistered = true;
                                    } else if (m2.getName().equals("setProperties")) {
                                        r.properties.clear();
                                        r.properties.putAll(new Registration(null,
                                                (Dictionary<String, ?>) a2[0]).properties);
                                    }
                                    return null;
                                });
                    }
                    throw new UnsupportedOperationException(m.getName());
                });
    }

    @Override
    protected ProviderFixture fixture() {
        return new SimFixture(false);
    }

    private static Map<String, Object> config(Object... kv) {
        Map<String, Object> m = new HashMap<>();
        m.put("fabric", "component");
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    @Test
    void activate_registersProviderWithTypeNameAndCapabilities() throws Exception {
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-a")), Map.of());
        Registration r = registrations.get(0);
        RdmaProvider p = (RdmaProvider) r.service;
        assertEquals("sim", r.properties.get(RdmaProvider.PROP_TYPE));
        assertEquals("comp-a", r.properties.get(RdmaProvider.PROP_NAME));
        for (Map.Entry<String, Object> e : p.capabilities().toServiceProperties().entrySet()) {
            assertEquals(e.getValue(), r.properties.get(e.getKey()), e.getKey());
        }
        c.deactivate();
        assertTrue(r.unregistered);
        assertThrows(org.smbdirect.rdma.RdmaException.class, () -> p.createCompletionQueue(1, q -> { }));
    }

    @Test
    void modified_liveSettings_keepTheProviderAndItsConnections() throws Exception {
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-b")), Map.of());
        SimProvider p = c.provider();
        ProviderPair pair = ProviderPair.of(p, p, new java.net.InetSocketAddress(p.address, 0), () -> { });
        Link l = link(pair, new LinkSpec());
        c.modified(SimSettings.configOf(config("name", "comp-b", "faults.seed", 99, "latency.enabled", true,
                "connectTimeoutMillis", 1234)), Map.of());
        assertSame(p, c.provider());
        assertEquals(99, p.live().faultSeed);
        assertEquals(1, registrations.size());
        assertRoundTrip(l);
        c.deactivate();
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.client().events().awaitTerminal().kind());
    }

    @Test
    void modified_capabilities_replaceTheProvider_oldConnectionsEndWithOnDisconnected() throws Exception {
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-c")), Map.of());
        SimProvider p = c.provider();
        ProviderPair pair = ProviderPair.of(p, p, new java.net.InetSocketAddress(p.address, 0), () -> { });
        Link l = link(pair, new LinkSpec());
        c.modified(SimSettings.configOf(config("name", "comp-c", "rdmaRead", false)), Map.of());
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.client().events().awaitTerminal().kind());
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.server().events().awaitTerminal().kind());
        assertNotSame(p, c.provider());
        assertEquals(2, registrations.size());
        assertTrue(registrations.get(0).unregistered);
        assertEquals(Boolean.FALSE, registrations.get(1).properties.get(RdmaProvider.PROP_RDMA_READ));
        c.deactivate();
    }

    @Test
    void modified_invalidValue_rejectedNamingKey_providerKeepsRunning() throws Exception {
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-d")), Map.of());
        SimProvider p = c.provider();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> c.modified(SimSettings.configOf(config("name", "comp-d", "maxSge", 0)), Map.of()));
        assertTrue(e.getMessage().contains("maxSge") && e.getMessage().contains("1..64"), e.getMessage());
        assertSame(p, c.provider());
        assertTrue(!p.isClosed());
        c.deactivate();
    }

    @Test
    void serviceRanking_isPublished_andChangedWithoutReplacingTheProvider() throws Exception {
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-e")),
                Map.of("service.ranking", 7));
        SimProvider p = c.provider();
        assertEquals(7, registrations.get(0).properties.get("service.ranking"));
        c.modified(SimSettings.configOf(config("name", "comp-e")), Map.of("service.ranking", "9"));
        assertSame(p, c.provider());
        assertEquals(1, registrations.size());
        assertEquals(9, registrations.get(0).properties.get("service.ranking"));
        c.modified(SimSettings.configOf(config("name", "comp-e")), Map.of());
        assertEquals(null, registrations.get(0).properties.get("service.ranking"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> c.modified(SimSettings.configOf(config("name", "comp-e")), Map.of("service.ranking", "high")));
        assertTrue(e.getMessage().contains("service.ranking"), e.getMessage());
        c.deactivate();
    }

    @Test
    void diagnosticsMBean_countsWhatTheProviderHolds_followsReplacement_goneAtDeactivation() throws Exception {
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = SimProviderComponent.objectName("comp-f");
        assertEquals("org.smbdirect.rdma.sim:type=SimProvider,name=\"comp-f\"", name.toString());
        SimProviderComponent c = new SimProviderComponent(context(), SimSettings.configOf(config("name", "comp-f")), Map.of());
        SimProvider p = c.provider();
        assertEquals("comp-f", jmx.getAttribute(name, "Name"));
        assertEquals("component", jmx.getAttribute(name, "Fabric"));
        assertEquals(List.of(0, 0, 0, 0), counts(jmx, name));

        ProviderPair pair = ProviderPair.of(p, p, new java.net.InetSocketAddress(p.address, 0), () -> { });
        Link l = link(pair, new LinkSpec());
        l.client().register(4096, Access.LOCAL_WRITE);
        // two endpoints, one region, a send and a receive queue per side, the listener
        assertEquals(List.of(2, 1, 4, 1), counts(jmx, name));

        // a replaced provider's MBean is the new provider's: nothing of the old one is counted
        c.modified(SimSettings.configOf(config("name", "comp-f", "rdmaRead", false)), Map.of());
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.client().events().awaitTerminal().kind());
        assertNotSame(p, c.provider());
        assertEquals(List.of(0, 0, 0, 0), counts(jmx, name));

        c.deactivate();
        assertFalse(jmx.isRegistered(name), "the MBean goes with the service");
    }

    /** Endpoints, regions, completion queues and listeners, as the MBean reports them. */
    private static List<Object> counts(MBeanServer jmx, ObjectName name) throws JMException {
        List<Object> v = new ArrayList<>();
        for (String a : new String[] {"Endpoints", "Regions", "CompletionQueues", "Listeners"}) {
            v.add(jmx.getAttribute(name, a));
        }
        return v;
    }

    @Test
    void activate_invalidConfiguration_refusedNamingKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SimProviderComponent(context(), SimSettings.configOf(config("capture.mtu", 1000)), Map.of()));
        assertTrue(e.getMessage().contains("capture.mtu"), e.getMessage());
        assertEquals(List.of(), registrations);
    }
}
