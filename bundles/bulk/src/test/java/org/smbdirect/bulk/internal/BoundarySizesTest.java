package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.internal.BulkFixture.Pair;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.SmbDirectConfig;

/**
 * CRC32C-checked sends of sizes around every boundary the layers draw: the inline threshold, one
 * SMB Direct message (MaxSendSize - 24) and the largest inline control message, MaxFragmentedSize,
 * MaxReadWriteSize and its multiples; by RDMA Read and by RDMA Write.
 */
class BoundarySizesTest {
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    private static BulkFixture.Side side(boolean rdmaRead) {
        return BulkFixture.side().sim("rdmaRead", rdmaRead);
    }

    /** The Windows defaults: threshold 8 KiB, MaxSendSize 1364, 1 MiB fragmented, 8 MiB per RDMA operation. */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void defaults_everyBoundary(boolean rdmaRead) throws Exception {
        Pair p = fx.pair(side(rdmaRead), side(rdmaRead));
        ConnectionParameters c = p.client.connection().parameters();
        int threshold = BulkConfig.defaults().inlineThreshold();
        int message = c.maxSendSize() - 24; // bytes of upper-layer data in one SMB Direct message
        int header = ControlMessage.HEADER_SIZE;
        int firstPart = message - header - (rdmaRead ? 16 : 0);
        int fragmented = c.maxFragmentedSendSize();
        int rw = c.maxReadWriteSize();
        assertEquals(1340, message);
        assertEquals(1 << 20, fragmented);
        assertEquals(8 << 20, rw);
        TreeSet<Integer> sizes = new TreeSet<>();
        around(sizes, 0, 1, message - header, message, threshold, fragmented - header, fragmented, rw, 2 * rw,
                firstPart + rw, firstPart + 2 * rw);
        sizes.add(firstPart + 1);
        check(p, rdmaRead, sizes, threshold);
    }

    /** The inline threshold at its maximum: the largest inline control message fills MaxFragmentedSize. */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void largestInlineControlMessage(boolean rdmaRead) throws Exception {
        BulkConfig big = BulkConfig.builder().inlineThreshold(1 << 20).build();
        Pair p = fx.pair(side(rdmaRead).bulk(big), side(rdmaRead).bulk(big));
        int largest = p.client.connection().parameters().maxFragmentedSendSize() - ControlMessage.HEADER_SIZE;
        TreeSet<Integer> sizes = new TreeSet<>();
        around(sizes, largest, 1 << 20);
        check(p, rdmaRead, sizes, largest);
    }

    /**
     * Small RDMA operations (64 KiB) and registrations (100,000 bytes, so several descriptors that
     * do not line up with the operations): transfers of many operations, more than a transfer
     * keeps outstanding at once.
     */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void manyOperationsPerTransfer_descriptorsAcrossOperations(boolean rdmaRead) throws Exception {
        SmbDirectConfig smb = SmbDirectConfig.builder().maxReadWriteSize(64 * 1024).build();
        BulkFixture.Side s = side(rdmaRead).smb(smb).sim("maxRegionSize", 100_000L);
        Pair p = fx.pair(s, side(rdmaRead).smb(smb).sim("maxRegionSize", 100_000L));
        int rw = p.client.connection().parameters().maxReadWriteSize();
        assertEquals(64 * 1024, rw);
        int firstPart = 1340 - ControlMessage.HEADER_SIZE - (rdmaRead ? 16 : 0);
        TreeSet<Integer> sizes = new TreeSet<>();
        for (int k = 1; k <= 9; k += 2) {
            around(sizes, k * rw, firstPart + k * rw);
        }
        check(p, rdmaRead, sizes, BulkConfig.defaults().inlineThreshold());
        assertTrue(Session.RDMA_WINDOW < 9);
    }

    /** The demo's payload: 64 MiB once by each path, with the throughput seen. */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void sixtyFourMiB(boolean rdmaRead) throws Exception {
        Pair p = fx.pair(side(rdmaRead), side(rdmaRead));
        int n = 64 * BulkFixture.MIB;
        ByteBuffer data = BulkFixture.data(n, 64, true);
        long expected = BulkFixture.crc(data);
        BulkFixture.get(p.client.send(BulkFixture.data(4 * BulkFixture.MIB, 1, true))); // warm-up
        p.atServer.next();
        long start = System.nanoTime();
        p.client.sendAndWait(data, BulkFixture.TIMEOUT);
        ByteBuffer got = p.atServer.next();
        long nanos = System.nanoTime() - start;
        assertEquals(expected, BulkFixture.crc(got));
        assertEquals(n, got.remaining());
        BulkStatistics st = p.client.statistics();
        assertEquals(2, rdmaRead ? st.readTransfers() : st.writeTransfers());
        p.assertNothingRegistered();
        System.out.printf("64 MiB by RDMA %s on the sim: %.1f ms, %.0f MiB/s%n", rdmaRead ? "Read" : "Write",
                nanos / 1e6, 64 / (nanos / 1e9));
    }

    /** Adds {@code v - 1, v, v + 1} for each value (never below 0). */
    private static void around(TreeSet<Integer> sizes, int... values) {
        for (int v : values) {
            for (int d = -1; d <= 1; d++) {
                if (v + d >= 0) {
                    sizes.add(v + d);
                }
            }
        }
    }

    /** Sends each size (direct and heap buffers alternating), checks content, length and path. */
    private static void check(Pair p, boolean rdmaRead, TreeSet<Integer> sizes, int inlineLimit) throws Exception {
        BulkStatistics before = p.client.statistics();
        List<Integer> list = new ArrayList<>(sizes);
        int inline = 0;
        for (int i = 0; i < list.size(); i++) {
            int n = list.get(i);
            ByteBuffer data = BulkFixture.data(n, n, i % 2 == 0);
            p.client.sendAndWait(data, BulkFixture.TIMEOUT);
            ByteBuffer got = p.atServer.next();
            assertEquals(n, got.remaining(), "length of the " + n + "-byte send");
            assertEquals(BulkFixture.crc(data), BulkFixture.crc(got), "CRC32C of the " + n + "-byte send");
            inline += n <= inlineLimit ? 1 : 0;
        }
        BulkStatistics after = p.client.statistics();
        assertEquals(inline, after.inlineSends() - before.inlineSends(), "inline sends of " + list);
        long rdma = list.size() - inline;
        assertEquals(rdma, rdmaRead ? after.readTransfers() - before.readTransfers()
                : after.writeTransfers() - before.writeTransfers(), "RDMA transfers of " + list);
        p.assertNothingRegistered();
    }
}
