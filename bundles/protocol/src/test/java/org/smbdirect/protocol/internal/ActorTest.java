package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Where an actor's steps run: on its loop, on a caller's thread ({@link Actor#tryRunHere}), or on
 * the thread that took a completion ({@link Actor#runInline}); never two at once, and no signal
 * lost on the way from one to the other.
 */
class ActorTest {
    private EventLoopGroup group;

    @BeforeEach
    void setUp() {
        group = new EventLoopGroup("actor-test", 1, 0);
    }

    @AfterEach
    void tearDown() {
        group.shutdown();
    }

    /** Records the thread of each step; a step may be made to wait, or to signal once more. */
    private class Recording extends Actor {
        final List<Thread> steps = new CopyOnWriteArrayList<>();
        final AtomicInteger concurrent = new AtomicInteger();
        final AtomicInteger overlaps = new AtomicInteger();
        volatile CountDownLatch hold;
        volatile CountDownLatch entered = new CountDownLatch(1);
        volatile boolean inline = true;
        volatile boolean takesOver;
        final AtomicInteger signalAgain = new AtomicInteger();

        Recording() {
            super(group.next());
        }

        @Override
        protected void process() {
            if (concurrent.incrementAndGet() != 1) {
                overlaps.incrementAndGet();
            }
            steps.add(Thread.currentThread());
            entered.countDown();
            CountDownLatch h = hold;
            if (h != null) {
                hold = null;
                await(h);
            }
            if (signalAgain.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                signal();
            }
            concurrent.decrementAndGet();
        }

        @Override
        boolean staysInline() {
            return inline;
        }

        @Override
        boolean takesOverFromCaller() {
            return takesOver;
        }

        void awaitSteps(int n) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (steps.size() < n && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(steps.size() >= n, "steps " + steps.size() + " of " + n);
        }

        /** Signals the idle actor: its loop, not {@code thread}, runs the step. */
        void nextSignalGoesToTheLoop(Thread thread) throws InterruptedException {
            int before = steps.size();
            signal();
            awaitSteps(before + 1);
            assertNotSame(thread, steps.get(before));
        }
    }

    /**
     * A thread in {@link Actor#tryRunHere} whose work holds the actor until {@code go} opens;
     * returns once it holds it. What {@code tryRunHere} returned goes to {@code ran}.
     */
    private static Thread callerHolding(Recording a, CountDownLatch go, AtomicBoolean ran) {
        CountDownLatch in = new CountDownLatch(1);
        Thread caller = new Thread(() -> ran.set(a.tryRunHere(() -> {
            in.countDown();
            await(go);
        })), "caller");
        caller.start();
        await(in);
        return caller;
    }

    private static void await(CountDownLatch l) {
        try {
            assertTrue(l.await(10, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void runInline_idleActor_runsItsStepOnTheCallingThread() {
        Recording a = new Recording();
        assertTrue(a.runInline());
        assertEquals(List.of(Thread.currentThread()), a.steps);
    }

    @Test
    void runInline_signalledDuringTheStep_runsAgainHere_upToTheRoundLimit_thenTheLoopTakesTheRest()
            throws Exception {
        Recording a = new Recording();
        a.signalAgain.set(Actor.INLINE_ROUNDS + 2);
        assertTrue(a.runInline());
        a.awaitSteps(Actor.INLINE_ROUNDS + 3);
        for (int i = 0; i < Actor.INLINE_ROUNDS; i++) {
            assertSame(Thread.currentThread(), a.steps.get(i), "round " + i);
        }
        for (int i = Actor.INLINE_ROUNDS; i < a.steps.size(); i++) {
            assertNotSame(Thread.currentThread(), a.steps.get(i), "step " + i + " is the loop's");
        }
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void runInline_actorBusyOnItsLoop_isRefused_andTheSignalStillRuns() throws Exception {
        Recording a = new Recording();
        CountDownLatch release = new CountDownLatch(1);
        a.hold = release;
        a.signal();
        await(a.entered);
        assertFalse(a.runInline(), "busy on the loop");
        a.signal(); // what the refused caller does
        release.countDown();
        a.awaitSteps(2);
        assertTrue(a.steps.stream().noneMatch(t -> t == Thread.currentThread()));
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void runInline_whileACallerRunsItsWork_waitsBriefly_thenRunsTheStepOrLeavesItToTheLoop() throws Exception {
        Recording a = new Recording();
        CountDownLatch callerGo = new CountDownLatch(1);
        AtomicBoolean ran = new AtomicBoolean();
        Thread caller = callerHolding(a, callerGo, ran);
        AtomicBoolean inlined = new AtomicBoolean();
        Thread completion = new Thread(() -> inlined.set(a.runInline()), "completion");
        completion.start();
        Thread.sleep(1); // the completion thread is waiting for the caller now (within its 50 us, or not)
        callerGo.countDown();
        caller.join();
        completion.join();
        assertTrue(ran.get());
        if (inlined.get()) {
            assertEquals(List.of(completion), a.steps);
        } else {
            // it gave up waiting: then its step is not lost, the signal it made brings the loop
            a.nextSignalGoesToTheLoop(completion);
        }
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void tryRunHere_signalledDuringTheWork_actorTakingOver_theCallerRunsTheStepBeforeItReturns() throws Exception {
        Recording a = new Recording();
        a.takesOver = true;
        AtomicBoolean ran = new AtomicBoolean();
        List<Thread> stepsWhenReturned = new CopyOnWriteArrayList<>();
        Thread caller = new Thread(() -> {
            ran.set(a.tryRunHere(a::signal)); // a completion notified during the caller's post
            stepsWhenReturned.addAll(a.steps);
        }, "caller");
        caller.start();
        caller.join();
        assertTrue(ran.get());
        assertEquals(List.of(caller), stepsWhenReturned, "the step ran on the caller, before tryRunHere returned");
        a.nextSignalGoesToTheLoop(caller); // the actor is free again
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void tryRunHere_signalledDuringTheWork_actorNotTakingOver_leavesTheStepToTheLoop() throws Exception {
        Recording a = new Recording();
        AtomicBoolean ran = new AtomicBoolean();
        Thread caller = new Thread(() -> ran.set(a.tryRunHere(a::signal)), "caller");
        caller.start();
        caller.join();
        assertTrue(ran.get());
        a.awaitSteps(1);
        assertNotSame(caller, a.steps.get(0));
        assertEquals(1, a.steps.size());
    }

    @Test
    void tryRunHere_takingOver_signalledAgainAndAgain_runsTheRoundLimitHere_thenTheLoopTakesTheRest()
            throws Exception {
        Recording a = new Recording();
        a.takesOver = true;
        a.signalAgain.set(Actor.INLINE_ROUNDS + 2);
        AtomicBoolean ran = new AtomicBoolean();
        Thread caller = new Thread(() -> ran.set(a.tryRunHere(a::signal)), "caller");
        caller.start();
        caller.join();
        assertTrue(ran.get());
        a.awaitSteps(Actor.INLINE_ROUNDS + 3);
        for (int i = 0; i < Actor.INLINE_ROUNDS; i++) {
            assertSame(caller, a.steps.get(i), "round " + i);
        }
        for (int i = Actor.INLINE_ROUNDS; i < a.steps.size(); i++) {
            assertNotSame(caller, a.steps.get(i), "step " + i + " is the loop's");
        }
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void runInline_whileACallerThatTakesOverRunsItsWorkTooLong_givesUp_andTheCallerRunsTheStep() throws Exception {
        Recording a = new Recording();
        a.takesOver = true;
        CountDownLatch callerGo = new CountDownLatch(1);
        AtomicBoolean ran = new AtomicBoolean();
        Thread caller = callerHolding(a, callerGo, ran);
        AtomicBoolean inlined = new AtomicBoolean(true);
        Thread completion = new Thread(() -> {
            inlined.set(a.runInline());
            if (!inlined.get()) {
                a.signal(); // what a refused completion thread does
            }
        }, "completion");
        completion.start();
        completion.join(); // gives up after its brief wait, while the caller still holds the actor
        assertFalse(inlined.get());
        assertTrue(a.steps.isEmpty());
        callerGo.countDown();
        caller.join();
        assertTrue(ran.get());
        assertEquals(List.of(caller), a.steps);
        assertEquals(0, a.overlaps.get());
    }

    @Test
    void runInline_andTryRunHere_insideAStep_areRefused() {
        Recording inner = new Recording();
        AtomicBoolean innerInline = new AtomicBoolean(true);
        AtomicBoolean innerHere = new AtomicBoolean(true);
        Recording wrapper = new Recording() {
            @Override
            protected void process() {
                innerInline.set(inner.runInline());
                innerHere.set(inner.tryRunHere(() -> { }));
                assertTrue(Actor.inStep());
            }
        };
        assertFalse(Actor.inStep());
        assertTrue(wrapper.runInline());
        assertFalse(innerInline.get(), "one actor's step never runs inside another's");
        assertFalse(innerHere.get());
        assertTrue(inner.steps.isEmpty());
        assertFalse(Actor.inStep());
    }

    @Test
    void runInline_movedBackToTheLoopDuringTheStep_stopsItsRounds_theLoopTakesTheRest() throws Exception {
        Recording a = new Recording() {
            @Override
            protected void process() {
                super.process();
                inline = false; // what the monitor does to a step that held the thread too long
            }
        };
        a.signalAgain.set(3);
        assertTrue(a.runInline());
        a.awaitSteps(4);
        assertSame(Thread.currentThread(), a.steps.get(0));
        for (int i = 1; i < a.steps.size(); i++) {
            assertNotSame(Thread.currentThread(), a.steps.get(i), "step " + i + " is the loop's");
        }
        assertEquals(0, a.overlaps.get());
    }
}
