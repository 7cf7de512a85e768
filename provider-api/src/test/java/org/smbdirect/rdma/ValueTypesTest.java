package org.smbdirect.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Map;

import org.junit.jupiter.api.Test;

class ValueTypesTest {

    @Test
    void access_toString_namesBits() {
        assertEquals("NONE", Access.toString(0));
        assertEquals("LOCAL_WRITE|REMOTE_WRITE", Access.toString(Access.LOCAL_WRITE | Access.REMOTE_WRITE));
        assertEquals("REMOTE_READ|0x10", Access.toString(Access.REMOTE_READ | 0x10));
        assertTrue(Access.isRemote(Access.REMOTE_READ));
    }

    @Test
    void requestFlags_toString_namesBits() {
        assertEquals("SILENT_SUCCESS|INLINE", RequestFlags.toString(RequestFlags.SILENT_SUCCESS | RequestFlags.INLINE));
        assertEquals("DEFER|0x40", RequestFlags.toString(RequestFlags.DEFER | 0x40));
    }

    @Test
    void rdmaException_rejectsSuccessStatus() {
        assertThrows(IllegalArgumentException.class, () -> new RdmaException(RdmaStatus.SUCCESS, "x"));
        RdmaException e = new RdmaException(RdmaStatus.NOT_CONNECTED, "endpoint 7");
        assertEquals(RdmaStatus.NOT_CONNECTED, e.status());
        assertEquals("NOT_CONNECTED: endpoint 7", e.getMessage());
    }

    @Test
    void capabilities_publishAllServiceProperties() {
        ProviderCapabilities c = ProviderCapabilities.builder().rdmaRead(false).inlineLimit(256).maxSge(4)
                .maxRegionSize(1L << 33).maxIrd(8).maxOrd(4).build();
        Map<String, Object> p = c.toServiceProperties();
        assertEquals(Boolean.FALSE, p.get(RdmaProvider.PROP_RDMA_READ));
        assertEquals(256, p.get(RdmaProvider.PROP_INLINE_LIMIT));
        assertEquals(1L << 33, p.get(RdmaProvider.PROP_MAX_REGION_SIZE));
        assertEquals(TransportType.ROCE.displayName(), p.get(RdmaProvider.PROP_TRANSPORT));
        assertEquals(0L, p.get(RdmaProvider.PROP_LINK_SPEED));
        assertEquals(12, p.size());
        assertThrows(IllegalArgumentException.class, () -> ProviderCapabilities.builder().maxSge(0));
    }

    @Test
    void endpointOptions_rejectNonPositiveDepth() {
        CompletionQueue cq = new CompletionQueue() {
            public int depth() { return 1; }
            public int getResults(CompletionResult[] r) { return 0; }
            public int getResultsEx(CompletionResult[] r) { return 0; }
            public void arm(ArmType t) { }
            public void close() { }
        };
        assertThrows(IllegalArgumentException.class, () -> EndpointOptions.builder(cq, cq).sendQueueDepth(0));
        assertThrows(IllegalArgumentException.class, () -> EndpointOptions.builder(cq, cq).inlineThreshold(-1));
        assertEquals(64, EndpointOptions.builder(cq, cq).build().receiveQueueDepth());
    }

    @Test
    void sge_inline_capturesPositionAndRemaining() {
        ByteBuffer b = ByteBuffer.allocate(100).position(10).limit(30);
        Sge s = Sge.inline(b);
        assertEquals(10, s.offset());
        assertEquals(20, s.length());
        assertEquals(null, s.region());
    }

    @Test
    void completionResult_clearsTokenWhenNotInvalidated() {
        CompletionResult r = new CompletionResult().set("ctx", null, OperationType.RECEIVE, RdmaStatus.SUCCESS, 5,
                false, false, 0x1234);
        assertEquals(0, r.invalidatedToken());
        r.set("ctx", null, OperationType.RECEIVE, RdmaStatus.SUCCESS, 5, false, true, 0x1234);
        assertEquals(0x1234, r.invalidatedToken());
    }
}
