package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The queues' ring lengths: the least power of two not below the depth. */
class RingsTest {
    @Test
    void capacity_leastPowerOfTwoNotBelowDepth() {
        int[][] table = {{1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {255, 256}, {256, 256}, {257, 512},
            {65536, 65536}, {1 << 22, 1 << 22}, {(1 << 22) + 1, 1 << 23}, {1 << 30, 1 << 30}};
        for (int[] row : table) {
            assertEquals(row[1], Rings.capacity(row[0]), "depth " + row[0]);
        }
    }

    @Test
    void capacity_depthOutsideRange_isRefused() {
        assertThrows(IllegalArgumentException.class, () -> Rings.capacity(0));
        assertThrows(IllegalArgumentException.class, () -> Rings.capacity((1 << 30) + 1));
    }
}
