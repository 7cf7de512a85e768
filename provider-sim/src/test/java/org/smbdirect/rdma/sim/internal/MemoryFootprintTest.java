package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.tck.Tck;

/**
 * 10,000 endpoints (5,000 connections) on one provider: the provider keeps its fixed thread
 * count, and the heap cost per endpoint with default options stays within a few KiB. Heap is
 * measured after full collections, so the bound is generous (16 KiB) and the figure is reported.
 */
class MemoryFootprintTest {
    private static final int CONNECTIONS = 5_000;

    private static long usedHeap() {
        Runtime rt = Runtime.getRuntime();
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            best = Math.min(best, rt.totalMemory() - rt.freeMemory());
        }
        return best;
    }

    @Test
    void tenThousandEndpoints_fixedThreads_fewKiBEach() throws Exception {
        try (SimProvider p = SimProvider.open(SimSettings.fromMap(Map.of("fabric", "footprint")))) {
            CompletionQueue cq = p.createCompletionQueue(65536, q -> { });
            EndpointOptions options = EndpointOptions.builder(cq, cq).build();
            ConcurrentLinkedQueue<Endpoint> passive = new ConcurrentLinkedQueue<>();
            CountDownLatch established = new CountDownLatch(2 * CONNECTIONS);
            ConnectionListener events = new ConnectionListener() {
                @Override
                public void onEstablished(Endpoint endpoint) {
                    established.countDown();
                }

                @Override
                public void onDisconnected(Endpoint endpoint) {
                }

                @Override
                public void onError(Endpoint endpoint, RdmaStatus status, String reason) {
                }
            };
            RdmaListener l = p.listen(new InetSocketAddress(p.address, 0), r -> {
                try {
                    Endpoint e = r.createEndpoint(options, events);
                    passive.add(e);
                    r.accept(e, null, 1, 1);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long before = usedHeap();
            List<Endpoint> active = new ArrayList<>(CONNECTIONS);
            for (int i = 0; i < CONNECTIONS; i++) {
                Endpoint e = p.createEndpoint(options, events);
                e.connect(l.localAddress(), null, 1, 1);
                active.add(e);
            }
            assertTrue(established.await(Tck.timeout().toMillis() * 6, TimeUnit.MILLISECONDS),
                    "connections established: " + (2 * CONNECTIONS - established.getCount()));
            long after = usedHeap();
            long perEndpoint = (after - before) / (2L * CONNECTIONS);
            long stated = ((SimEndpoint) active.get(0)).footprint();
            System.out.println("heap per connected endpoint (default options): " + perEndpoint + " bytes measured, "
                    + stated + " bytes of queues");
            assertTrue(perEndpoint < 16 * 1024, perEndpoint + " bytes per endpoint");
            int threads = 0;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith(Scheduler.THREAD_PREFIX + p.name() + "-fabric-")) {
                    threads++;
                }
            }
            assertEquals(2, threads, "a fixed pool of fabric threads, whatever the number of endpoints");
            for (Endpoint e : active) {
                e.close();
            }
            for (Endpoint e : passive) {
                e.close();
            }
            l.close();
        }
    }
}
