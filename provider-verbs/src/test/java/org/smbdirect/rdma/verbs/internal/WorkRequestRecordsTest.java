package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * The records the native post reads, built from scatter/gather lists without a device: what each
 * bad element is refused with, and the bytes of a good record.
 */
class WorkRequestRecordsTest {
    private static final long ADDRESS = 0x10000;
    /** Registered without remote access: local reads and, with LOCAL_WRITE, writes. */
    private final VerbsMemoryRegion writable = region(Access.LOCAL_WRITE, 4096, 11);
    private final VerbsMemoryRegion readOnly = region(0, 4096, 12);

    @BeforeAll
    static void library() {
        Path library = Path.of(System.getProperty("java.library.path", "").split(":")[0], "libdisni.so");
        Assumptions.assumeTrue(Files.isRegularFile(library), "libdisni.so was not built on this machine (no gcc or "
                + "rdma-core headers): the records live in native memory");
        assertNull(NativeLibrary.load(), "the library loads");
    }

    private static VerbsMemoryRegion region(int access, int length, int lkey) {
        return new VerbsMemoryRegion(null, ByteBuffer.allocateDirect(length), ADDRESS, access, 1, lkey, 0, lkey);
    }

    private WorkRequestRecords records() {
        return new WorkRequestRecords(null, 4, 2, 64);
    }

    private Sge element(String which) {
        switch (which) {
            case "unset":
                return new Sge();
            case "heap":
                return Sge.inline(ByteBuffer.allocate(8));
            case "foreign":
                return Sge.of(new ForeignRegion(), 0, 8);
            case "invalidated": {
                VerbsMemoryRegion r = region(Access.LOCAL_WRITE, 4096, 13);
                r.invalidated();
                return Sge.of(r, 0, 8);
            }
            case "beyond":
                return Sge.of(writable, 4000, 100);
            case "readOnly":
                return Sge.of(readOnly, 0, 8);
            default:
                return Sge.of(writable, 0, 8);
        }
    }

    /** Each bad element is refused in a record (after a good one) and lone, the same way. */
    @ParameterizedTest(name = "{0} in a {1}: {2}")
    @CsvSource({
        "unset, send, INVALID_PARAMETER",
        "heap, send, INVALID_PARAMETER",
        "foreign, send, LOCAL_PROTECTION_ERROR",
        "invalidated, send, INVALID_TOKEN",
        "beyond, send, LOCAL_PROTECTION_ERROR",
        "unset, inline, INVALID_PARAMETER",
        "foreign, inline, LOCAL_PROTECTION_ERROR",
        "invalidated, inline, INVALID_TOKEN",
        "beyond, inline, INVALID_PARAMETER",
        // the device writes into the memory of an RDMA Read and of a receive
        "readOnly, read, LOCAL_PROTECTION_ERROR",
        "readOnly, receive, LOCAL_PROTECTION_ERROR",
        "beyond, receive, LOCAL_PROTECTION_ERROR",
        "foreign, receive, LOCAL_PROTECTION_ERROR",
    })
    void badElement_refusedWith(String which, String request, RdmaStatus expected) {
        Sge[] sgl = {Sge.of(writable, 0, 16), element(which)};
        if (request.equals("receive")) {
            RdmaException e = assertThrows(RdmaException.class, () -> records().receiveRequest(1, sgl, 2));
            assertEquals(expected, e.status(), e.getMessage());
            return;
        }
        int op = request.equals("read") ? VerbsNative.OP_READ : VerbsNative.OP_SEND;
        boolean inline = request.equals("inline");
        RdmaException inRecord = assertThrows(RdmaException.class,
                () -> records().sendElements(op, sgl, 2, inline, false));
        assertEquals(expected, inRecord.status(), inRecord.getMessage());
        Sge[] one = {sgl[1]};
        RdmaException alone = assertThrows(RdmaException.class, () -> records().sendElements(op, one, 1, inline, true));
        RdmaException chained = assertThrows(RdmaException.class,
                () -> records().sendElements(op, one, 1, inline, false));
        assertEquals(expected, alone.status(), alone.getMessage());
        assertEquals(chained.getMessage(), alone.getMessage(), "the same checks, lone or in a record");
    }

    @Test
    void readOnlyMemory_mayBeSentAndWritten() throws RdmaException {
        Sge[] sgl = {Sge.of(readOnly, 0, 8)};
        assertEquals(1, records().sendElements(VerbsNative.OP_WRITE, sgl, 1, false, false));
    }

    @Test
    void sendRecord_namesEachNonEmptyElement_andTheTotal() throws RdmaException {
        WorkRequestRecords records = records();
        Sge[] sgl = {Sge.of(writable, 16, 100), Sge.of(readOnly, 0, 0), Sge.of(readOnly, 8, 24)};
        // three elements: a record, though posted at once
        assertEquals(2, records.sendElements(VerbsNative.OP_SEND, sgl, 3, false, true), "the empty element is left out");
        assertEquals(124, records.sendBytes());
        records.sendRequest(0x500000007L, VerbsNative.OP_SEND, VerbsNative.SEND_SIGNALED, 0, 0, 0, 2);
        records.commit(2);
        assertNull(records.loneRequest());
        ByteBuffer r = records.sendRecord();
        assertEquals(0x500000007L, r.getLong(VerbsNative.WR_ID));
        assertEquals(VerbsNative.OP_SEND, r.getInt(VerbsNative.WR_OPCODE));
        assertEquals(2, r.getInt(VerbsNative.WR_NUM_SGE));
        int first = VerbsNative.WR_SGE;
        int second = first + VerbsNative.SGE_SIZE;
        assertEquals(ADDRESS + 16, r.getLong(first));
        assertEquals(100, r.getInt(first + 8));
        assertEquals(11, r.getInt(first + 12), "the writable region's lkey");
        assertEquals(ADDRESS + 8, r.getLong(second));
        assertEquals(24, r.getInt(second + 8));
        assertEquals(12, r.getInt(second + 12), "the read-only region's lkey");
    }

