package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.smbdirect.smbj.SmbjOptions;

/** The typed configuration's properties reach the options new connections use. */
class SmbjComponentTest {

    @Test
    void toOptions_everyPropertyOtherThanItsDefault_reachesTheOptions() {
        Map<String, Object> values = Map.of("rdmaChannel", false, "rdmaThreshold", 65536, "remoteInvalidation", false,
                "connectTimeoutSeconds", 7, "readParts", 4, "writeParts", 3, "registerAhead", false);
        SmbjConfiguration c = (SmbjConfiguration) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {SmbjConfiguration.class}, (proxy, method, args) -> {
                    Object v = values.get(method.getName());
                    return v != null ? v : method.getDefaultValue();
                });
        SmbjOptions expected = SmbjOptions.builder().rdmaChannel(false).rdmaThreshold(65536).remoteInvalidation(false)
                .connectTimeout(Duration.ofSeconds(7)).readParts(4).writeParts(3).registerAhead(false).build();
        assertEquals(expected, SmbjComponent.toOptions(c));
        // each differs from the default, so a property that did not reach the options would show
        SmbjOptions d = SmbjOptions.defaults();
        assertTrue(d.rdmaChannel() && d.remoteInvalidation() && d.registerAhead());
        assertEquals(SmbjOptions.DEFAULT_RDMA_THRESHOLD, d.rdmaThreshold());
        assertEquals(Duration.ofSeconds(60), d.connectTimeout());
        assertEquals(SmbjOptions.DEFAULT_READ_PARTS, d.readParts());
        assertEquals(SmbjOptions.DEFAULT_WRITE_PARTS, d.writeParts());
    }

    @Test
    void toBuilder_keepsEveryOption() {
        SmbjOptions o = SmbjOptions.builder().rdmaChannel(false).rdmaThreshold(8192).remoteInvalidation(false)
                .connectTimeout(Duration.ofSeconds(5)).readParts(3).writeParts(5).registerAhead(false).build();
        assertEquals(o, o.toBuilder().build());
        assertEquals(o.toString(), o.toBuilder().build().toString());
    }
}
