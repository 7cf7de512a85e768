package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.HashMap;
import java.util.Hashtable;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkUtil;
import org.osgi.framework.ServiceEvent;
import org.osgi.framework.ServiceListener;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.service.metatype.AttributeDefinition;
import org.osgi.service.metatype.MetaTypeService;
import org.osgi.service.metatype.ObjectClassDefinition;
import org.osgi.util.tracker.ServiceTracker;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.rdma.RdmaProvider;

/**
 * The bundle in a real framework: Felix with SCR, Configuration Admin and Metatype, the simulator
 * and the engine. The system bundle exports the API packages so that this test and the bundles
 * share those classes.
 */
class OsgiFrameworkIT {
    private static final String[] BUNDLES = {"function", "promise", "component", "log", "configadmin", "metatype",
        "scr", "sim", "protocol", "bulk"};
    private Framework framework;
    private BundleContext context;
    private Bundle bulk;
    private final List<ServiceTracker<?, ?>> trackers = new ArrayList<>();

    @BeforeEach
    void launch(TestInfo test) throws Exception {
        Map<String, String> config = new HashMap<>();
        config.put(Constants.FRAMEWORK_STORAGE, System.getProperty("it.felix.cache", "target/felix-cache") + File.separator
                + test.getTestMethod().orElseThrow().getName());
        config.put(Constants.FRAMEWORK_STORAGE_CLEAN, Constants.FRAMEWORK_STORAGE_CLEAN_ONFIRSTINIT);
        config.put(Constants.FRAMEWORK_SYSTEMPACKAGES_EXTRA, "org.smbdirect.rdma;version=\"1.2.0\","
                + "org.smbdirect.transport;version=\"1.5.0\",org.smbdirect.bulk;version=\"1.0.0\","
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
        bulk = installed.get(installed.size() - 1);
        assertEquals("org.smbdirect.bulk", bulk.getSymbolicName());
        assertEquals(Bundle.ACTIVE, bulk.getState());
        assertNull(FrameworkUtil.getBundle(BulkTransfer.class), "the test and the bundles share the API classes");
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

    private <T> T await(Class<T> type) throws Exception {
        ServiceTracker<T, T> t = new ServiceTracker<>(context, type, null);
        t.open();
        trackers.add(t);
        T service = t.waitForService(BulkFixture.TIMEOUT.toMillis());
        assertNotNull(service, "no service " + type.getName() + " within " + BulkFixture.TIMEOUT);
        return service;
    }

    @Test
    void withoutConfiguration_defaults_sessionOverTheServices() throws Exception {
        BulkTransfer transfer = await(BulkTransfer.class);
        assertEquals(BulkConfig.defaults(), transfer.configuration());
        assertEquals(bulk, context.getServiceReference(BulkTransfer.class).getBundle());
        RdmaProvider provider = await(RdmaProvider.class);
        BlockingQueue<ByteBuffer> received = new LinkedBlockingQueue<>();
        BulkListener l = transfer.listen(new InetSocketAddress(provider.addresses().get(0), 0),
                s -> (session, data) -> received.add(data));
        BulkFixture.Received atClient = new BulkFixture.Received();
        BulkSession client = transfer.connect(l.localAddress(), atClient, BulkFixture.TIMEOUT);
        ByteBuffer data = BulkFixture.data(3 << 20, 3, false);
        client.sendAndWait(data, BulkFixture.TIMEOUT);
        assertEquals(BulkFixture.crc(data), BulkFixture.crc(received.poll(BulkFixture.TIMEOUT.toMillis(),
                TimeUnit.MILLISECONDS)));
        assertEquals(1, client.statistics().readTransfers());
        // the transport goes away: the component is deactivated and its session ends
        Bundle protocol = context.getServiceReference(org.smbdirect.transport.SmbDirect.class).getBundle();
        protocol.stop();
        atClient.loss();
        assertNull(context.getServiceReference(BulkTransfer.class));
    }

    @Test
    void configurationAdmin_valuesApply_invalidOnesAreRefused_metatypeDescribesThem() throws Exception {
        BulkTransfer transfer = await(BulkTransfer.class);
        ConfigurationAdmin ca = await(ConfigurationAdmin.class);
        Configuration c = ca.getConfiguration(BulkTransferComponent.PID, "?");
        Dictionary<String, Object> props = new Hashtable<>();
        props.put(BulkConfig.MAX_IN_FLIGHT, 2);
        props.put(BulkConfig.INLINE_THRESHOLD, 100);
        updateAndAwait(c, props);
        assertEquals(2, transfer.configuration().maxInFlight());
        assertEquals(100, transfer.configuration().inlineThreshold());
        props.put(BulkConfig.MAX_IN_FLIGHT, 0);
        updateAndAwait(c, props);
        assertEquals(2, transfer.configuration().maxInFlight(), "an invalid value leaves the previous in force");

        MetaTypeService metatype = await(MetaTypeService.class);
        ObjectClassDefinition ocd = metatype.getMetaTypeInformation(bulk)
                .getObjectClassDefinition(BulkTransferComponent.PID, null);
        Map<String, String> ranges = new HashMap<>();
        for (AttributeDefinition ad : ocd.getAttributeDefinitions(ObjectClassDefinition.ALL)) {
            ranges.put(ad.getID(), ad.getDefaultValue()[0] + " " + ad.validate(String.valueOf(-1)).isEmpty());
        }
        assertEquals(Map.of("inlineThreshold", "8192 false", "maxInFlight", "4 false",
                "maxMessageSize", "1073741824 false", "maxQueuedSends", "64 false"), ranges);
    }

    /** Updates the configuration and waits for SCR to pass it to the component (the service is modified). */
    private void updateAndAwait(Configuration c, Dictionary<String, Object> props) throws Exception {
        CountDownLatch modified = new CountDownLatch(1);
        Object expected = props.get(BulkConfig.MAX_IN_FLIGHT);
        ServiceListener l = e -> {
            if (e.getType() == ServiceEvent.MODIFIED
                    && expected.equals(e.getServiceReference().getProperty(BulkConfig.MAX_IN_FLIGHT))) {
                modified.countDown();
            }
        };
        context.addServiceListener(l, "(objectClass=" + BulkTransfer.class.getName() + ")");
        try {
            c.update(props);
            assertTrue(modified.await(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS),
                    "the component was not modified");
        } finally {
            context.removeServiceListener(l);
        }
    }
}
