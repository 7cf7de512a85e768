package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

class SimSettingsTest {

    @Test
    void defaults_areValid_andMatchTheDocumentedValues() {
        SimSettings s = SimSettings.fromMap(Map.of());
        assertEquals("default", s.fabric);
        assertTrue(s.capabilities.rdmaRead());
        assertTrue(s.capabilities.remoteInvalidate());
        assertEquals(256, s.capabilities.inlineLimit());
        assertEquals(4, s.capabilities.maxSge());
        assertEquals(1L << 30, s.capabilities.maxRegionSize());
        assertEquals(16, s.capabilities.maxIrd());
        assertEquals(16, s.capabilities.maxOrd());
        assertEquals(4096, s.capabilities.maxQueueDepth());
        assertEquals(65536, s.capabilities.maxCompletionQueueDepth());
        assertEquals(56, s.capabilities.maxPrivateData());
        assertEquals(2, s.fabricThreads);
        assertFalse(s.latencyEnabled);
        assertFalse(s.faultsEnabled());
        assertFalse(s.captureEnabled);
        assertEquals(4096, s.captureMtu);
    }

    /** Every out-of-range value is refused with a message naming the key and its range. */
    @ParameterizedTest(name = "{0} = {1}")
    @CsvSource(delimiter = '|', value = {
        "inlineLimit | -1 | 0..4096", "inlineLimit | 4097 | 0..4096",
        "maxSge | 0 | 1..64", "maxSge | 65 | 1..64",
        "maxRegionSize | 0 | 1..2147483647", "maxRegionSize | 2147483648 | 1..2147483647",
        "maxIrd | 256 | 0..255", "maxOrd | -1 | 0..255",
        "maxQueueDepth | 0 | 1..65536", "maxCompletionQueueDepth | 4194305 | 1..4194304",
        "maxPrivateData | 57 | 0..56", "fabricThreads | 0 | 1..64", "fabricThreads | 65 | 1..64",
        "connectTimeoutMillis | 0 | 1..3600000",
        "latency.microseconds | -1 | 0..10000000", "latency.bandwidthMbps | 0 | 1..10000000",
        "faults.disconnectAfterOperations | -1 | 0..2147483647",
        "faults.disconnectProbability | 1.5 | 0.0..1.0", "faults.delayProbability | -0.1 | 0.0..1.0",
        "faults.registrationFailureProbability | NaN | 0.0..1.0",
        "faults.receiverNotReadyProbability | 2 | 0.0..1.0",
        "faults.registrationFailureEvery | -3 | 0..2147483647", "faults.delayMillis | 60001 | 0..60000",
        "capture.maxFileBytes | 100 | 1024..", "capture.snapLength | 63 | 64..262144",
        "capture.mtu | 1500 | one of 256, 512, 1024, 2048, 4096",
        "address | 10.0.0.256 | an IPv4 unicast literal", "address | example.org | an IPv4 unicast literal",
        "address | 224.0.0.1 | an IPv4 unicast literal", "fabric | '' | a non-empty name",
        "name | has space | printable ASCII"})
    void outOfRange_refused_namingKeyAndRange(String key, String value, String range) {
        Map<String, Object> m = new HashMap<>();
        m.put(key, value);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SimSettings.fromMap(m));
        assertTrue(e.getMessage().contains(key), e.getMessage());
        assertTrue(e.getMessage().contains(range), e.getMessage());
    }

    @Test
    void unknownKey_refused_listingKnownKeys() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SimSettings.fromMap(Map.of("rdmaread", true)));
        assertTrue(e.getMessage().contains("rdmaread"));
        assertTrue(e.getMessage().contains("rdmaRead"));
    }

    @Test
    void wrongType_refused_namingKey() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SimSettings.fromMap(Map.of("rdmaRead", "maybe")));
        assertTrue(e.getMessage().contains("rdmaRead"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> SimSettings.fromMap(Map.of("maxSge", 2.5)));
        assertTrue(e.getMessage().contains("maxSge"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> SimSettings.fromMap(Map.of("capture.path", 7)));
        assertTrue(e.getMessage().contains("capture.path"), e.getMessage());
    }

    @Test
    void strings_andOtherNumberTypes_areConverted() {
        SimSettings s = SimSettings.fromMap(Map.of("maxSge", "8", "rdmaRead", "false", "maxRegionSize", 4096,
                "faults.disconnectProbability", "0.25", "faults.seed", 7));
        assertEquals(8, s.capabilities.maxSge());
        assertFalse(s.capabilities.rdmaRead());
        assertEquals(4096, s.capabilities.maxRegionSize());
        assertEquals(0.25, s.disconnectProbability);
        assertEquals(7L, s.faultSeed);
    }

    @Test
    void captureEnabled_needsAPath() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SimSettings.fromMap(Map.of("capture.enabled", true, "capture.path", " ")));
        assertTrue(e.getMessage().contains("capture.path"));
    }

    @Test
    void needsRestart_onlyForIdentityCapabilitiesAndThreads() {
        SimSettings a = SimSettings.fromMap(Map.of());
        assertFalse(a.needsRestart(SimSettings.fromMap(Map.of("faults.seed", 9, "latency.enabled", true,
                "capture.snapLength", 128, "connectTimeoutMillis", 5))));
        assertTrue(a.needsRestart(SimSettings.fromMap(Map.of("rdmaRead", false))));
        assertTrue(a.needsRestart(SimSettings.fromMap(Map.of("fabric", "other"))));
        assertTrue(a.needsRestart(SimSettings.fromMap(Map.of("fabricThreads", 3))));
    }

    @Test
    void factory_refusesBadConfiguration_withInvalidParameter() {
        RdmaException e = assertThrows(RdmaException.class,
                () -> new SimProviderFactory().create(Map.of("maxSge", 0)));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        assertTrue(e.getMessage().contains("maxSge"));
    }

    @Test
    void nameTaken_refused_untilTheProviderCloses() throws Exception {
        Map<String, Object> c = Map.of("fabric", "settings-name", "name", "unique-name");
        try (SimProvider a = SimProvider.open(SimSettings.fromMap(c))) {
            RdmaException e = assertThrows(RdmaException.class, () -> new SimProviderFactory().create(
                    Map.of("fabric", "other-fabric", "name", "unique-name")));
            assertTrue(e.getMessage().contains("name = unique-name"), e.getMessage());
            assertEquals("unique-name", a.name());
        }
        new SimProviderFactory().create(c).get(0).close();
    }

    @Test
    void addressTaken_onTheSameFabric_refused() throws Exception {
        Map<String, Object> c = Map.of("fabric", "settings-address", "address", "10.9.9.9");
        try (SimProvider a = SimProvider.open(SimSettings.fromMap(c))) {
            RdmaException e = assertThrows(RdmaException.class, () -> new SimProviderFactory().create(c));
            assertTrue(e.getMessage().contains("address = 10.9.9.9"), e.getMessage());
            assertEquals("10.9.9.9", a.addresses().get(0).getHostAddress());
        }
        new SimProviderFactory().create(c).get(0).close(); // free again
    }
}
