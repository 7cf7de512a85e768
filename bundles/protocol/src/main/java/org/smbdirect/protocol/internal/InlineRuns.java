package org.smbdirect.protocol.internal;

import java.lang.ref.WeakReference;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The actors' steps that run outside the engine's loops ({@link Actor#tryRunHere}, {@link
 * Actor#runInline}), one record per thread that ever ran one, so that the engine's monitor sees a
 * step holding such a thread (a provider's completion thread, say) as it sees one holding a loop.
 * A record holds its thread weakly and its actor only while the step runs: it keeps neither a
 * connection nor another bundle's thread reachable.
 */
final class InlineRuns {
    private static final CopyOnWriteArrayList<Run> RUNS = new CopyOnWriteArrayList<>();

    private InlineRuns() {
    }

    /** The record of a thread that runs its first step; called once per thread. */
    static Run register(Thread t) {
        Run r = new Run(t);
        RUNS.add(r);
        return r;
    }

    /** How many threads have a record (tests). */
    static int size() {
        return RUNS.size();
    }

    /**
     * The monitor's look at the steps of {@code group}'s actors: one that has held its thread
     * waiting for {@code stallNanos} (seen waiting at every look) or otherwise for {@code
     * busyNanos} is reported to its actor once. Records of threads that ended are dropped.
     *
     * @param group the monitor's group
     * @param now the time of the look
     * @param stallNanos how long a waiting step may hold a thread
     * @param busyNanos how long a computing step may hold a thread
     * @return whether a step of {@code group}'s actors was running outside the loops at this look
     */
    static boolean check(EventLoopGroup group, long now, long stallNanos, long busyNanos) {
        boolean stepping = false;
        for (Run r : RUNS) {
            Thread t = r.thread.get();
            if (t == null || !t.isAlive()) {
                RUNS.remove(r);
                continue;
            }
            Actor a = r.actor;
            long step = r.step;
            if (a == null || a.loop.group() != group) {
                continue;
            }
            stepping = true;
            if (step != r.seenStep) {
                // a step this monitor has not seen before: it started at most one look ago
                r.seenStep = step;
                r.seenSince = now;
                r.waitingSince = 0;
                continue;
            }
            if (r.reported == step) {
                continue;
            }
            Thread.State st = t.getState();
            boolean waiting = st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING;
            if (!waiting) {
                r.waitingSince = 0;
            } else if (r.waitingSince == 0) {
                r.waitingSince = now;
            }
            boolean held = r.waitingSince != 0 && now - r.waitingSince >= stallNanos || now - r.seenSince >= busyNanos;
            if (held && r.actor == a && r.step == step) {
                r.reported = step;
                a.heldInline(t, now - r.seenSince);
            }
        }
        return stepping;
    }

    /** The monitor's look was late (the whole process paused): what it suspected is forgotten. */
    static void forgetSuspicions() {
        for (Run r : RUNS) {
            r.seenStep = -1;
        }
    }

    /** One thread's record. */
    static final class Run {
        private final WeakReference<Thread> thread;
        /** The actor whose step runs now, {@code null} between steps. */
        volatile Actor actor;
        /** Counts the steps: a step is told from the next without reading the clock. */
        volatile long step;
        // the monitor's
        private long seenStep = -1;
        private long seenSince;
        private long waitingSince;
        private long reported = -1;

        private Run(Thread t) {
            thread = new WeakReference<>(t);
        }

        void enter(Actor a) {
            step++;
            actor = a;
        }

        void leave() {
            actor = null;
        }
    }
}
