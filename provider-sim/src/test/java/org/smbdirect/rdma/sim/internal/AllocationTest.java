package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;

/**
 * The steady-state data path allocates nothing: posting and polling on the consumer's thread, and
 * the fabric threads that move the data. Measured with the JVM's per-thread allocation counters
 * (bytes, not time) over many operations after a warm-up; the bound allows a few stray objects
 * (class initialisation, JIT deoptimisation) but not one per operation.
 */
class AllocationTest extends ProviderTck {
    private static final int WARMUP = 30_000;
    private static final int MEASURED = 20_000;
    private final ProviderFixture fixture = new SimFixture(true, Map.of("fabricThreads", 2));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    @Test
    void sendReceiveReadWrite_steadyState_allocatesNothing() throws Exception {
        java.lang.management.ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        Assumptions.assumeTrue(mx instanceof com.sun.management.ThreadMXBean
                && ((com.sun.management.ThreadMXBean) mx).isThreadAllocatedMemorySupported(),
                "this JVM cannot count allocated bytes per thread");
        com.sun.management.ThreadMXBean tmx = (com.sun.management.ThreadMXBean) mx;
        Link l = link();
        Endpoint c = l.client().endpoint();
        Endpoint s = l.server().endpoint();
        CompletionQueue csq = l.client().sendCq().queue();
        CompletionQueue srq = l.server().recvCq().queue();
        MemoryRegion out = l.client().register(256, Access.LOCAL_WRITE);
        MemoryRegion in = l.server().register(256, Access.LOCAL_WRITE);
        MemoryRegion remote = l.server().register(256, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        Sge[] send = {Sge.of(out, 0, 128)};
        Sge[] recv = {Sge.of(in)};
        CompletionResult[] r = {new CompletionResult(), new CompletionResult(), new CompletionResult()};
        Object ctx = "ctx";
        long[] fabric = fabricThreadIds();
        long self = Thread.currentThread().getId();
        for (int phase = 0; phase < 2; phase++) {
            int n = phase == 0 ? WARMUP : MEASURED;
            long before = allocated(tmx, fabric) + tmx.getThreadAllocatedBytes(self);
            for (int i = 0; i < n; i++) {
                s.postReceive(ctx, recv, 1);
                c.postSend(ctx, send, 1, 0);
                c.postWrite(ctx, send, 1, remote.remoteOffset(), remote.token(), RequestFlags.SILENT_SUCCESS);
                c.postRead(ctx, send, 1, remote.remoteOffset() + 64, remote.token(), 0);
                int got = 0;
                while (got < 2) {
                    int k = csq.getResults(r);
                    for (int j = 0; j < k; j++) {
                        if (r[j].status() != RdmaStatus.SUCCESS) {
                            throw new AssertionError("operation failed: " + r[j]);
                        }
                    }
                    got += k;
                }
                while (srq.getResults(r) == 0) {
                    Thread.onSpinWait();
                }
            }
            long after = allocated(tmx, fabric) + tmx.getThreadAllocatedBytes(self);
            if (phase == 1) {
                long perOp = (after - before) / (4L * n);
                assertTrue(after - before < 64 * 1024, "allocated " + (after - before) + " bytes over " + 4 * n
                        + " operations (" + perOp + " per operation)");
            }
        }
        assertEquals(RdmaStatus.SUCCESS, RdmaStatus.SUCCESS);
    }

    private long[] fabricThreadIds() {
        List<Long> ids = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith(Scheduler.THREAD_PREFIX + client().name() + "-fabric-")) {
                ids.add(t.getId());
            }
        }
        assertEquals(2, ids.size());
        return ids.stream().mapToLong(Long::longValue).toArray();
    }

    private static long allocated(com.sun.management.ThreadMXBean tmx, long[] ids) {
        long sum = 0;
        for (long b : tmx.getThreadAllocatedBytes(ids)) {
            sum += b;
        }
        return sum;
    }
}