    @Test
    void inline_copiesTheBytes_upToTheThreshold() throws RdmaException {
        WorkRequestRecords records = records();
        ByteBuffer heap = ByteBuffer.wrap(new byte[] {1, 2, 3, 4, 5});
        writable.buffer().put(0, new byte[] {9, 8, 7});
        Sge[] sgl = {Sge.inline(heap), Sge.of(writable, 0, 3)};
        assertEquals(1, records.sendElements(VerbsNative.OP_SEND, sgl, 2, true, false), "one element: the inline copy");
        assertEquals(8, records.sendBytes());
        heap.put(0, (byte) 42); // the copy was made at the post
        assertEquals(8, records.sendRecord().getInt(VerbsNative.WR_SGE + 8));
        Sge[] tooLong = {Sge.inline(ByteBuffer.allocate(65))};
        RdmaException e = assertThrows(RdmaException.class,
                () -> records.sendElements(VerbsNative.OP_SEND, tooLong, 1, true, false));
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        assertTrue(e.getMessage().contains("inline threshold of 64"), e.getMessage());
    }

    @Test
    void receiveRecord_namesItsRegions() throws RdmaException {
        WorkRequestRecords records = records();
        VerbsMemoryRegion other = region(Access.LOCAL_WRITE, 64, 14);
        records.receiveRequest(0x580000003L, new Sge[] {Sge.of(writable, 0, 32), Sge.of(other, 0, 64)}, 2);
        ByteBuffer r = records.receiveRecord();
        assertEquals(0x580000003L, r.getLong(VerbsNative.RECV_ID));
        assertEquals(2, r.getInt(VerbsNative.RECV_NUM_SGE));
        assertEquals(14, r.getInt(VerbsNative.RECV_SGE + VerbsNative.SGE_SIZE + 12));
        assertArrayEquals(new Object[] {writable, other}, (Object[]) records.receiveRegions());
        other.deregistered();
        assertTrue(WorkRequestRecords.deregistered(records.receiveRegions()));
    }

    @Test
    void chain_recordsFollowEachOther_eachInlineCopyKept() throws RdmaException {
        WorkRequestRecords records = records();
        int n1 = records.sendElements(VerbsNative.OP_SEND, new Sge[] {Sge.of(writable, 0, 8), Sge.of(readOnly, 0, 4)},
                2, false, false);
        records.sendRequest(1, VerbsNative.OP_SEND, 0, 0, 0, 0, n1);
        records.commit(n1);
        // posted at once, but behind a deferred request: a record in the chain, not lone
        int n2 = records.sendElements(VerbsNative.OP_SEND, new Sge[] {Sge.inline(ByteBuffer.wrap(new byte[] {5, 6}))}, 1,
                true, true);
        records.sendRequest(2, VerbsNative.OP_SEND, 0, 0, 0, 0, n2);
        records.commit(n2);
        int n3 = records.sendElements(VerbsNative.OP_SEND, new Sge[] {Sge.inline(ByteBuffer.wrap(new byte[] {7}))}, 1,
                true, false);
        records.sendRequest(3, VerbsNative.OP_SEND, 0, 0, 0, 0, n3);
        records.commit(n3);
        assertEquals(3, records.chained());
        assertNull(records.loneRequest());
        ByteBuffer r = records.sendRecord();
        int second = VerbsNative.WR_SGE + 2 * VerbsNative.SGE_SIZE;
        int third = second + VerbsNative.WR_SGE + VerbsNative.SGE_SIZE;
        assertEquals(1, r.getLong(VerbsNative.WR_ID));
        assertEquals(2, r.getLong(second + VerbsNative.WR_ID), "the second record follows the first's two elements");
        assertEquals(3, r.getLong(third + VerbsNative.WR_ID));
        long inline2 = r.getLong(second + VerbsNative.WR_SGE);
        long inline3 = r.getLong(third + VerbsNative.WR_SGE);
        assertEquals(2, inline3 - inline2, "the third's inline copy follows the second's two bytes");
        records.clear();
        assertEquals(0, records.chained());
        for (int i = 0; i < WorkRequestRecords.MAX_CHAIN; i++) {
            records.sendRequest(i, VerbsNative.OP_SEND, 0, 0, 0, 0, 0);
            records.commit(0);
        }
        assertTrue(records.full());
    }

    /** A region of some other provider. */
    private static final class ForeignRegion implements MemoryRegion {
        @Override
        public int token() {
            return 0;
        }

        @Override
        public long remoteOffset() {
            return 0;
        }

        @Override
        public int length() {
            return 64;
        }

        @Override
        public int access() {
            return Access.LOCAL_WRITE;
        }

        @Override
        public ByteBuffer buffer() {
            return ByteBuffer.allocate(64);
        }

        @Override
        public Endpoint endpoint() {
            return null;
        }

        @Override
        public boolean isValid() {
            return true;
        }
    }
}
