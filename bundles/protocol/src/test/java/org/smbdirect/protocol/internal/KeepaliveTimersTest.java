package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/** MS-SMBD 3.1.6.1, 3.1.6.2 and their callers (3.1.5.1, 3.1.5.5) on the virtual clock. */
class KeepaliveTimersTest {
    private final VirtualScheduler clock = new VirtualScheduler();
    private final AtomicInteger signals = new AtomicInteger();
    private final DataModel model = new DataModel();

    private KeepaliveTimers timers(int intervalSeconds) {
        model.initialValues(DataModel.Role.PASSIVE,
                SmbDirectConfig.builder().keepaliveIntervalSeconds(intervalSeconds).build());
        return new KeepaliveTimers(clock, signals::incrementAndGet, model, Duration.ofSeconds(5));
    }

    /** Runs the idle timer's check the way the connection does when signalled. */
    private ConnectionLoss advance(KeepaliveTimers t, int seconds) {
        ConnectionLoss loss = null;
        for (int i = 0; i < seconds && loss == null; i++) {
            clock.advance(Duration.ofSeconds(1));
            loss = t.idleTimerFired();
        }
        return loss;
    }

    /**
     * Columns: KeepaliveInterval (s), the peer's last message (s after establishment, -1: none),
     * seconds observed, expected: keepalives requested, terminated.
     */
    @ParameterizedTest(name = "interval {0}, peer at {1}, {2} s -> keepalive {3}, terminated {4}")
    @CsvSource({
        "120, -1, 119, false, false",
        "120, -1, 120, true, false",
        "120, -1, 125, true, true",
        "120, 60, 179, false, false",
        "120, 60, 180, true, false",
        "120, 122, 200, true, false",
        "0, -1, 100000, false, false",
    })
    void idleConnectionTimer_3_1_6_2(int interval, int peerAt, int seconds, boolean keepalive, boolean terminated) {
        KeepaliveTimers t = timers(interval);
        t.established();
        ConnectionLoss loss = null;
        boolean requested = false;
        for (int s = 1; s <= seconds && loss == null; s++) {
            loss = advance(t, 1);
            if (model.keepaliveRequested == DataModel.KeepaliveRequested.PENDING) {
                requested = true;
                assertTrue(model.sendImmediate, "a keepalive goes even when nothing is queued");
                assertEquals(Wire.SMB_DIRECT_RESPONSE_REQUESTED, t.flagsForNextMessage(), "3.1.5.1: the flag");
                assertEquals(DataModel.KeepaliveRequested.SENT, model.keepaliveRequested);
                assertEquals(0, t.flagsForNextMessage(), "once");
            }
            if (s == peerAt) {
                t.messageReceived(); // 3.1.5.5
                t.batchEnded();
                assertEquals(DataModel.KeepaliveRequested.NONE, model.keepaliveRequested);
            }
        }
        assertEquals(keepalive, requested, "keepalive requested");
        assertEquals(terminated, loss != null, "terminated");
        if (loss != null) {
            assertEquals(TerminationReason.KEEPALIVE_TIMEOUT, loss.reason());
        }
    }

    /** 3.1.6.1: the Negotiation Timer expires once unless cancelled by a completed negotiation. */
    @Test
    void negotiationTimer_3_1_6_1() {
        KeepaliveTimers t = timers(120);
        t.startNegotiationTimer(Duration.ofSeconds(5));
        clock.advance(Duration.ofMillis(4999));
        assertFalse(t.negotiationTimerExpired());
        clock.advance(Duration.ofMillis(1));
        assertEquals(1, signals.get(), "the expiry signals the connection");
        assertTrue(t.negotiationTimerExpired());
        assertFalse(t.negotiationTimerExpired(), "once per expiry");
        t.startNegotiationTimer(Duration.ofSeconds(5));
        t.cancelNegotiationTimer();
        clock.advance(Duration.ofSeconds(10));
        assertFalse(t.negotiationTimerExpired());
    }

    /** Retriggering on every message costs no timer operation: one scheduled check at a time. */
    @Test
    void retriggering_keepsOneScheduledCheck() {
        KeepaliveTimers t = timers(120);
        t.established();
        for (int i = 0; i < 1000; i++) {
            t.messageReceived();
            t.batchEnded();
        }
        assertEquals(1, clock.pending());
        assertNull(advance(t, 120));
        assertEquals(1, clock.pending(), "the check moved to the later deadline");
        t.cancelAll();
        assertEquals(0, clock.pending());
    }

