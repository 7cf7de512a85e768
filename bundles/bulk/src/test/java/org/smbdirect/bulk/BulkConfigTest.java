package org.smbdirect.bulk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Map;

import org.junit.jupiter.api.Test;

/** The configuration's defaults, property names and range checks. */
class BulkConfigTest {

    @Test
    void defaults_asDocumented_underTheirPropertyNames() {
        BulkConfig c = BulkConfig.defaults();
        assertEquals(Map.of("inlineThreshold", 8192, "maxInFlight", 4, "maxMessageSize", 1 << 30,
                "maxQueuedSends", 64), c.toMap());
        assertEquals(c, BulkConfig.builder().build());
        assertEquals(c.hashCode(), BulkConfig.builder().build().hashCode());
        assertNotEquals(c, BulkConfig.builder().maxInFlight(5).build());
    }

    @Test
    void outOfRange_refusedNamingTheFieldAndTheRange() {
        assertEquals("inlineThreshold must be between 0 and 1048576 (inclusive), was -1",
                assertThrows(IllegalArgumentException.class, () -> BulkConfig.builder().inlineThreshold(-1)).getMessage());
        assertEquals("inlineThreshold must be between 0 and 1048576 (inclusive), was 1048577",
                assertThrows(IllegalArgumentException.class, () -> BulkConfig.builder().inlineThreshold(1 << 20 | 1))
                        .getMessage());
        assertEquals("maxInFlight must be between 1 and 64 (inclusive), was 65",
                assertThrows(IllegalArgumentException.class, () -> BulkConfig.builder().maxInFlight(65)).getMessage());
        assertEquals("maxMessageSize must be between 1 and 2147483647 (inclusive), was 0",
                assertThrows(IllegalArgumentException.class, () -> BulkConfig.builder().maxMessageSize(0)).getMessage());
        assertEquals("maxQueuedSends must be between 1 and 65536 (inclusive), was 0",
                assertThrows(IllegalArgumentException.class, () -> BulkConfig.builder().maxQueuedSends(0)).getMessage());
        BulkConfig.builder().inlineThreshold(0).inlineThreshold(1 << 20).maxInFlight(1).maxInFlight(64)
                .maxMessageSize(Integer.MAX_VALUE).maxQueuedSends(65536).build();
    }
}
