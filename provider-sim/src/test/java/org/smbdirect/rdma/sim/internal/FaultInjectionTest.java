package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.Tck;

/**
 * Fault injection is driven by the seed: the same workload with the same seed injects the same
 * faults, at the same operations, with the same visible outcome; another seed gives another
 * sequence.
 */
class FaultInjectionTest {

    /** One run of a fixed workload: connections that send until a fault ends them. */
    private static List<String> run(long seed, Map<String, Object> faults) throws Exception {
        Map<String, Object> c = new HashMap<>(faults);
        c.put("fabric", "faults-" + seed + "-" + System.nanoTime());
        c.put("faults.seed", seed);
        List<String> outcome = new ArrayList<>();
        try (SimProvider p = SimProvider.open(SimSettings.fromMap(c))) {
            CompletionResult[] r = {new CompletionResult()};
            for (int conn = 0; conn < 4; conn++) {
                CompletionQueue cq = p.createCompletionQueue(1024, q -> { });
                EventRecorder ce = new EventRecorder("client");
                EventRecorder se = new EventRecorder("server");
                Endpoint client = p.createEndpoint(EndpointOptions.builder(cq, cq).build(), ce);
                BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
                RdmaListener l = p.listen(new java.net.InetSocketAddress(p.address, 0), requests::add);
                client.connect(l.localAddress(), null, 1, 1);
                ConnectionRequest req = requests.poll(10, TimeUnit.SECONDS);
                CompletionQueue sq = p.createCompletionQueue(1024, q -> { });
                Endpoint server = req.createEndpoint(EndpointOptions.builder(sq, sq).receiveQueueDepth(64).build(), se);
                MemoryRegion in = server.register(ByteBuffer.allocateDirect(64), Access.LOCAL_WRITE);
                for (int i = 0; i < 64; i++) {
                    server.postReceive(i, new Sge[] {Sge.of(in)}, 1);
                }
                req.accept(server, null, 1, 1);
                ce.awaitEstablished();
                MemoryRegion out = client.register(ByteBuffer.allocateDirect(64), 0);
                Sge[] sgl = {Sge.of(out, 0, 8)};
                boolean failed = false;
                // one operation at a time, so the fault decisions see the same sequence every run
                for (int i = 0; i < 64; i++) {
                    try {
                        client.postSend(i, sgl, 1, 0);
                    } catch (RdmaException e) {
                        outcome.add("conn " + conn + " post " + i + " " + e.status());
                        failed = true;
                        break;
                    }
                    long deadline = Tck.deadline();
                    while (cq.getResults(r) == 0) {
                        assertTrue(System.nanoTime() - deadline < 0, "no completion");
                        Thread.onSpinWait();
                    }
                    if (r[0].status() != RdmaStatus.SUCCESS) {
                        outcome.add("conn " + conn + " send " + r[0].requestContext() + " " + r[0].status());
                        failed = true;
                        break;
                    }
                }
                EventRecorder.Event end = failed ? ce.awaitTerminal() : null;
                outcome.add("conn " + conn + " client " + (end == null ? "up" : end.kind() + "(" + end.status() + ")"));
                client.close();
                server.close();
                l.close();
            }
            outcome.add("faults " + p.injectedFaults());
        }
        return outcome;
    }

    @Test
    void sameSeed_sameWorkload_sameFaultSequence() throws Exception {
        Map<String, Object> faults = Map.of("faults.disconnectProbability", 0.05,
                "faults.receiverNotReadyProbability", 0.05);
        List<String> first = run(42, faults);
        List<String> second = run(42, faults);
        assertEquals(first, second);
        assertTrue(first.get(first.size() - 1).contains("connection"), "faults were injected: " + first);
        assertNotEquals(first, run(43, faults), "another seed gives another sequence");
    }

    @Test
    void disconnectAfterOperations_resetsEachConnectionAtExactlyThatOperation() throws Exception {
        List<String> out = run(1, Map.of("faults.disconnectAfterOperations", 5));
        for (int conn = 0; conn < 4; conn++) {
            assertTrue(out.contains("conn " + conn + " send 4 FLUSHED"), out.toString());
            assertTrue(out.contains("conn " + conn + " client ERROR(CONNECTION_RESET)"), out.toString());
        }
    }

    @Test
    void registrationFailures_everyNth_andByProbability_reproducible() throws Exception {
        for (Map<String, Object> f : List.<Map<String, Object>>of(Map.of("faults.registrationFailureEvery", 3),
                Map.of("faults.registrationFailureProbability", 0.3))) {
            List<List<Boolean>> runs = new ArrayList<>();
            for (int run = 0; run < 2; run++) {
                Map<String, Object> c = new HashMap<>(f);
                c.put("fabric", "regfault-" + run);
                List<Boolean> ok = new ArrayList<>();
                try (SimProvider p = SimProvider.open(SimSettings.fromMap(c))) {
                    CompletionQueue cq = p.createCompletionQueue(4, q -> { });
                    Endpoint e = p.createEndpoint(EndpointOptions.builder(cq, cq).build(), new NoEvents());
                    for (int i = 0; i < 30; i++) {
                        try {
                            e.register(ByteBuffer.allocateDirect(8), Access.LOCAL_WRITE);
                            ok.add(true);
                        } catch (RdmaException ex) {
                            assertEquals(RdmaStatus.INSUFFICIENT_RESOURCES, ex.status());
                            ok.add(false);
                        }
                    }
                }
                runs.add(ok);
            }
            assertEquals(runs.get(0), runs.get(1), f + " reproduces");
            assertTrue(runs.get(0).contains(false), f + " injected failures");
            if (f.containsKey("faults.registrationFailureEvery")) {
                for (int i = 0; i < 30; i++) {
                    assertEquals((i + 1) % 3 != 0, runs.get(0).get(i), "registration " + (i + 1));
                }
            }
        }
    }

    @Test
    void delayedCompletions_stillInOrder() throws Exception {
        List<String> out = run(7, Map.of("faults.delayProbability", 0.5, "faults.delayMillis", 2));
        assertFalse(out.stream().anyMatch(s -> s.contains(" send ")), "delays do not fail anything: " + out);
        assertTrue(out.get(out.size() - 1).contains("DELAY"), out.toString());
    }
}
