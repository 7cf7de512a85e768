package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaProvider;

/** What the provider reports about its device. */
class ProviderDeviceTest {
    private Fixture f;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
    }

    @AfterEach
    void close() {
        f.close();
    }

    @Test
    void identity_typeNameAndAddresses() {
        assertEquals("verbs", f.provider.type());
        String wanted = System.getenv("RDMA_VM_DEVICE");
        if (wanted != null) {
            assertEquals(wanted, f.provider.name());
        }
        String ip = System.getenv("RDMA_VM_IP");
        if (ip != null) {
            assertTrue(f.provider.addresses().stream().anyMatch(a -> a.getHostAddress().equals(ip)),
                    f.provider.addresses().toString());
        }
    }

    @Test
    void capabilities_comeFromTheDevice() {
        ProviderCapabilities c = f.provider.capabilities();
        assertTrue(c.rdmaRead());
        assertTrue(c.maxSge() >= 1);
        assertTrue(c.maxIrd() >= 1 && c.maxIrd() <= 254);
        assertTrue(c.maxOrd() >= 1 && c.maxOrd() <= 254);
        assertTrue(c.maxQueueDepth() >= 16);
        assertTrue(c.maxPrivateData() >= 8, "room for the MS-SMBD IRD/ORD negotiate header");
        // the port's active speed times its width (an active port of rxe or siw says at least 1x SDR)
        assertTrue(c.linkSpeed() >= 2_500_000_000L, "link speed " + c.linkSpeed());
        if ("rxe0".equals(f.provider.name())) {
            // Soft-RoCE (rdma_rxe): type 2B memory windows, 128 outstanding reads, 32 elements
            assertTrue(c.remoteInvalidate());
            assertEquals(128, c.maxIrd());
            assertEquals(128, c.maxOrd());
            assertEquals(32, c.maxSge());
            assertTrue(c.inlineLimit() > 0, "rxe queue pairs take inline data");
            assertEquals(56, c.maxPrivateData(), "an InfiniBand CM request carries 56 bytes for rdma_cm users");
        }
    }

    @Test
    void serviceProperties_describeTheProvider() throws Exception {
        Map<String, Object> props = ((org.smbdirect.rdma.verbs.internal.VerbsProvider) f.provider).serviceProperties();
        assertEquals("verbs", props.get(RdmaProvider.PROP_TYPE));
        assertEquals(f.provider.name(), props.get(RdmaProvider.PROP_NAME));
        assertEquals(f.provider.capabilities().remoteInvalidate(), props.get(RdmaProvider.PROP_REMOTE_INVALIDATE));
        assertEquals(f.provider.capabilities().maxSge(), props.get(RdmaProvider.PROP_MAX_SGE));
        assertTrue(props.get("provider.transport") instanceof String);
        assertTrue(((String[]) props.get("provider.addresses")).length >= 1);
    }
}
