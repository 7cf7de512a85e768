package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The engine's monitor looks every {@link EventLoopGroup#CHECK_NANOS} while a step runs and every
 * {@link EventLoopGroup#IDLE_CHECK_NANOS} while none does, so that an idle transport does not wake
 * a thread 200 times a second. The idle pace is counted over one second of real time (the
 * monitor's clock is the real one; a loaded machine only makes it look less often); what sets the
 * faster pace is checked without the clock.
 */
class EngineMonitorPaceTest {
    private static final long WINDOW_MILLIS = 1000;
    private EventLoopGroup group;

    @BeforeEach
    void setUp() {
        group = new EventLoopGroup("monitor-pace-test", 1, 0);
    }

    @AfterEach
    void tearDown() {
        group.shutdown();
    }

    private long looksDuring(long millis) throws InterruptedException {
        long before = group.monitorLooks();
        Thread.sleep(millis);
        return group.monitorLooks() - before;
    }

    @Test
    void idle_looksAboutTwentyTimesASecond() throws Exception {
        Thread.sleep(2 * EventLoopGroup.IDLE_CHECK_NANOS / 1_000_000); // past the first looks
        long looks = looksDuring(WINDOW_MILLIS);
        assertTrue(looks <= 3 * WINDOW_MILLIS * 1_000_000 / EventLoopGroup.IDLE_CHECK_NANOS,
                looks + " looks in " + WINDOW_MILLIS + " ms of idleness");
    }

    /** What sets the faster pace: a step holding a loop's thread, seen by the loop's mark. */
    @Test
    void stepHoldingItsLoop_isSeenAsStepping_untilItEnds() throws Exception {
        EventLoopGroup.Loop loop = group.next();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch left = new CountDownLatch(1);
        Actor held = new Actor(loop) {
            @Override
            protected void process() {
                entered.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                left.countDown();
            }
        };
        assertFalse(loop.inStep());
        held.signal();
        assertTrue(entered.await(10, TimeUnit.SECONDS));
        assertTrue(loop.inStep());
        release.countDown();
        assertTrue(left.await(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (loop.inStep() && System.nanoTime() < deadline) {
            Thread.onSpinWait(); // the mark is cleared just after the step returns
        }
        assertFalse(loop.inStep());
    }

    /** ... and a step of one of the group's actors running on another thread (a provider's, say). */
    @Test
    void stepOutsideTheLoops_isSeenAsStepping_onlyForItsOwnGroup() throws Exception {
        // on a thread of its own, whose record goes when it ends
        FutureTask<Void> t = new FutureTask<>(this::stepOutsideTheLoops, null);
        Thread thread = new Thread(t, "monitor-pace-inline");
        thread.start();
        t.get(10, TimeUnit.SECONDS);
    }

    private void stepOutsideTheLoops() {
        Actor mine = new Actor(group.next()) {
            @Override
            protected void process() {
            }
        };
        EventLoopGroup other = new EventLoopGroup("monitor-pace-other", 1, 0);
        try {
            InlineRuns.Run run = InlineRuns.register(Thread.currentThread());
            long now = System.nanoTime();
            assertFalse(InlineRuns.check(group, now, EventLoopGroup.STALL_NANOS, EventLoopGroup.BUSY_NANOS));
            run.enter(mine);
            assertTrue(InlineRuns.check(group, now, EventLoopGroup.STALL_NANOS, EventLoopGroup.BUSY_NANOS));
            assertFalse(InlineRuns.check(other, now, EventLoopGroup.STALL_NANOS, EventLoopGroup.BUSY_NANOS));
            run.leave();
            assertFalse(InlineRuns.check(group, now, EventLoopGroup.STALL_NANOS, EventLoopGroup.BUSY_NANOS));
        } finally {
            other.shutdown();
        }
    }
}
