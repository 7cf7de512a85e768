package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.Completion;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;
import org.smbdirect.rdma.tck.Tck;

/**
 * Many threads drive many connections at once: sends with data checks, RDMA Writes and Reads.
 * Then the server provider closes under traffic: every thread sees its connection end (a failed
 * post or a flushed or failed completion), nothing hangs, every posted request completes.
 */
class ConcurrencyStressTest extends ProviderTck {
    private static final int LINKS = 8;
    private static final int ROUNDS = 400;
    private final ProviderFixture fixture = new SimFixture(false, Map.of("fabricThreads", 3));

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }

    @Test
    void manyThreadsManyConnections_dataIntact_thenProviderClosesUnderTraffic() throws Exception {
        List<Link> links = new ArrayList<>();
        for (int i = 0; i < LINKS; i++) {
            links.add(link());
        }
        ConcurrentLinkedQueue<Throwable> problems = new ConcurrentLinkedQueue<>();
        AtomicBoolean closing = new AtomicBoolean();
        CountDownLatch halfway = new CountDownLatch(LINKS);
        CountDownLatch done = new CountDownLatch(LINKS);
        for (int t = 0; t < LINKS; t++) {
            Link l = links.get(t);
            int seed = t;
            Thread th = new Thread(() -> {
                try {
                    drive(l, seed, halfway, closing);
                } catch (Throwable e) {
                    problems.add(e);
                } finally {
                    halfway.countDown();
                    done.countDown();
                }
            }, "stress-" + t);
            th.start();
        }
        assertTrue(halfway.await(Tck.timeout().toMillis() * 3, TimeUnit.MILLISECONDS), "traffic ran");
        closing.set(true);
        server().close();
        assertTrue(done.await(Tck.timeout().toMillis() * 3, TimeUnit.MILLISECONDS), "every thread finished");
        assertEquals(List.of(), new ArrayList<>(problems));
        for (Link l : links) {
            l.client().events().awaitTerminal();
            l.server().events().awaitTerminal();
        }
    }

    /** One thread's traffic on one link, until the connection ends after the provider closed. */
    private static void drive(Link l, int seed, CountDownLatch halfway, AtomicBoolean closing) throws Exception {
        MemoryRegion in = l.server().register(4096, Access.LOCAL_WRITE);
        MemoryRegion out = l.client().register(4096, Access.LOCAL_WRITE);
        MemoryRegion target = l.server().register(4096, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        for (int round = 0;; round++) {
            if (round == ROUNDS / 2) {
                halfway.countDown();
            }
            int len = 1 + (round * 37 + seed * 11) % 1000;
            byte[] data = new byte[len];
            for (int i = 0; i < len; i++) {
                data[i] = (byte) (round + i + seed);
            }
            out.buffer().put(0, data);
            try {
                l.server().postReceive(round, in);
                l.client().send(round, out, 0, len, 0);
                l.client().endpoint().postWrite("w", new Sge[] {Sge.of(out, 0, len)}, 1, target.remoteOffset() + 1024,
                        target.token(), 0);
                l.client().endpoint().postRead("r", new Sge[] {Sge.of(out, 2048, len)}, 1, target.remoteOffset() + 1024,
                        target.token(), 0);
            } catch (RdmaException e) {
                if (!closing.get()) {
                    throw e;
                }
                assertEquals(RdmaStatus.NOT_CONNECTED, e.status(), e.getMessage());
                return;
            }
            List<Completion> c = l.client().sendCq().poll(3);
            Completion r = l.server().recvCq().next();
            boolean ok = r.status() == RdmaStatus.SUCCESS;
            for (Completion x : c) {
                ok &= x.status() == RdmaStatus.SUCCESS;
            }
            if (!ok) {
                if (!closing.get()) {
                    throw new AssertionError("failure before the provider closed: " + c + " " + r);
                }
                return;
            }
            assertEquals(round, r.context());
            assertEquals(len, r.bytes());
            assertBytes(data, bytes(in, 0, len), "message " + round);
            assertBytes(data, bytes(out, 2048, len), "read back " + round);
        }
    }
}
