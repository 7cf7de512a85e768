package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.smbdirect.transport.BufferDescriptorV1;

/** MS-SMBD 3.1.4.5 and 3.1.4.6: indexing into a descriptor array by offset and length. */
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
    void peerRanges_wholeArray() {
        assertEquals(THREE, RdmaTransfer.peerRanges(THREE, 0, 600));
    }

    @Test
    void peerRanges_beyondDescriptors_isRejected() {
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, 1, 600));
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, 601, 0));
        assertThrows(IllegalArgumentException.class, () -> RdmaTransfer.peerRanges(THREE, -1, 1));
    }
}
