package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.verbs.internal.CompletionQueueProbe;

/** The NDKPI completion rules (shared/spec/README.md) over ibv_req_notify_cq. */
class CompletionQueueDeviceTest {
    private static final long QUIET = 300;

    private Fixture f;
    private Fixture.Pair p;
    private MemoryRegion rx;
    private MemoryRegion tx;

    @BeforeEach
    void open() throws Exception {
        f = new Fixture();
        p = f.connect();
        rx = p.server.register(Fixture.direct(64 * 16), Access.LOCAL_WRITE);
        for (int i = 0; i < 16; i++) {
            p.server.postReceive(i, new Sge[] {Sge.of(rx, i * 64, 64)}, 1);
        }
        tx = p.client.register(Fixture.direct(64), 0);
    }

    @AfterEach
    void close() {
        f.close();
    }

    /**
     * Sends one message and waits for the send's completion: a send completes only once the peer
     * placed the message, so the server's receive completion is queued by then.
     */
    private void send(int flags) throws Exception {
        p.client.postSend(null, new Sge[] {Sge.of(tx, 0, 8)}, 1, flags);
        assertEquals(RdmaStatus.SUCCESS, p.clientCq.one(Fixture.TIMEOUT).status());
    }

    private static boolean notified(Fixture.Cq cq, long millis) throws InterruptedException {
        return cq.notifications.tryAcquire(millis, TimeUnit.MILLISECONDS);
    }

    private static int drain(CompletionQueue q) {
        CompletionResult[] r = new CompletionResult[16];
        for (int i = 0; i < r.length; i++) {
            r[i] = new CompletionResult();
        }
        int total = 0;
        int n;
        while ((n = q.getResults(r)) > 0) {
            total += n;
        }
        return total;
    }

    @Test
    void notification_onlyAfterArming_andAtMostOncePerArm() throws Exception {
        Fixture.Cq cq = p.serverCq;
        send(0);
        assertFalse(notified(cq, QUIET), "no notification without an arm");
        cq.queue.arm(ArmType.ANY); // a completion arrived since the last callback: at once
        assertTrue(notified(cq, Fixture.TIMEOUT));
        send(0);
        send(0);
        assertFalse(notified(cq, QUIET), "one notification per arm");
        assertEquals(3, drain(cq.queue));
        cq.queue.arm(ArmType.ANY);
        assertFalse(notified(cq, QUIET), "nothing new since the last callback and the queue is empty");
        send(0);
        assertTrue(notified(cq, Fixture.TIMEOUT));
        assertNotEquals(Thread.currentThread(), cq.threads.poll(), "handlers run on a provider thread");
    }

    /**
     * The usual cycle (a notification, the queue drained, an ANY arm) asks the device for any
     * completion at most once: the request made when the event was read still stands when the
     * consumer arms again, so the arm asks nothing more (on Soft-RoCE a request is a system call;
     * an arm that asked again would make two a round). Every round still notifies.
     *
     * <p>The provider's 200 ms sweep may take a completion before its event is read. If the event
     * is read before the consumer arms, it asks for solicited completions only (to notice
     * failures) and the arm asks for any completion: one solicited request more. If it is read
     * after, its request may serve the next round too, which then asks nothing. So a round makes
     * at most one request for any completion and at most one solicited-only request.
     */
    @Test
    void rearmAfterEachNotification_oneDeviceRequestPerRound() throws Exception {
        Fixture.Cq cq = p.serverCq;
        cq.queue.arm(ArmType.ANY);
        long before = CompletionQueueProbe.deviceRequests(cq.queue);
        long anyBefore = CompletionQueueProbe.anyRequests(cq.queue);
        for (int round = 0; round < 5; round++) {
            send(0);
            assertTrue(notified(cq, Fixture.TIMEOUT), "round " + round + " notified");
            assertEquals(1, drain(cq.queue));
            cq.queue.arm(ArmType.ANY);
        }
        long any = CompletionQueueProbe.anyRequests(cq.queue) - anyBefore;
        long solicited = CompletionQueueProbe.deviceRequests(cq.queue) - before - any;
        assertTrue(any >= 1 && any <= 5,
                "requests for any completion in 5 rounds, at most one a round (the arms after each event ask nothing): " + any);
        assertTrue(solicited <= 5, "at most one solicited-only request a round (a sweep raced the event): " + solicited);
        send(0);
        assertTrue(notified(cq, Fixture.TIMEOUT), "the last arm, which asked the device nothing, is still served");
    }

