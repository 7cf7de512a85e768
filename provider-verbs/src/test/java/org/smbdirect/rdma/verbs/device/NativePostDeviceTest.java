package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.verbs.internal.NativeException;
import org.smbdirect.rdma.verbs.internal.VerbsNative;

/**
 * The native post as the device answers it: of several work requests, the device may refuse one
 * after accepting those before it; the library reports how many were posted (they complete) and
 * which was refused, instead of pretending none was.
 */
class NativePostDeviceTest {
    private Fixture f;
    private Fixture.Pair p;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
        p = f.connect(b -> b.maxSendSge(2), b -> b, null);
    }

    @AfterEach
    void close() {
        f.close();
    }

    @Test
    void postSend_deviceRefusesSecondOfTwo_firstPostedAndDelivered_exceptionSaysOnePosted() throws Exception {
        MemoryRegion into = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.server.postReceive("receive", new Sge[] {Sge.of(into, 0, 64)}, 1);
        MemoryRegion from = p.client.register(Fixture.direct(16), Access.LOCAL_WRITE);
        byte[] payload = "posted, then one".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        from.buffer().put(0, payload);

        // Two send records, written as the provider writes them; the second names far more
        // scatter/gather elements than the queue pair takes (2), which the device refuses.
        int second = VerbsNative.WR_SGE + VerbsNative.SGE_SIZE;
        int badSges = 1000;
        ByteBuffer records = ByteBuffer.allocateDirect(second + VerbsNative.WR_SGE + badSges * VerbsNative.SGE_SIZE)
                .order(ByteOrder.nativeOrder());
        long first = VerbsNative.bufferAddress(from.buffer());
        // wr_id of no endpoint: the provider's completion dispatch passes over this completion
        record(records, 0, 0xFFFF_FFFF_0000_0001L, 1);
        records.putLong(VerbsNative.WR_SGE, first).putInt(VerbsNative.WR_SGE + 8, 16)
                .putInt(VerbsNative.WR_SGE + 12, lkey(from));
        record(records, second, 0xFFFF_FFFF_0000_0002L, badSges);
        for (int i = 0; i < badSges; i++) {
            int at = second + VerbsNative.WR_SGE + i * VerbsNative.SGE_SIZE;
            records.putLong(at, first).putInt(at + 8, 1).putInt(at + 12, lkey(from));
        }

        NativeException e = assertThrows(NativeException.class,
                () -> VerbsNative.postSend(qp(p.client), VerbsNative.bufferAddress(records), 2));
        assertEquals(1, e.posted(), e.getMessage());
        assertTrue(e.getMessage().contains("request 2 of 2 refused, 1 posted"), e.getMessage());

        CompletionResult r = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, r.status(), r.toString());
        assertEquals(OperationType.RECEIVE, r.type());
        assertEquals(16, r.bytesTransferred(), "the first request was posted and delivered");
        byte[] got = new byte[16];
        into.buffer().get(0, got);
        assertArrayEquals(payload, got);
    }

    /**
     * The lone post ({@code postSendOne}): arguments it cannot post are refused before the device,
     * a request the device refuses is reported as not posted, and the queue pair carries on.
     */
    @Test
    void postSendOne_refusals_reportedAsNotPosted_queuePairCarriesOn() throws Exception {
        MemoryRegion into = p.server.register(Fixture.direct(64), Access.LOCAL_WRITE);
        p.server.postReceive("receive", new Sge[] {Sge.of(into, 0, 64)}, 1);
        MemoryRegion from = p.client.register(Fixture.direct(4096), Access.LOCAL_WRITE);
        from.buffer().put(0, "lone, after three".getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0, 16);
        long qp = qp(p.client);
        long address = VerbsNative.bufferAddress(from.buffer());
        long id = 0xFFFF_FFFF_0000_0003L; // of no endpoint, as above
        NativeException op = assertThrows(NativeException.class, () -> VerbsNative.postSendOne(qp, id, 99,
                VerbsNative.SEND_SIGNALED, 0, 0, 0, 1, address, 16, lkey(from)));
        assertTrue(op.getMessage().contains("unknown operation"), op.getMessage());
        NativeException two = assertThrows(NativeException.class, () -> VerbsNative.postSendOne(qp, id,
                VerbsNative.OP_SEND, VerbsNative.SEND_SIGNALED, 0, 0, 0, 2, address, 16, lkey(from)));
        assertTrue(two.getMessage().contains("0 or 1 element"), two.getMessage());
        // more inline bytes than any Soft-RoCE queue pair takes (within the buffer): the device refuses the post
        NativeException inline = assertThrows(NativeException.class, () -> VerbsNative.postSendOne(qp, id,
                VerbsNative.OP_SEND, VerbsNative.SEND_SIGNALED | VerbsNative.SEND_INLINE, 0, 0, 0, 1, address, 4096,
                lkey(from)));
        for (NativeException e : new NativeException[] {op, two, inline}) {
            assertEquals(0, e.posted(), e.getMessage());
        }
        VerbsNative.postSendOne(qp, id, VerbsNative.OP_SEND, VerbsNative.SEND_SIGNALED, 0, 0, 0, 1, address, 16,
                lkey(from));
        CompletionResult r = p.serverCq.one(Fixture.TIMEOUT);
        assertEquals(RdmaStatus.SUCCESS, r.status(), r.toString());
        assertEquals(16, r.bytesTransferred());
        byte[] got = new byte[16];
        into.buffer().get(0, got);
        assertEquals("lone, after thre", new String(got, java.nio.charset.StandardCharsets.US_ASCII));
    }

    private static void record(ByteBuffer records, int at, long wrId, int sges) {
        records.putLong(at + VerbsNative.WR_ID, wrId);
        records.putInt(at + VerbsNative.WR_OPCODE, VerbsNative.OP_SEND);
        records.putInt(at + VerbsNative.WR_FLAGS, VerbsNative.SEND_SIGNALED);
        records.putInt(at + VerbsNative.WR_NUM_SGE, sges);
    }

    /** The queue pair behind a verbs endpoint, which the provider keeps to itself. */
    private static long qp(Object endpoint) throws ReflectiveOperationException {
        Field f = endpoint.getClass().getDeclaredField("qp");
        f.setAccessible(true);
        return f.getLong(endpoint);
    }

    private static int lkey(MemoryRegion region) throws ReflectiveOperationException {
        Field f = region.getClass().getDeclaredField("lkey");
        f.setAccessible(true);
        return f.getInt(region);
    }
}
