package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.transport.BufferDescriptorV1;

/**
 * MS-SMBD 3.1.4.5 and 3.1.4.6: indexing into a descriptor array by offset and length, and the
 * work requests an operation is cut into.
 */
class RdmaTransferTest {
    private static final List<BufferDescriptorV1> THREE = List.of(new BufferDescriptorV1(1000, 1, 100),
            new BufferDescriptorV1(5000, 2, 200), new BufferDescriptorV1(9000, 3, 300));

    @Test
    void peerRanges_firstElementTrailingAndLastElementLeading() {
        List<BufferDescriptorV1> r = RdmaTransfer.peerRanges(THREE, 50, 400);
        assertEquals(List.of(new BufferDescriptorV1(1050, 1, 50), new BufferDescriptorV1(5000, 2, 200),
                new BufferDescriptorV1(9000, 3, 150)), r);
    }

    @Test
    void peerRanges_offsetOnElementBoundary_startsAtNextElement() {
        assertEquals(List.of(new BufferDescriptorV1(5000, 2, 10)), RdmaTransfer.peerRanges(THREE, 100, 10));
    }

    @Test
    void peerRanges_withinOneElement() {
        assertEquals(List.of(new BufferDescriptorV1(9010, 3, 280)), RdmaTransfer.peerRanges(THREE, 310, 280));
    }

    @Test
    void peerRanges_wholeArray_isTheArrayItself() {
        assertSame(THREE, RdmaTransfer.peerRanges(THREE, 0, 600));
    }

    /**
     * The work requests of a transfer, as a table: local buffer of 300 bytes registered as regions
     * of 128 (tokens 11, 12, 13); each row is (local start, peer ranges) and the segments it must
     * give as (local region token, offset in it, peer offset, peer token, length).
     */
    @Test
    void plan_cutsAtPeerDescriptorsAndLocalRegions() {
        Object[][] table = {
            // one descriptor within one region: one segment
            {0, List.of(new BufferDescriptorV1(1000, 1, 100)), List.of(List.of(11, 0, 1000L, 1, 100))},
            {130, List.of(new BufferDescriptorV1(1000, 1, 100)), List.of(List.of(12, 2, 1000L, 1, 100))},
            // one descriptor across a region boundary: cut there
            {100, List.of(new BufferDescriptorV1(1000, 1, 100)),
                List.of(List.of(11, 100, 1000L, 1, 28), List.of(12, 0, 1028L, 1, 72))},
            // two descriptors within one region: one segment each
            {0, List.of(new BufferDescriptorV1(1000, 1, 50), new BufferDescriptorV1(5000, 2, 60)),
                List.of(List.of(11, 0, 1000L, 1, 50), List.of(11, 50, 5000L, 2, 60))},
            // all three regions, the last one short
            {0, List.of(new BufferDescriptorV1(1000, 1, 300)),
                List.of(List.of(11, 0, 1000L, 1, 128), List.of(12, 0, 1128L, 1, 128), List.of(13, 0, 1256L, 1, 44))},
        };
        LocalRegistrations.Entry local = new LocalRegistrations.Entry(ByteBuffer.allocateDirect(300),
                new MemoryRegion[] {new Region(11, 128), new Region(12, 128), new Region(13, 44)}, 128, true, null);
        for (Object[] row : table) {
            @SuppressWarnings("unchecked")
            List<BufferDescriptorV1> peer = (List<BufferDescriptorV1>) row[1];
            RdmaTransfer t = RdmaTransfer.plan(false, local, (Integer) row[0], peer);
            List<List<Object>> got = new ArrayList<>();
            for (RdmaTransfer.Segment s : t.segments) {
                assertSame(t, s.transfer);
                assertEquals(s.length, s.sgl[0].length());
                got.add(List.of(s.sgl[0].region().token(), s.sgl[0].offset(), s.remoteOffset, s.remoteToken,
                        s.length));
            }
            assertEquals(row[2], got, "local start " + row[0] + ", peer " + peer);
            assertEquals(BufferDescriptorV1.totalLength(peer), t.length);
        }
    }

    /** A region of the table above: only its token and length matter to planning. */
    private record Region(int token, int length) implements MemoryRegion {
        @Override
        public long remoteOffset() {
            return 0;
        }

        @Override
        public int access() {
            return 0;
        }

        @Override
        public ByteBuffer buffer() {
            return null;
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

    @Test
    void peerRanges_beyondDescriptors_isRejected() {
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, 1, 600));
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, 601, 0));
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, -1, 1));
    }
}
