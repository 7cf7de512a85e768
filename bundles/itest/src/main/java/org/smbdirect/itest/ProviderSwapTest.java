package org.smbdirect.itest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.Dictionary;
import java.util.Hashtable;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.test.common.annotation.InjectBundleContext;
import org.osgi.test.common.annotation.InjectService;
import org.osgi.test.common.annotation.Property;
import org.osgi.test.common.annotation.config.InjectConfiguration;
import org.osgi.test.common.annotation.config.WithConfiguration;
import org.osgi.test.common.annotation.config.WithFactoryConfiguration;
import org.osgi.test.junit5.cm.ConfigurationExtension;
import org.osgi.test.junit5.context.BundleContextExtension;
import org.osgi.test.junit5.service.ServiceExtension;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.SmbDirect;

/**
 * RDMA providers come and go while the transport runs (ARCHITECTURE.md, provider swap): a preferred
 * provider (higher {@code service.ranking}) takes new connections and the listener without
 * disturbing the connections of the provider they were on; {@code provider.target} keeps the
 * transport off providers it does not select, whatever their ranking.
 */
@ExtendWith({BundleContextExtension.class, ServiceExtension.class, ConfigurationExtension.class})
class ProviderSwapTest {
    @InjectService(timeout = 30_000)
    SmbDirect smbDirect;

    @InjectService(timeout = 30_000)
    ConfigurationAdmin configurationAdmin;

    @InjectBundleContext
    BundleContext context;

    @Test
    @WithFactoryConfiguration(factoryPid = Itest.SIM_PID, name = "swapA", location = "?", properties = {
        @Property(key = "fabric", value = "itest-swap"), @Property(key = "name", value = "itest-swapA")})
    void preferredProviderArrives_takesNewConnectionsAndListener_existingConnectionsUndisturbed(
            @InjectConfiguration(withConfig = @WithConfiguration(pid = Itest.PROTOCOL_PID, location = "?",
                    properties = @Property(key = "provider.target", value = "(provider.fabric=itest-swap)")))
            Configuration protocol) throws Exception {
        Endpoints.await("the transport uses provider A", () -> "sim/itest-swapA".equals(smbDirect.provider()));
        InetAddress addressA = providerAddress("itest-swapA");
        Configuration b = null;
        try (Endpoints e = new Endpoints(smbDirect)) {
            assertEquals(addressA, e.listener.localAddress().getAddress());
            int port = e.listener.localAddress().getPort();
            Endpoints.Pair onA = e.connect();
            assertEquals("sim/itest-swapA", onA.active.connection.parameters().provider());
            assertEquals("sim/itest-swapA", onA.passive.connection.parameters().provider());
            onA.exchange("on A");

            // Provider B on the same fabric, preferred by its ranking.
            b = configurationAdmin.getFactoryConfiguration(Itest.SIM_PID, "swapB", "?");
            Dictionary<String, Object> p = new Hashtable<>();
            p.put("fabric", "itest-swap");
            p.put("name", "itest-swapB");
            p.put("service.ranking", 10);
            b.update(p);
            Endpoints.await("the transport prefers provider B", () -> "sim/itest-swapB".equals(smbDirect.provider()));
            InetAddress addressB = providerAddress("itest-swapB");
            Endpoints.await("the listener moved to provider B", () -> e.listener.localAddress() != null
                    && addressB.equals(e.listener.localAddress().getAddress()));
            assertEquals(port, e.listener.localAddress().getPort(), "the listener keeps its port");
            assertEquals("sim", e.listener.providerType());

            Endpoints.Pair onB = e.connect();
            assertEquals("sim/itest-swapB", onB.active.connection.parameters().provider());
            assertEquals("sim/itest-swapB", onB.passive.connection.parameters().provider());
            assertEquals(addressB, onB.active.connection.remoteAddress().getAddress());
            onB.exchange("on B");

            // The connection on A is undisturbed: still open, still on A, still carrying messages.
            assertTrue(onA.active.connection.isOpen() && onA.passive.connection.isOpen());
            assertFalse(onA.active.loss.isDone() || onA.passive.loss.isDone());
            assertEquals("sim/itest-swapA", onA.active.connection.parameters().provider());
            onA.exchange("on A after B arrived");
            assertEquals(4, smbDirect.connections().size(), "two connections, both ends on this transport");
        } finally {
            if (b != null) {
                b.delete();
            }
        }
    }

    @Test
    @WithFactoryConfiguration(factoryPid = Itest.SIM_PID, name = "targetX", location = "?", properties = {
        @Property(key = "fabric", value = "itest-target"), @Property(key = "name", value = "itest-targetX")})
    @WithFactoryConfiguration(factoryPid = Itest.SIM_PID, name = "targetY", location = "?", properties = {
        @Property(key = "fabric", value = "itest-target"), @Property(key = "name", value = "itest-targetY"),
        @Property(key = "service.ranking", value = "100", scalar = Property.Scalar.Integer)})
    void providerTarget_selectsOneProvider_theOtherIsNotUsedDespiteItsRanking(
            @InjectConfiguration(withConfig = @WithConfiguration(pid = Itest.PROTOCOL_PID, location = "?",
                    properties = @Property(key = "provider.target", value = "(provider.name=itest-targetX)")))
            Configuration protocol) throws Exception {
        ServiceReference<RdmaProvider> y = Endpoints.await("provider Y is registered", () -> providerReference(
                "itest-targetY"));
        assertEquals(100, y.getProperty("service.ranking"), "Y outranks X");
        Endpoints.await("the transport uses X", () -> "sim/itest-targetX".equals(smbDirect.provider()));
        InetAddress addressX = providerAddress("itest-targetX");
        try (Endpoints e = new Endpoints(smbDirect)) {
            assertEquals(addressX, e.listener.localAddress().getAddress());
            Endpoints.Pair pair = e.connect();
            assertEquals("sim/itest-targetX", pair.active.connection.parameters().provider());
            assertEquals("sim/itest-targetX", pair.passive.connection.parameters().provider());
            pair.exchange("through X");
            assertEquals("sim/itest-targetX", smbDirect.provider(), "Y was never taken");
        }
    }

    private ServiceReference<RdmaProvider> providerReference(String name) {
        try {
            return context.getServiceReferences(RdmaProvider.class, "(provider.name=" + name + ")").stream()
                    .findFirst().orElse(null);
        } catch (org.osgi.framework.InvalidSyntaxException ex) {
            throw new IllegalArgumentException(ex);
        }
    }

    private InetAddress providerAddress(String name) throws InterruptedException {
        ServiceReference<RdmaProvider> ref = Endpoints.await("provider " + name + " is registered",
                () -> providerReference(name));
        RdmaProvider provider = context.getService(ref);
        try {
            return provider.addresses().get(0);
        } finally {
            context.ungetService(ref);
        }
    }
}
