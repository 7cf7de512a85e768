package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/** Wrong use from Java is rejected in Java, before native code, and leaves the endpoint usable. */
class PostCheckDeviceTest {
    private Fixture f;
    private Fixture.Pair p;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
        p = f.connect(b -> b.sendQueueDepth(2).maxSendSge(2), b -> b.receiveQueueDepth(2), null);
    }

    @AfterEach
    void close() {
        f.close();
    }

    private static void rejected(RdmaStatus expected, Executable call) {
        RdmaException e = assertThrows(RdmaException.class, call);
        assertEquals(expected, e.status(), e.getMessage());
    }

    @Test
    void register_heapBuffer_invalidParameter() {
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.register(ByteBuffer.allocate(64), Access.LOCAL_WRITE));
    }

    @Test
    void register_badAccessOrEmptyOrReadOnlyForWriting_invalidParameter() {
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.register(Fixture.direct(8), 0x40));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.register(Fixture.direct(8), Access.REMOTE_WRITE));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.register(Fixture.direct(8).position(8), 0));
        rejected(RdmaStatus.INVALID_PARAMETER,
                () -> p.client.register(Fixture.direct(8).asReadOnlyBuffer(), Access.LOCAL_WRITE));
    }

    @Test
    void register_readOnlyBufferForReading_works() throws Exception {
        MemoryRegion r = p.client.register(Fixture.direct(8).asReadOnlyBuffer(), Access.REMOTE_READ);
        assertEquals(8, r.length());
    }

    @Test
    void register_coversPositionToLimit_andLeavesTheBufferAlone() throws Exception {
        ByteBuffer b = Fixture.direct(100).position(10).limit(30);
        MemoryRegion r = p.client.register(b, Access.LOCAL_WRITE);
        assertEquals(20, r.length());
        assertEquals(10, b.position());
        assertEquals(30, b.limit());
        r.buffer().put(0, (byte) 5);
        assertEquals(5, b.get(10), "the region's view shares the registered memory");
        assertEquals(0, r.buffer().position());
        assertEquals(20, r.buffer().capacity());
    }

    @Test
    void element_outsideItsRegion_localProtectionError() throws Exception {
        MemoryRegion r = p.client.register(Fixture.direct(16), Access.LOCAL_WRITE);
        rejected(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> p.client.postSend(null, new Sge[] {Sge.of(r, 8, 9)}, 1, 0));
        rejected(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> p.client.postSend(null, new Sge[] {Sge.of(r, -1, 4)}, 1, 0));
    }

    @Test
    void element_ofAnotherEndpoint_localProtectionError() throws Exception {
        MemoryRegion others = p.server.register(Fixture.direct(16), Access.LOCAL_WRITE);
        rejected(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> p.client.postSend(null, new Sge[] {Sge.of(others)}, 1, 0));
    }

    @Test
    void receiveOrReadIntoRegionWithoutLocalWrite_localProtectionError() throws Exception {
        MemoryRegion ro = p.server.register(Fixture.direct(16), 0);
        rejected(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> p.server.postReceive(null, new Sge[] {Sge.of(ro)}, 1));
        MemoryRegion clientRo = p.client.register(Fixture.direct(16), 0);
        rejected(RdmaStatus.LOCAL_PROTECTION_ERROR,
                () -> p.client.postRead(null, new Sge[] {Sge.of(clientRo)}, 1, 0, 1, 0));
    }

    @Test
    void element_ofADeregisteredRegion_invalidToken() throws Exception {
        MemoryRegion r = p.client.register(Fixture.direct(16), 0);
        p.client.deregister(r);
        rejected(RdmaStatus.INVALID_TOKEN, () -> p.client.postSend(null, new Sge[] {Sge.of(r)}, 1, 0));
    }

    @Test
    void flagsAndCounts_invalidParameter() throws Exception {
        MemoryRegion r = p.client.register(Fixture.direct(16), Access.LOCAL_WRITE);
        Sge[] three = {Sge.of(r, 0, 4), Sge.of(r, 4, 4), Sge.of(r, 8, 4)};
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.postSend(null, three, 3, 0));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.postSend(null, three, 1, 0x100));
        rejected(RdmaStatus.INVALID_PARAMETER,
                () -> p.client.postWrite(null, three, 1, 0, 1, RequestFlags.SOLICIT_EVENT));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.postRead(null, three, 1, 0, 1, RequestFlags.INLINE));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.postRead(null, three, 0, 0, 1, 0));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> p.server.postReceive(null, three, 0));
        rejected(RdmaStatus.INVALID_PARAMETER,
                () -> p.client.postSend(null, three, 1, RequestFlags.INLINE), "the endpoint allows no inline data");
    }

    private static void rejected(RdmaStatus expected, Executable call, String why) {
        RdmaException e = assertThrows(RdmaException.class, call, why);
        assertEquals(expected, e.status(), why + ": " + e.getMessage());
    }

    @Test
    void receiveQueueFull_insufficientResources() throws Exception {
        MemoryRegion r = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.server.postReceive(1, new Sge[] {Sge.of(r, 0, 8)}, 1);
        p.server.postReceive(2, new Sge[] {Sge.of(r, 8, 8)}, 1);
        rejected(RdmaStatus.INSUFFICIENT_RESOURCES, () -> p.server.postReceive(3, new Sge[] {Sge.of(r, 16, 8)}, 1));
    }

    @Test
    void notConnected_sendsRejected_receivesAllowedFromIdle() throws Exception {
        Fixture.Cq cq = f.cq(8);
        EndpointOptions o = f.options(cq).build();
        var idle = f.track(f.provider.createEndpoint(o, new RecordingListener()));
        MemoryRegion r = idle.register(Fixture.direct(16), Access.LOCAL_WRITE);
        rejected(RdmaStatus.NOT_CONNECTED, () -> idle.postSend(null, new Sge[] {Sge.of(r)}, 1, 0));
        rejected(RdmaStatus.NOT_CONNECTED, () -> idle.postWrite(null, new Sge[] {Sge.of(r)}, 1, 0, 1, 0));
        idle.postReceive("early", new Sge[] {Sge.of(r)}, 1);
    }

    @Test
    void endpointOptions_beyondCapabilities_invalidParameter() throws Exception {
        Fixture.Cq cq = f.cq(8);
        int maxSge = f.provider.capabilities().maxSge();
        int inline = f.provider.capabilities().inlineLimit();
        rejected(RdmaStatus.INVALID_PARAMETER, () -> f.provider.createEndpoint(
                f.options(cq).maxSendSge(maxSge + 1).build(), new RecordingListener()));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> f.provider.createEndpoint(
                f.options(cq).inlineThreshold(inline + 1).build(), new RecordingListener()));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> f.provider.createEndpoint(
                f.options(cq).sendQueueDepth(f.provider.capabilities().maxQueueDepth() + 1).build(),
                new RecordingListener()));
        rejected(RdmaStatus.INVALID_PARAMETER, () -> f.provider.createCompletionQueue(0, q -> { }));
    }

    @Test
    void register_largerThanTheDeviceAllows_invalidParameter() throws Exception {
        long max = f.provider.capabilities().maxRegionSize();
        if (max < Integer.MAX_VALUE) {
            rejected(RdmaStatus.INVALID_PARAMETER, () -> p.client.register(Fixture.direct((int) max + 1), 0));
        } else {
            // Region sizes are bounded by ByteBuffer's; the provider caps maxRegionSize to that.
            assertEquals(Integer.MAX_VALUE, max);
        }
    }
}