    /**
     * With busy polling ({@code completionSpinMicroseconds}, here the most, 0.1 s), rounds that
     * follow each other within the spin are notified without asking the device anything; the
     * thread asks for the signal once it is about to wait, and the signal then serves the next
     * round.
     */
    @Test
    void busyPolling_roundsWithinTheSpinAskTheDeviceNothing_theWaitAsksOnce() throws Exception {
        try (Fixture spinning = new Fixture(Map.of("completionSpinMicroseconds", 100_000))) {
            Fixture.Pair q = spinning.connect();
            MemoryRegion in = q.server.register(Fixture.direct(64 * 8), Access.LOCAL_WRITE);
            for (int i = 0; i < 8; i++) {
                q.server.postReceive(i, new Sge[] {Sge.of(in, i * 64, 64)}, 1);
            }
            MemoryRegion out = q.client.register(Fixture.direct(64), 0);
            Fixture.Cq cq = q.serverCq;
            Runnable round = () -> {
                try {
                    q.client.postSend(null, new Sge[] {Sge.of(out, 0, 8)}, 1, 0);
                    assertEquals(RdmaStatus.SUCCESS, q.clientCq.one(Fixture.TIMEOUT).status());
                    assertTrue(notified(cq, Fixture.TIMEOUT), "notified");
                    assertEquals(1, drain(cq.queue));
                    cq.queue.arm(ArmType.ANY);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            };
            cq.queue.arm(ArmType.ANY);
            round.run(); // the thread is spinning after it
            long before = CompletionQueueProbe.deviceRequests(cq.queue);
            for (int i = 0; i < 5; i++) {
                round.run();
            }
            assertEquals(before, CompletionQueueProbe.deviceRequests(cq.queue),
                    "device requests in 5 rounds within the spin");
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Fixture.TIMEOUT);
            while (CompletionQueueProbe.deviceRequests(cq.queue) == before && System.nanoTime() < deadline) {
                Thread.sleep(10); // the spin ends 0.1 s after the last round
            }
            assertEquals(before + 1, CompletionQueueProbe.deviceRequests(cq.queue), "asked once before waiting");
            round.run(); // served by the device's signal
        }
    }

    @Test
    void arm_whileANewCompletionIsQueued_satisfiedAtOnce_onAProviderThread() throws Exception {
        Fixture.Cq cq = p.serverCq;
        send(0);
        send(0); // both are in the device's queue now
        cq.queue.arm(ArmType.SOLICITED); // new completions may be solicited ones: satisfied at once
        assertTrue(notified(cq, Fixture.TIMEOUT));
        assertNotEquals(Thread.currentThread(), cq.threads.poll(), "never from within arm()");
        assertEquals(2, drain(cq.queue));
    }

    @Test
    void armErrors_ignoresSuccesses_notifiesForAFailure() throws Exception {
        Fixture.Cq cq = p.clientCq;
        cq.queue.arm(ArmType.ERRORS);
        p.client.postSend("ok", new Sge[] {Sge.of(tx, 0, 8)}, 1, 0);
        assertFalse(notified(cq, QUIET), "a success does not satisfy ERRORS");
        assertEquals(RdmaStatus.SUCCESS, cq.one(Fixture.TIMEOUT).status());
        p.client.postRead("bad", new Sge[] {Sge.of(p.client.register(Fixture.direct(8), Access.LOCAL_WRITE))}, 1, 0,
                0x12345678, 0);
        assertTrue(notified(cq, Fixture.TIMEOUT), "a failed completion satisfies ERRORS");
    }

    @Test
    void armSolicited_ignoresUnsolicitedReceives_notifiesForASolicitedOne() throws Exception {
        Fixture.Cq cq = p.serverCq;
        cq.queue.arm(ArmType.SOLICITED);
        send(0);
        assertFalse(notified(cq, QUIET), "an unsolicited receive does not satisfy SOLICITED");
        send(RequestFlags.SOLICIT_EVENT);
        assertTrue(notified(cq, Fixture.TIMEOUT), "a solicited receive does");
        assertEquals(2, drain(cq.queue));
    }

