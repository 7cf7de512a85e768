package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.tck.EventRecorder;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;
import org.smbdirect.rdma.tck.Tck;

/** Closing providers stops every fabric thread; a provider of N threads uses N threads however busy. */
class ThreadLifecycleTest extends ProviderTck {
    private final ProviderFixture fixture = new SimFixture(false, Map.of("fabricThreads", 3));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    private static List<Thread> fabricThreads(RdmaProvider p) {
        List<Thread> t = new ArrayList<>();
        for (Thread th : Thread.getAllStackTraces().keySet()) {
            if (th.isAlive() && th.getName().startsWith(Scheduler.THREAD_PREFIX + p.name() + "-")) {
                t.add(th);
            }
        }
        return t;
    }

    @Test
    void close_stopsEveryFabricThread_afterEndingConnections() throws Exception {
        List<Link> links = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            links.add(link());
        }
        assertEquals(3, fabricThreads(client()).stream().filter(t -> t.getName().contains("-fabric-")).count(),
                "a fixed pool, not a thread per endpoint");
        assertEquals(3, fabricThreads(server()).stream().filter(t -> t.getName().contains("-fabric-")).count());
        client().close();
        server().close();
        assertEquals(List.of(), fabricThreads(client()), "no fabric thread of the closed provider remains");
        assertEquals(List.of(), fabricThreads(server()));
        for (Link l : links) {
            assertEquals(EventRecorder.Kind.DISCONNECTED, l.client().events().awaitTerminal().kind());
            assertEquals(EventRecorder.Kind.DISCONNECTED, l.server().events().awaitTerminal().kind());
            assertEquals(EndpointState.CLOSED, l.client().endpoint().state());
        }
    }

    @Test
    void close_fromACallback_finishesOnAnotherThread_andStillStopsEverything() throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(8, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        RdmaProvider s = server();
        l.server().recvCq().queue().arm(org.smbdirect.rdma.ArmType.ANY);
        // a consumer's callback closes the provider it runs on
        org.smbdirect.rdma.CompletionQueue q = s.createCompletionQueue(4, cq -> s.close());
        org.smbdirect.rdma.Endpoint e = s.createEndpoint(org.smbdirect.rdma.EndpointOptions.builder(q, q).build(),
                new NoEvents());
        e.postReceive("trigger", new org.smbdirect.rdma.Sge[] {org.smbdirect.rdma.Sge.of(e.register(
                java.nio.ByteBuffer.allocateDirect(8), Access.LOCAL_WRITE))}, 1);
        q.arm(org.smbdirect.rdma.ArmType.ANY);
        e.close(); // flushes the receive: the callback runs and closes the provider
        assertEquals(EventRecorder.Kind.DISCONNECTED, l.server().events().awaitTerminal().kind());
        long deadline = Tck.deadline();
        while (!fabricThreads(s).isEmpty()) {
            assertTrue(System.nanoTime() - deadline < 0, "threads still running: " + fabricThreads(s));
            LockSupport.parkNanos(1_000_000);
        }
    }
}