    /** MS-SMBD 3.1.5.5 for a batch of messages: the first reads the clock, for all of them. */
    @Test
    void retrigger_aBatchOfMessages_readsTheClockOnce() {
        MovingClock moving = new MovingClock(Duration.ofSeconds(1));
        model.initialValues(DataModel.Role.PASSIVE, SmbDirectConfig.builder().keepaliveIntervalSeconds(120).build());
        KeepaliveTimers t = new KeepaliveTimers(moving, signals::incrementAndGet, model, Duration.ofSeconds(5));
        t.established();
        for (int batch = 0; batch < 2; batch++) {
            long before = moving.now;
            for (int i = 0; i < 100; i++) {
                t.messageReceived();
            }
            assertEquals(before + Duration.ofSeconds(1).toNanos(), moving.now, "one reading for the batch");
            t.batchEnded();
        }
    }

    /**
     * MS-SMBD 3.1.5.5 and 3.1.6.2 in one batch: when a rule sets the timer after a message (here the
     * keepalive's response timeout), the next message of the batch retriggers it again.
     */
    @Test
    void retrigger_afterAnotherRuleSetTheTimer_theNextMessageRetriggers() {
        KeepaliveTimers t = timers(120);
        t.established();
        t.messageReceived();
        assertNull(t.idleConnectionTimerExpired()); // the timer: 5 s
        assertEquals(DataModel.KeepaliveRequested.PENDING, model.keepaliveRequested);
        t.messageReceived(); // same batch: the timer back to 120 s
        assertNull(advance(t, 5));
        assertEquals(DataModel.KeepaliveRequested.NONE, model.keepaliveRequested, "no keepalive after 5 s");
        assertNull(advance(t, 114));
        assertEquals(DataModel.KeepaliveRequested.NONE, model.keepaliveRequested);
        assertNull(advance(t, 1));
        assertEquals(DataModel.KeepaliveRequested.PENDING, model.keepaliveRequested, "120 s after the message");
    }

    /**
     * A clock that moves by {@code step} at every reading, as a virtual clock does when a test
     * advances it on another thread while the connection reads it; it records when the last task was
     * scheduled to run, and the task.
     */
    private static final class MovingClock implements Scheduler {
        private final long step;
        private long now = 1_000_000_000L;
        long lastDue = -1;
        Runnable lastTask;

        MovingClock(Duration step) {
            this.step = step.toNanos();
        }

        @Override
        public long nanoTime() {
            long t = now;
            now += step;
            return t;
        }

        @Override
        public Timer schedule(Runnable task, long delayNanos) {
            lastDue = now + delayNanos;
            lastTask = task;
            return () -> { };
        }

        @Override
        public Timer scheduleAt(Runnable task, long deadlineNanos) {
            lastDue = deadlineNanos;
            lastTask = task;
            return () -> { };
        }

        @Override
        public void shutdown() {
        }
    }

    /**
     * MS-SMBD 3.1.6.2: the Idle Connection Timer's check falls due at the deadline read from the
     * clock once, however far the clock moved before the check was scheduled (TimerTest once saw
     * no keepalive: the check had slid 110 s past its deadline while the test advanced the clock).
     */
    @Test
    void idleCheck_dueAtTheDeadline_whenTheClockMovesBetweenReadings() {
        MovingClock moving = new MovingClock(Duration.ofSeconds(10));
        model.initialValues(DataModel.Role.PASSIVE, SmbDirectConfig.builder().keepaliveIntervalSeconds(120).build());
        KeepaliveTimers t = new KeepaliveTimers(moving, signals::incrementAndGet, model, Duration.ofSeconds(5));
        long establishedAt = moving.now;
        t.established();
        assertEquals(establishedAt + Duration.ofSeconds(120).toNanos(), moving.lastDue);
        assertEquals(moving.lastDue, t.idleCheckAt());
        // A message moves the deadline on; the check stays, and when it runs it moves to the new deadline.
        long receivedAt = moving.now;
        t.messageReceived();
        t.batchEnded();
        assertEquals(establishedAt + Duration.ofSeconds(120).toNanos(), t.idleCheckAt(), "one check at a time");
        moving.now = establishedAt + Duration.ofSeconds(120).toNanos();
        moving.lastTask.run(); // the check falls due
        assertNull(t.idleTimerFired());
        assertEquals(receivedAt + Duration.ofSeconds(120).toNanos(), moving.lastDue);
        assertEquals(moving.lastDue, t.idleCheckAt());
    }
}