    @Test
    void armTwice_errorsThenSolicited_actsAsSolicited() throws Exception {
        Fixture.Cq cq = p.serverCq;
        cq.queue.arm(ArmType.ERRORS);
        cq.queue.arm(ArmType.SOLICITED);
        send(0);
        assertFalse(notified(cq, QUIET));
        send(RequestFlags.SOLICIT_EVENT);
        assertTrue(notified(cq, Fixture.TIMEOUT), "ERRORS + SOLICITED = SOLICITED");
    }

    @Test
    void armTwice_solicitedThenAny_actsAsAny() throws Exception {
        Fixture.Cq cq = p.serverCq;
        cq.queue.arm(ArmType.SOLICITED);
        cq.queue.arm(ArmType.ANY);
        send(0);
        assertTrue(notified(cq, Fixture.TIMEOUT), "SOLICITED + ANY = ANY");
    }

    @Test
    void callbacks_ofAQueueSharedByTwoConnections_areSerialised() throws Exception {
        AtomicInteger running = new AtomicInteger();
        AtomicBoolean overlapped = new AtomicBoolean();
        AtomicInteger received = new AtomicInteger();
        Fixture.Cq shared = f.cq(64, queue -> {
            if (running.incrementAndGet() > 1) {
                overlapped.set(true);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            received.addAndGet(drain(queue));
            running.decrementAndGet();
            queue.arm(ArmType.ANY); // re-arming from the handler does not call it recursively
        });
        Fixture.Pair a = f.connect(f.cq(16), shared, b -> b, b -> b, null);
        Fixture.Pair b = f.connect(f.cq(16), shared, x -> x, x -> x, null);
        MemoryRegion ra = a.server.register(Fixture.direct(64 * 8), Access.LOCAL_WRITE);
        MemoryRegion rb = b.server.register(Fixture.direct(64 * 8), Access.LOCAL_WRITE);
        for (int i = 0; i < 8; i++) {
            a.server.postReceive(i, new Sge[] {Sge.of(ra, i * 64, 64)}, 1);
            b.server.postReceive(i, new Sge[] {Sge.of(rb, i * 64, 64)}, 1);
        }
        shared.queue.arm(ArmType.ANY);
        MemoryRegion ta = a.client.register(Fixture.direct(8), 0);
        MemoryRegion tb = b.client.register(Fixture.direct(8), 0);
        Thread other = new Thread(() -> {
            try {
                for (int i = 0; i < 8; i++) {
                    b.client.postSend(null, new Sge[] {Sge.of(tb)}, 1, RequestFlags.SILENT_SUCCESS);
                    Thread.sleep(5);
                }
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        other.start();
        for (int i = 0; i < 8; i++) {
            a.client.postSend(null, new Sge[] {Sge.of(ta)}, 1, RequestFlags.SILENT_SUCCESS);
            Thread.sleep(5);
        }
        other.join();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Fixture.TIMEOUT);
        while (received.get() < 16 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(16, received.get(), "every receive was drained by a notification handler");
        assertFalse(overlapped.get(), "two handler calls ran at the same time");
    }

    @Test
    void close_whileAnEndpointUsesTheQueue_invalidState_thenAfterwards() throws Exception {
        RdmaException e = org.junit.jupiter.api.Assertions.assertThrows(RdmaException.class, () -> p.serverCq.queue.close());
        assertEquals(RdmaStatus.INVALID_STATE, e.status());
        p.server.close();
        Thread.sleep(QUIET);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Fixture.TIMEOUT);
        while (true) {
            drain(p.serverCq.queue);
            try {
                p.serverCq.queue.close();
                break;
            } catch (RdmaException still) {
                if (System.nanoTime() > deadline) {
                    throw still;
                }
                Thread.sleep(20);
            }
        }
        Endpoint closed = p.server;
        assertEquals(org.smbdirect.rdma.EndpointState.CLOSED, closed.state());
    }
}
