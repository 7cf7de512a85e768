package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Dictionary;
import java.util.HashMap;
import java.util.Hashtable;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.service.metatype.AttributeDefinition;
import org.osgi.service.metatype.MetaTypeInformation;
import org.osgi.service.metatype.MetaTypeService;
import org.osgi.service.metatype.ObjectClassDefinition;
import org.osgi.util.tracker.ServiceTracker;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.Tck;

/**
 * The bundle in a real framework: Felix with SCR, Configuration Admin and Metatype. The system
 * bundle exports the provider API (and the CM and Metatype APIs) so that this test and the bundles
 * share those classes.
 */
class OsgiFrameworkIT {
    private static final String[] BUNDLES = {"function", "promise", "component", "log", "configadmin", "metatype",
        "scr", "sim"};
    private Framework framework;
    private BundleContext context;
    private Bundle sim;
    private final List<ServiceTracker<?, ?>> trackers = new ArrayList<>();

    @BeforeEach
    void launch(TestInfo test) throws Exception {
        Map<String, String> config = new HashMap<>();
        config.put(Constants.FRAMEWORK_STORAGE, System.getProperty("it.felix.cache", "target/felix-cache") + File.separator
                + test.getTestMethod().orElseThrow().getName());
        config.put(Constants.FRAMEWORK_STORAGE_CLEAN, Constants.FRAMEWORK_STORAGE_CLEAN_ONFIRSTINIT);
        config.put(Constants.FRAMEWORK_SYSTEMPACKAGES_EXTRA, "org.smbdirect.rdma;version=\"1.2.0\","
                + "org.osgi.service.cm;version=\"1.6.1\",org.osgi.service.metatype;version=\"1.4.1\"");
        framework = ServiceLoader.load(FrameworkFactory.class).iterator().next().newFramework(config);
        framework.start();
        context = framework.getBundleContext();
        List<Bundle> installed = new ArrayList<>();
        for (String b : BUNDLES) {
            String path = System.getProperty("it.bundle." + b);
            assertNotNull(path, "system property it.bundle." + b);
            installed.add(context.installBundle(new File(path).toURI().toString()));
        }
        for (Bundle b : installed) {
            b.start();
        }
        sim = installed.get(installed.size() - 1);
        assertEquals("org.smbdirect.rdma.sim", sim.getSymbolicName());
        assertEquals(Bundle.ACTIVE, sim.getState());
        // the test's own classes (this class loader) see the same API classes as the bundles
        assertNull(FrameworkUtil.getBundle(RdmaProvider.class));
    }

    @AfterEach
    void stop() throws Exception {
        for (ServiceTracker<?, ?> t : trackers) {
            t.close();
        }
        if (framework != null) {
            framework.stop();
            framework.waitForStop(TimeUnit.SECONDS.toMillis(30));
        }
    }

    private <T> T await(Class<T> type, String filter) throws Exception {
        String f = "(&(objectClass=" + type.getName() + ")" + (filter == null ? "" : filter) + ")";
        ServiceTracker<T, T> t = new ServiceTracker<>(context, context.createFilter(f), null);
        t.open();
        trackers.add(t);
        T service = t.waitForService(Tck.timeout().toMillis());
        assertNotNull(service, "no service " + f + " within " + Tck.timeout());
        return service;
    }

    private ServiceReference<RdmaProvider> reference(String filter) throws Exception {
        var refs = context.getServiceReferences(RdmaProvider.class, filter);
        return refs.isEmpty() ? null : refs.iterator().next();
    }

    @Test
    void withoutConfiguration_oneProviderWithCapabilityProperties_thatWorks() throws Exception {
        RdmaProvider p = await(RdmaProvider.class, "(provider.type=sim)");
        ServiceReference<RdmaProvider> ref = reference("(provider.type=sim)");
        assertEquals(p.name(), ref.getProperty(RdmaProvider.PROP_NAME));
        assertEquals(Boolean.TRUE, ref.getProperty(RdmaProvider.PROP_RDMA_READ));
        assertEquals(Boolean.TRUE, ref.getProperty(RdmaProvider.PROP_REMOTE_INVALIDATE));
        assertEquals(4, ref.getProperty(RdmaProvider.PROP_MAX_SGE));
        assertEquals(1L << 30, ref.getProperty(RdmaProvider.PROP_MAX_REGION_SIZE));
        assertEquals(56, ref.getProperty(RdmaProvider.PROP_MAX_PRIVATE_DATA));
        assertEquals(sim, ref.getBundle());
        exchange(p);

        MetaTypeService metatype = await(MetaTypeService.class, null);
        MetaTypeInformation info = metatype.getMetaTypeInformation(sim);
        assertTrue(Arrays.asList(info.getFactoryPids()).contains(SimConfig.PID));
        ObjectClassDefinition ocd = info.getObjectClassDefinition(SimConfig.PID, null);
        List<String> ids = new ArrayList<>();
        for (AttributeDefinition ad : ocd.getAttributeDefinitions(ObjectClassDefinition.ALL)) {
            ids.add(ad.getID());
        }
        assertTrue(ids.containsAll(List.of("fabric", "maxSge", "faults.seed", "capture.path", "latency.enabled")), ids.toString());
    }

