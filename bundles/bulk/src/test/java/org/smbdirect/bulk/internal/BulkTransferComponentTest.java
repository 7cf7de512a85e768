package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectException;

/** The DS component: typed configuration checked by {@link BulkConfig}, metatype and defaults in agreement. */
class BulkTransferComponentTest {

    /** A configuration as SCR would hand it: the given values, the annotation's defaults otherwise. */
    static BulkConfiguration configuration(Map<String, Object> values) {
        return (BulkConfiguration) Proxy.newProxyInstance(BulkConfiguration.class.getClassLoader(),
                new Class<?>[] {BulkConfiguration.class}, (p, m, a) -> {
                    if (m.getDeclaringClass() == Object.class || m.getName().equals("annotationType")) {
                        return m.getName().equals("annotationType") ? BulkConfiguration.class : null;
                    }
                    return values.getOrDefault(m.getName(), m.getDefaultValue());
                });
    }

    /** The annotation's defaults are BulkConfig's (the ranges the metatype advertises are checked on the jar). */
    @Test
    void configurationDefaults_agreeWithBulkConfig() throws Exception {
        assertEquals(BulkConfig.defaults(), BulkTransferComponent.toConfig(configuration(Map.of())));
        Map<String, Object> defaults = BulkConfig.defaults().toMap();
        for (Method m : BulkConfiguration.class.getDeclaredMethods()) {
            assertEquals(defaults.get(m.getName()), m.getDefaultValue(), m.getName());
        }
        assertEquals(defaults.keySet(), java.util.Arrays.stream(BulkConfiguration.class.getDeclaredMethods())
                .map(Method::getName).collect(java.util.stream.Collectors.toSet()));
        assertEquals("org.smbdirect.bulk", BulkTransferComponent.PID);
    }

    @Test
    void activation_invalidValue_failsNamingTheField_modifiedInvalid_keepsThePrevious() throws Exception {
        try (BulkFixture fx = new BulkFixture()) {
            SmbDirect t = fx.transport(fx.provider(Map.of()), SmbDirectConfig.defaults());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> new BulkTransferComponent(t, configuration(Map.of("maxInFlight", 0))));
            assertEquals("maxInFlight must be between 1 and 64 (inclusive), was 0", e.getMessage());
            BulkTransferComponent c = new BulkTransferComponent(t, configuration(Map.of("maxInFlight", 2)));
            assertEquals(2, c.configuration().maxInFlight());
            c.modified(configuration(Map.of("maxInFlight", 3, "inlineThreshold", 100)));
            assertEquals(3, c.configuration().maxInFlight());
            c.modified(configuration(Map.of("maxQueuedSends", 0)));
            assertEquals(3, c.configuration().maxInFlight());
            assertEquals(100, c.configuration().inlineThreshold());
            c.deactivate();
        }
    }

    /** Through the component, one provider for both ends; deactivation stops listeners and closes sessions. */
    @Test
    void component_connectsAndListens_deactivateClosesWhatItMade() throws Exception {
        try (BulkFixture fx = new BulkFixture()) {
            var provider = fx.provider(Map.of());
            SmbDirect t = fx.transport(provider, SmbDirectConfig.defaults());
            BulkTransferComponent c = new BulkTransferComponent(t, configuration(new HashMap<>()));
            BlockingQueue<BulkSession> accepted = new LinkedBlockingQueue<>();
            BulkFixture.Received atServer = new BulkFixture.Received();
            BulkListener l = c.listen(new java.net.InetSocketAddress(provider.addresses().get(0), 0), s -> {
                accepted.add(s);
                return atServer;
            });
            BulkFixture.Received atClient = new BulkFixture.Received();
            BulkSession client = c.connect(l.localAddress(), atClient, BulkFixture.TIMEOUT);
            BulkSession server = accepted.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            ByteBuffer d = BulkFixture.data(1 << 20, 1, true);
            client.sendAndWait(d, BulkFixture.TIMEOUT);
            assertEquals(BulkFixture.crc(d), BulkFixture.crc(atServer.next()));
            c.deactivate();
            atClient.loss();
            atServer.loss();
            assertTrue(!client.connection().isOpen() && !server.connection().isOpen());
            assertTrue(t.connections().isEmpty());
            java.net.InetSocketAddress address = l.localAddress();
            assertThrows(org.smbdirect.transport.SmbDirectException.class,
                    () -> c.connect(address, atClient, BulkFixture.TIMEOUT), "the listener was stopped");
        }
    }

    /**
     * Found by the bundle lifecycle test (bundles/itest): the service object of a deactivated
     * component, still held by a consumer racing with the service's removal, went on listening and
     * connecting, making listeners and sessions that no deactivation would ever close. It refuses
     * with {@link SmbDirectException} instead, and opens nothing.
     */
    @Test
    void deactivatedComponent_refusesListenAndConnect_opensNothing() throws Exception {
        try (BulkFixture fx = new BulkFixture()) {
            var provider = fx.provider(Map.of());
            SmbDirect t = fx.transport(provider, SmbDirectConfig.defaults());
            BulkTransferComponent live = new BulkTransferComponent(t, configuration(new HashMap<>()));
            java.net.InetSocketAddress any = new java.net.InetSocketAddress(provider.addresses().get(0), 0);
            BulkListener l = live.listen(any, s -> new BulkFixture.Received());
            BulkTransferComponent c = new BulkTransferComponent(t, configuration(new HashMap<>()));
            c.deactivate();

            SmbDirectException refused = assertThrows(SmbDirectException.class,
                    () -> c.listen(any, s -> new BulkFixture.Received()));
            assertTrue(refused.getMessage().contains("closed"), refused.getMessage());
            ExecutionException failed = assertThrows(ExecutionException.class, () -> c.connect(l.localAddress(),
                    new BulkFixture.Received()).toCompletableFuture().get(BulkFixture.TIMEOUT.toMillis(),
                            TimeUnit.MILLISECONDS));
            assertInstanceOf(SmbDirectException.class, failed.getCause());
            assertThrows(SmbDirectException.class,
                    () -> c.connect(l.localAddress(), new BulkFixture.Received(), BulkFixture.TIMEOUT));
            assertEquals(java.util.List.of(), t.connections(), "no connection was made");
            live.deactivate();
        }
    }
}
