package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

class SettingsTest {

    @Test
    void emptyMap_givesTheDefaultsOfTheOsgiConfiguration() throws Exception {
        Settings s = Settings.from(Map.of());
        assertEquals(List.of(), s.devices);
        assertEquals(5000, s.resolveTimeoutMillis);
        assertEquals(10000, s.requestTimeoutMillis);
        assertEquals(7, s.retryCount);
        assertEquals(5000, s.closeTimeoutMillis);
        assertEquals(16, s.registrationCache);
        assertEquals(0, s.completionSpinMicroseconds, "no busy polling unless asked for");
    }

    @Test
    void values_acceptNumbersStringsListsAndArrays() throws Exception {
        assertEquals(List.of("rxe0", "mlx5_0"), Settings.from(Map.of("devices", "rxe0, mlx5_0")).devices);
        assertEquals(List.of("a", "b"), Settings.from(Map.of("devices", List.of("a", "b"))).devices);
        assertEquals(List.of("c"), Settings.from(Map.of("devices", new String[] {"c"})).devices);
        assertEquals(3, Settings.from(Map.of("retryCount", "3")).retryCount);
        assertEquals(250, Settings.from(Map.of("closeTimeoutMillis", 250L)).closeTimeoutMillis);
        assertEquals(9, Settings.from(Map.of("connectionRequestTimeoutMillis", 9)).requestTimeoutMillis);
        assertEquals(0, Settings.from(Map.of("registrationCache", "0")).registrationCache);
        assertEquals(100_000, Settings.from(Map.of("completionSpinMicroseconds", "100000")).completionSpinMicroseconds);
    }

    @Test
    void frameworkKeys_areIgnored() throws Exception {
        assertEquals(7, Settings.from(Map.of("service.pid", "x", "component.name", "y")).retryCount);
    }

    @Test
    void unknownKey_invalidParameterNamingIt() {
        RdmaException e = assertThrows(RdmaException.class, () -> Settings.from(Map.of("retries", 3)));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        assertTrue(e.getMessage().contains("retries"), e.getMessage());
    }

    @Test
    void outOfRangeOrMistypedValues_invalidParameter() {
        for (Map<String, ?> bad : List.of(Map.of("retryCount", 8), Map.of("retryCount", "many"),
                Map.of("resolveTimeoutMillis", 0), Map.of("closeTimeoutMillis", -1), Map.of("devices", 5),
                Map.of("registrationCache", -1), Map.of("completionSpinMicroseconds", -1),
                Map.of("completionSpinMicroseconds", 100_001),
                Map.of("retryCount", 1.5))) {
            RdmaException e = assertThrows(RdmaException.class, () -> Settings.from(bad), bad::toString);
            assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        }
    }
}