    @Test
    void factoryConfigurations_makeProviders_capabilityChangeReplacesTheService() throws Exception {
        ConfigurationAdmin ca = await(ConfigurationAdmin.class, null);
        Configuration c = ca.getFactoryConfiguration(SimConfig.PID, "b", "?");
        Dictionary<String, Object> props = new Hashtable<>();
        props.put("name", "sim-b");
        props.put("fabric", "osgi-it");
        c.update(props);
        RdmaProvider b = await(RdmaProvider.class, "(provider.name=sim-b)");
        // DS: with factory configurations, one component per configuration replaces the unconfigured one
        long deadline0 = Tck.deadline();
        while (context.getServiceReferences(RdmaProvider.class, null).size() != 1) {
            assertTrue(System.nanoTime() - deadline0 < 0, "the unconfigured provider gives way to the configured one");
            LockSupport.parkNanos(5_000_000);
        }
        ServiceReference<RdmaProvider> before = reference("(provider.name=sim-b)");
        assertEquals(Boolean.TRUE, before.getProperty(RdmaProvider.PROP_RDMA_READ));
        exchange(b);

        props.put("rdmaRead", false);
        c.update(props);
        await(RdmaProvider.class, "(&(provider.name=sim-b)(provider.rdmaRead=false))");
        ServiceReference<RdmaProvider> after = reference("(provider.name=sim-b)");
        assertNotEquals(before.getProperty(Constants.SERVICE_ID), after.getProperty(Constants.SERVICE_ID),
                "a capability change registers a new provider");
        assertNull(reference("(&(provider.name=sim-b)(provider.rdmaRead=true))"), "the old registration is gone");

        c.delete();
        long deadline = Tck.deadline();
        while (reference("(provider.name=sim-b)") != null) {
            assertTrue(System.nanoTime() - deadline < 0, "deleting the configuration removes the provider");
            LockSupport.parkNanos(5_000_000);
        }
        await(RdmaProvider.class, "(provider.type=sim)"); // and the unconfigured one comes back
    }

    @Test
    void stoppingTheBundle_endsConnectionsWithOnDisconnected_andStopsThreads() throws Exception {
        RdmaProvider p = await(RdmaProvider.class, "(provider.type=sim)");
        EventRecorder[] events = exchange(p);
        sim.stop();
        assertEquals(EventRecorder.Kind.DISCONNECTED, events[0].awaitTerminal().kind());
        assertEquals(EventRecorder.Kind.DISCONNECTED, events[1].awaitTerminal().kind());
        assertNull(reference("(provider.type=sim)"));
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            assertFalse(t.isAlive() && t.getName().startsWith(Scheduler.THREAD_PREFIX + p.name() + "-"),
                    "thread left running: " + t.getName());
        }
    }

    /** Connects the provider to itself and sends one message; returns both sides' recorders. */
    private static EventRecorder[] exchange(RdmaProvider p) throws Exception {
        CompletionQueue cq = p.createCompletionQueue(16, q -> { });
        EventRecorder ce = new EventRecorder("client");
        EventRecorder se = new EventRecorder("server");
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener l = p.listen(new InetSocketAddress(p.addresses().get(0), 0), requests::add);
        Endpoint c = p.createEndpoint(EndpointOptions.builder(cq, cq).build(), ce);
        c.connect(l.localAddress(), new byte[] {1, 2, 3}, 1, 1);
        ConnectionRequest r = requests.poll(Tck.timeout().toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(r);
        Endpoint s = r.createEndpoint(EndpointOptions.builder(cq, cq).build(), se);
        MemoryRegion in = s.register(ByteBuffer.allocateDirect(16), Access.LOCAL_WRITE);
        s.postReceive("r", new Sge[] {Sge.of(in)}, 1);
        r.accept(s, null, 1, 1);
        ce.awaitEstablished();
        se.awaitEstablished();
        MemoryRegion out = c.register(ByteBuffer.allocateDirect(16), 0);
        c.postSend("s", new Sge[] {Sge.of(out, 0, 8)}, 1, 0);
        CompletionResult[] res = {new CompletionResult()};
        int seen = 0;
        long deadline = Tck.deadline();
        while (seen < 2) {
            if (cq.getResults(res) == 1) {
                assertEquals(RdmaStatus.SUCCESS, res[0].status());
                seen++;
            }
            assertTrue(System.nanoTime() - deadline < 0);
        }
        return new EventRecorder[] {ce, se};
    }
}
