package org.smbdirect.itest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.osgi.service.cm.Configuration;
import org.osgi.test.common.annotation.InjectService;
import org.osgi.test.common.annotation.Property;
import org.osgi.test.common.annotation.config.InjectConfiguration;
import org.osgi.test.common.annotation.config.WithConfiguration;
import org.osgi.test.common.annotation.config.WithFactoryConfiguration;
import org.osgi.test.junit5.cm.ConfigurationExtension;
import org.osgi.test.junit5.service.ServiceExtension;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.SmbDirect;

/**
 * The transport's configuration (PID {@code org.smbdirect.protocol}) changed through Configuration
 * Admin while the framework runs: connections made afterwards negotiate the new values, established
 * ones keep theirs and keep working (MS-SMBD 3.1.4.1 and 3.1.7.2 take the values at connection
 * time); an out-of-range value is refused with a log naming the field and its range, and the
 * previous configuration stays in force.
 */
@ExtendWith({ServiceExtension.class, ConfigurationExtension.class})
@WithFactoryConfiguration(factoryPid = Itest.SIM_PID, name = "config", location = "?", properties = {
    @Property(key = "fabric", value = "itest-config"), @Property(key = "name", value = "itest-config")})
class RuntimeConfigurationTest {
    private static final String PROVIDER = "sim/itest-config";

    @InjectService(timeout = 30_000)
    SmbDirect smbDirect;

    @Test
    void changedConfiguration_appliesToNewConnections_existingConnectionKeepsItsValuesAndWorks(
            @InjectConfiguration(withConfig = @WithConfiguration(pid = Itest.PROTOCOL_PID, location = "?",
                    properties = @Property(key = "provider.target", value = "(provider.name=itest-config)")))
            Configuration protocol) throws Exception {
        Endpoints.await("the transport uses " + PROVIDER, () -> PROVIDER.equals(smbDirect.provider()));
        assertEquals(1364, smbDirect.configuration().maxSendSize(), "the Windows default (MS-SMBD section 7)");
        try (Endpoints e = new Endpoints(smbDirect)) {
            Endpoints.Pair before = e.connect();
            assertParameters(before, 1364, 255);
            // ReceiveCreditMax is a ceiling (3.1.5.9): the initiator grants its first 32 receives and
            // grows to 255 when its peer sends that fast.
            Endpoints.await("the listener's peer holds the initial 32 send credits",
                    () -> before.passive.connection.statistics().sendCredits() == 32);
            assertGrantsGrowTo(before, 255);

            Dictionary<String, Object> p = protocol.getProperties();
            p.put("maxSendSize", 2048);
            p.put("receiveCreditMax", 64);
            protocol.update(p);
            Endpoints.await("the new configuration is in force", () -> smbDirect.configuration().maxSendSize() == 2048);
            assertEquals(64, smbDirect.configuration().receiveCreditMax());

            Endpoints.Pair after = e.connect();
            assertParameters(after, 2048, 64);
            Endpoints.await("the listener's peer holds the initial 32 send credits",
                    () -> after.passive.connection.statistics().sendCredits() == 32);
            assertGrantsGrowTo(after, 64);
            after.exchange("after the change");

            // The connection made before the change negotiated the old values and keeps them.
            assertTrue(before.active.connection.isOpen() && before.passive.connection.isOpen());
            assertParameters(before, 1364, 255);
            before.exchange("established before the change");
            assertTrue(before.active.connection.statistics().fragmentsSent() >= 16,
                    "20000 bytes go in fragments of MaxSendSize 1364 - 24 bytes");
        }
    }

    /**
     * The listener sends a burst, so that the initiator's receives grow to its ReceiveCreditMax and
     * no further; the initiator's next message then grants every receive it has posted.
     */
    private static void assertGrantsGrowTo(Endpoints.Pair pair, int receiveCreditMax) throws Exception {
        int n = 2000;
        List<CompletableFuture<Void>> sent = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sent.add(pair.passive.connection.send(ByteBuffer.wrap(new byte[] {(byte) i})).toCompletableFuture());
            if (sent.size() == 256 || i == n - 1) {
                CompletableFuture.allOf(sent.toArray(new CompletableFuture<?>[0]))
                        .get(Endpoints.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                sent.clear();
            }
        }
        for (int i = 0; i < n; i++) {
            assertEquals((byte) i, pair.active.next()[0], "message " + i + " of the burst");
        }
        pair.active.connection.sendAndWait(ByteBuffer.wrap(new byte[] {1}), Endpoints.TIMEOUT);
        pair.passive.next();
        Endpoints.await("the listener's peer holds " + receiveCreditMax + " send credits",
                () -> pair.passive.connection.statistics().sendCredits() == receiveCreditMax);
    }

    @Test
    void outOfRangeValue_isRefused_previousConfigurationStays_logNamesFieldAndRange(
            @InjectConfiguration(withConfig = @WithConfiguration(pid = Itest.PROTOCOL_PID, location = "?",
                    properties = {@Property(key = "provider.target", value = "(provider.name=itest-config)"),
                        @Property(key = "receiveCreditMax", value = "32", scalar = Property.Scalar.Integer)}))
            Configuration protocol) throws Exception {
        Endpoints.await("the configuration is in force", () -> smbDirect.configuration().receiveCreditMax() == 32
                && PROVIDER.equals(smbDirect.provider()));
        try (Logs logs = new Logs("org.smbdirect.protocol", Level.ALL); Endpoints e = new Endpoints(smbDirect)) {
            Dictionary<String, Object> p = protocol.getProperties();
            p.put("receiveCreditMax", 16); // valid, but part of a refused change
            p.put("maxSendSize", 100); // below the minimum of 128
            protocol.update(p);
            LogRecord refusal = Endpoints.await("the refusal is logged", () -> logs.records.stream()
                    .filter(r -> r.getMessage().contains("refused")).findFirst().orElse(null));
            assertEquals(Level.SEVERE, refusal.getLevel(), refusal.getMessage());
            assertTrue(refusal.getMessage().contains("org.smbdirect.protocol") && refusal.getMessage()
                    .contains("maxSendSize") && refusal.getMessage().contains("128")
                    && refusal.getMessage().contains("16777216") && refusal.getMessage().contains("100"),
                    "names the PID, the field, its range and the value: " + refusal.getMessage());
            assertEquals(1364, smbDirect.configuration().maxSendSize(), "the previous value stays in force");
            assertEquals(32, smbDirect.configuration().receiveCreditMax(), "nothing of the refused change applies");
            Endpoints.Pair pair = e.connect();
            assertParameters(pair, 1364, 32);
            pair.exchange("after a refused change");
        }
    }

    /** Both ends' values: each side's own MaxSendSize and credits, and what its peer derived from them. */
    private static void assertParameters(Endpoints.Pair pair, int maxSendSize, int receiveCreditMax) {
        ConnectionParameters a = pair.active.connection.parameters();
        ConnectionParameters b = pair.passive.connection.parameters();
        assertEquals(PROVIDER, a.provider());
        assertEquals(maxSendSize, a.maxSendSize(), "initiator's MaxSendSize: " + a);
        assertEquals(maxSendSize, b.maxSendSize(), "listener's MaxSendSize: " + b);
        // 3.1.5.6: the listener's MaxReceiveSize is min(its own 8192, the request's PreferredSendSize).
        assertEquals(maxSendSize, b.maxReceiveSize(), "what the listener derived from the request: " + b);
        assertEquals(receiveCreditMax, a.receiveCreditMax());
        assertEquals(receiveCreditMax, b.receiveCreditMax());
    }
}
