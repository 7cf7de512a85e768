package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;

/**
 * Completion queues and the NDKPI completion rules: one notification per arm and only after an
 * arm; an arm on a queue holding new completions is satisfied at once; callbacks are serialised
 * and never run inside {@code arm()} or another consumer call; ERRORS and SOLICITED filter; a
 * second arm before the first is satisfied combines by the arm-combination table; overflow ends
 * the endpoints that report to the queue.
 *
 * <p>The tests watch the passive side's receive queue and use the active side's send completion
 * as an ordering barrier: a send completes only after the peer placed the message, so by then the
 * peer's receive completion has been queued.
 */
public abstract class CompletionQueueTck extends ProviderTck {

    /** For subclasses. */
    protected CompletionQueueTck() {
    }

    private MemoryRegion out;

    private Link linkWithReceives(int receives) throws Exception {
        Link l = link();
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        for (int i = 0; i < receives; i++) {
            l.server().postReceive("r" + i, in);
        }
        out = l.client().register(64, 0);
        return l;
    }

    /** The client sends and waits until its send completed, so the server's receive is queued. */
    private void sendAndWait(Link l, Object ctx, int flags) throws Exception {
        l.client().send(ctx, out, 0, 8, flags);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
    }

    /**
     * A queue's depth is what it was created with; depths out of range are refused.
     *
     * @throws Exception on failure
     */
    @Test
    public void create_depthOutOfRange_invalidParameter_depthKept() throws Exception {
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createCompletionQueue(0, q -> { }));
        assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createCompletionQueue(-1, q -> { }));
        int max = caps().maxCompletionQueueDepth();
        if (max < Integer.MAX_VALUE) {
            assertFails(RdmaStatus.INVALID_PARAMETER, () -> client().createCompletionQueue(max + 1, q -> { }));
        }
        assertEquals(7, probe(client(), 7, "seven").queue().depth());
    }

    /**
     * Without an arm there is no notification; arming then notifies for the completion queued.
     *
     * @throws Exception on failure
     */
    @Test
    public void notification_onlyAfterArm() throws Exception {
        Link l = linkWithReceives(1);
        CqProbe q = l.server().recvCq();
        sendAndWait(l, "a", 0);
        assertEquals(0, q.notificationsStarted(), "no notification without an arm");
        q.arm(ArmType.ANY);
        q.awaitNotifications(1);
        assertEquals("r0", q.next().context());
    }

    /**
     * One arm gives at most one notification, however many completions follow.
     *
     * @throws Exception on failure
     */
    @Test
    public void notification_atMostOncePerArm() throws Exception {
        Link l = linkWithReceives(4);
        CqProbe q = l.server().recvCq();
        q.arm(ArmType.ANY);
        for (int i = 0; i < 3; i++) {
            sendAndWait(l, "s" + i, 0);
        }
        q.awaitNotifications(1);
        assertEquals(3, q.poll(3).size());
        assertEquals(1, q.notificationsStarted(), "three completions after one arm: one notification");
        q.arm(ArmType.ANY);
        sendAndWait(l, "s3", 0);
        q.awaitNotifications(2);
        assertEquals("r3", q.next().context());
        assertEquals(2, q.notificationsStarted());
    }

    /**
     * Arming a queue that holds a completion queued since the last callback is satisfied at once
     * (on a provider thread, not inside arm).
     *
     * @throws Exception on failure
     */
    @Test
    public void arm_withNewCompletionQueued_satisfiedAtOnce() throws Exception {
        Link l = linkWithReceives(2);
        CqProbe q = l.server().recvCq();
        q.arm(ArmType.ANY);
        sendAndWait(l, "a", 0);
        q.awaitNotifications(1);
        sendAndWait(l, "b", 0); // queued after the callback, not taken
        q.arm(ArmType.ANY);
        q.awaitNotifications(2);
        assertEquals(2, q.drain().size());
    }

    /**
     * A notification due while the handler runs is delivered only after it returns.
     *
     * @throws Exception on failure
     */
    @Test
    public void notifications_serialised_nextWaitsForHandlerToReturn() throws Exception {
        Link l = linkWithReceives(2);
        CqProbe q = l.server().recvCq();
        CountDownLatch gate = new CountDownLatch(1);
        q.holdNextNotification(gate);
        q.arm(ArmType.ANY);
        sendAndWait(l, "a", 0);
        q.awaitNotificationsStarted(1);
        q.arm(ArmType.ANY);
        sendAndWait(l, "b", 0);
        assertEquals(1, q.notificationsStarted(), "a notification due while the handler runs must wait for it");
        gate.countDown();
        q.awaitNotifications(2);
        assertEquals(1, q.maxConcurrent());
        assertEquals(2, q.drain().size());
    }

    /**
     * An ERRORS arm ignores successful completions and is satisfied by an error (FLUSHED).
     *
     * @throws Exception on failure
     */
    @Test
    public void armErrors_ignoresSuccess_satisfiedByError() throws Exception {
        Link l = linkWithReceives(2);
        CqProbe q = l.server().recvCq();
        q.arm(ArmType.ERRORS);
        sendAndWait(l, "ok", 0);
        assertEquals(0, q.notificationsStarted(), "ERRORS ignores a success");
        l.client().endpoint().disconnect();
        q.awaitNotifications(1);
        List<Completion> c = q.poll(2);
        assertEquals(RdmaStatus.SUCCESS, c.get(0).status());
        assertEquals(RdmaStatus.FLUSHED, c.get(1).status());
    }

    /**
     * A SOLICITED arm ignores unsolicited receives and is satisfied by a solicited one.
     *
     * @throws Exception on failure
     */
    @Test
    public void armSolicited_ignoresUnsolicited_satisfiedBySolicitedReceive() throws Exception {
        Link l = linkWithReceives(2);
        CqProbe q = l.server().recvCq();
        q.arm(ArmType.SOLICITED);
        sendAndWait(l, "plain", 0);
        assertEquals(0, q.notificationsStarted(), "SOLICITED ignores an unsolicited receive");
        sendAndWait(l, "solicited", RequestFlags.SOLICIT_EVENT);
        q.awaitNotifications(1);
        List<Completion> c = q.poll(2);
        assertFalse(c.get(0).solicited());
        assertTrue(c.get(1).solicited());
    }

    /**
     * A SOLICITED arm is also satisfied by an error.
     *
     * @throws Exception on failure
     */
    @Test
    public void armSolicited_satisfiedByError() throws Exception {
        Link l = linkWithReceives(1);
        CqProbe q = l.server().recvCq();
        q.arm(ArmType.SOLICITED);
        l.server().endpoint().disconnect();
        q.awaitNotifications(1);
        assertEquals(RdmaStatus.FLUSHED, q.next().status());
    }

    /**
     * Arming twice before the first arm is satisfied behaves as the combined arm type of the
     * NDKPI table: observed by which of an unsolicited receive, a solicited receive and an error
     * first notifies.
     *
     * @param first the first arm
     * @param second the second arm
     * @param expected the combined type
     * @throws Exception on failure
     */
    @ParameterizedTest(name = "{0} then {1} behaves as {2}")
    @CsvSource({
        "ANY, ANY, ANY", "ANY, ERRORS, ANY", "ANY, SOLICITED, ANY",
        "ERRORS, ANY, ANY", "ERRORS, ERRORS, ERRORS", "ERRORS, SOLICITED, SOLICITED",
        "SOLICITED, ANY, ANY", "SOLICITED, ERRORS, SOLICITED", "SOLICITED, SOLICITED, SOLICITED"})
    public void armTwice_behavesAsCombinedType(ArmType first, ArmType second, ArmType expected) throws Exception {
        Link l = linkWithReceives(3);
        CqProbe q = l.server().recvCq();
        q.arm(first);
        q.arm(second);
        sendAndWait(l, "plain", 0);
        if (expected == ArmType.ANY) {
            q.awaitNotifications(1);
            return;
        }
        assertEquals(0, q.notificationsStarted(), first + "+" + second + " must ignore an unsolicited receive");
        sendAndWait(l, "solicited", RequestFlags.SOLICIT_EVENT);
        if (expected == ArmType.SOLICITED) {
            q.awaitNotifications(1);
            return;
        }
        assertEquals(0, q.notificationsStarted(), first + "+" + second + " must ignore a solicited receive");
        l.client().endpoint().disconnect();
        q.awaitNotifications(1);
        assertEquals(RdmaStatus.FLUSHED, q.poll(3).get(2).status());
    }

    /**
     * Polling with a small array takes completions oldest first; the extended form reports no
     * token for ordinary receives.
     *
     * @throws Exception on failure
     */
    @Test
    public void getResults_smallArray_oldestFirst() throws Exception {
        Link l = linkWithReceives(5);
        for (int i = 0; i < 5; i++) {
            sendAndWait(l, "s" + i, 0);
        }
        CompletionResult[] two = {new CompletionResult(), new CompletionResult()};
        int seen = 0;
        long deadline = Tck.deadline();
        while (seen < 5) {
            int n = (seen % 2 == 0) ? l.server().recvCq().queue().getResults(two)
                    : l.server().recvCq().queue().getResultsEx(two);
            for (int i = 0; i < n; i++) {
                assertEquals("r" + seen, two[i].requestContext());
                assertFalse(two[i].tokenInvalidated());
                seen++;
            }
            assertTrue(n <= 2);
            assertTrue(System.nanoTime() - deadline < 0, "completions did not arrive");
            if (n == 0) {
                java.util.concurrent.locks.LockSupport.parkNanos(50_000);
            }
        }
        assertEquals(0, l.server().recvCq().queue().getResults(two));
    }

    /**
     * An exception thrown by the handler does not stop later notifications.
     *
     * @throws Exception on failure
     */
    @Test
    public void handlerException_isContained_laterArmsStillNotify() throws Exception {
        Link l = linkWithReceives(2);
        CqProbe q = l.server().recvCq();
        q.throwFromNextNotification(new IllegalStateException("thrown by the handler on purpose"));
        q.arm(ArmType.ANY);
        sendAndWait(l, "a", 0);
        q.awaitNotifications(1);
        q.arm(ArmType.ANY);
        sendAndWait(l, "b", 0);
        q.awaitNotifications(2);
        assertEquals(2, q.drain().size());
        assertRoundTrip(l);
    }

    /**
     * A queue used by an open endpoint cannot be closed; after the endpoint closes it can.
     *
     * @throws Exception on failure
     */
    @Test
    public void close_whileUsedByOpenEndpoint_invalidState() throws Exception {
        CqProbe p = probe(client(), 8, "cq");
        org.smbdirect.rdma.Endpoint e = client().createEndpoint(EndpointOptions.builder(p.queue(), p.queue()).build(),
                recorder("e"));
        assertFails(RdmaStatus.INVALID_STATE, () -> p.queue().close());
        e.close();
        p.queue().close();
    }

    /**
     * More completions than the depth overflow the queue: every endpoint reporting to it ends with
     * COMPLETION_QUEUE_OVERFLOW; completions already queued stay retrievable.
     *
     * @throws Exception on failure
     */
    @Test
    public void overflow_endsReportingEndpoints_queuedCompletionsStayRetrievable() throws Exception {
        CqProbe small = probe(server(), 2, "server.smallRecvCq");
        Link l = link(new LinkSpec().serverRecvCq(small).serverOptions(b -> b.receiveQueueDepth(4)));
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        for (int i = 0; i < 3; i++) {
            l.server().postReceive("r" + i, in);
        }
        out = l.client().register(64, 0);
        for (int i = 0; i < 3; i++) {
            l.client().send("s" + i, out, 0, 8, 0);
        }
        EventRecorder.Event e = l.server().events().awaitTerminal();
        assertEquals(EventRecorder.Kind.ERROR, e.kind());
        assertEquals(RdmaStatus.COMPLETION_QUEUE_OVERFLOW, e.status());
        List<Completion> kept = small.poll(2);
        assertEquals("r0", kept.get(0).context());
        assertEquals("r1", kept.get(1).context());
        l.client().events().awaitTerminal();
    }

    /**
     * Endpoints may share a queue; each completion names its endpoint.
     *
     * @throws Exception on failure
     */
    @Test
    public void sharedQueue_eachCompletionNamesItsEndpoint() throws Exception {
        CqProbe shared = probe(server(), 16, "server.sharedRecvCq");
        Link a = link(new LinkSpec().serverRecvCq(shared));
        Link b = link(new LinkSpec().serverRecvCq(shared));
        Set<Object> expected = new HashSet<>();
        for (Link l : new Link[] {a, b}) {
            MemoryRegion in = l.server().register(16, Access.LOCAL_WRITE);
            l.server().postReceive(l.server().endpoint(), in);
            MemoryRegion o = l.client().register(16, 0);
            l.client().send("s", o, 0, 4, 0);
            expected.add(l.server().endpoint());
        }
        Set<Object> seen = new HashSet<>();
        for (Completion c : shared.poll(2)) {
            assertEquals(c.context(), c.endpoint(), "the completion names the endpoint the receive was posted on");
            seen.add(c.endpoint());
        }
        assertEquals(expected, seen);
    }
}
