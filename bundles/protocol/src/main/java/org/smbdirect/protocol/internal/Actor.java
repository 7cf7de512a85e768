package org.smbdirect.protocol.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Something whose state one thread at a time touches: signalled from any thread, it runs {@link
 * #process()} on its {@link EventLoopGroup.Loop}, never concurrently with itself. Signals that
 * arrive while it runs make it run again, after the other actors already waiting on the loop
 * (fairness). Signalling allocates nothing.
 *
 * <p>Two shortcuts let a thread that is not the loop's do the actor's work when the actor is idle,
 * instead of handing it over and waking the loop: {@link #tryRunHere} (a caller's own request, such
 * as a send) and {@link #runInline} (the whole step, on the thread that took a completion
 * notification). Either is refused on a thread that is already inside an actor's step, so that one
 * connection's rules never run while another's hold the thread. An actor that {@linkplain
 * #takesOverFromCaller takes over from its callers} has the whole step run by a caller whose work
 * outlasted a completion thread's wait (a completion that arrived during a long post), rather than
 * wake the loop for it.
 */
abstract class Actor implements Runnable {
    /** Rounds of {@link #process()} one {@link #runInline} call does at most before it hands over. */
    static final int INLINE_ROUNDS = 8;
    /** Marks a thread that runs an actor's step outside the engine's loops (see {@link InlineRuns}). */
    private static final ThreadLocal<InlineRuns.Run> INLINE = new ThreadLocal<>();

    /**
     * How long {@link #runInline} waits for a caller's {@link #tryRunHere} to finish before it
     * leaves the work to the loop (or to the caller, when the actor {@linkplain #takesOverFromCaller
     * takes over from its callers}). A send's rules take microseconds, but the caller's post wakes a
     * provider thread, which on a busy machine may take the caller's processor: the waiting thread
     * yields rather than spins, and 5 us was measured too short (most completions went to the loop).
     */
    static final long CALLER_WAIT_NANOS = 50_000;

    private final AtomicInteger signals = new AtomicInteger();
    /** Set while a caller runs work through {@link #tryRunHere}. */
    private volatile boolean callerRunning;
    final EventLoopGroup.Loop loop;
    /** Link of the loop's intrusive run queue; written only by the loop's queue. */
    volatile Actor next;

    Actor(EventLoopGroup.Loop loop) {
        this.loop = loop;
    }

    /** Makes the actor run soon. Thread-safe, allocation-free. */
    final void signal() {
        if (signals.getAndIncrement() == 0) {
            loop.submit(this);
        }
    }

    /**
     * Whether the calling thread is inside an actor's step: on an engine loop, or in {@link
     * #tryRunHere} or {@link #runInline} on another thread. Such a thread must not block.
     *
     * @return {@code true} inside a step
     */
    static boolean inStep() {
        if (EventLoopGroup.inEngineStep()) {
            return true;
        }
        InlineRuns.Run r = INLINE.get();
        return r != null && r.actor != null;
    }

    /**
     * Runs {@code work} on the calling thread when the actor is idle (neither scheduled nor
     * running), as if it were the actor's own processing: a caller may do the actor's work itself
     * instead of handing it over to the loop thread and waking it. Refused, and the caller signals
     * instead, when the actor is busy or when the calling thread is in the middle of an actor's
     * step. Work signalled meanwhile is handed to the loop when {@code work} returns.
     *
     * @param work what to run; must not block
     * @return {@code true} when it ran here
     */
    final boolean tryRunHere(Runnable work) {
        if (inStep()) {
            return false;
        }
        if (!signals.compareAndSet(0, 1)) {
            return false;
        }
        InlineRuns.Run r = enter();
        callerRunning = true;
        boolean served = false;
        try {
            work.run();
        } finally {
            callerRunning = false;
            try {
                // signalled meanwhile (a completion during the post, typically): this thread holds
                // the actor, so it can do the step now instead of waking the loop for it
                int seen = signals.get();
                if (seen != 1 && takesOverFromCaller()) {
                    signals.addAndGet(1 - seen);
                    served = true;
                    rounds();
                }
            } finally {
                r.leave();
                if (!served && signals.decrementAndGet() != 0) {
                    loop.submit(this);
                }
            }
        }
        return true;
    }

    /**
     * Runs the actor's whole step on the calling thread when the actor is idle, and again while it
     * is signalled meanwhile (at most {@link #INLINE_ROUNDS} times; what is left then goes to the
     * loop): the thread that took a completion notification processes the completions itself,
     * and what they lead to, without a hand-over. Refused like {@link #tryRunHere}; a caller's
     * {@link #tryRunHere} in progress is waited for, up to {@link #CALLER_WAIT_NANOS}.
     *
     * @return {@code true} when it ran here
     */
    final boolean runInline() {
        if (inStep()) {
            return false;
        }
        if (!signals.compareAndSet(0, 1) && !afterCaller()) {
            return false;
        }
        InlineRuns.Run r = enter();
        try {
            rounds();
        } finally {
            r.leave();
        }
        return true;
    }

    /**
     * The step, on a thread that holds the actor (signals at 1: the ones seen so far are served),
     * and again while it is signalled meanwhile, at most {@link #INLINE_ROUNDS} times; then lets
     * the actor go, to the loop if it was signalled since.
     */
    private void rounds() {
        try {
            process();
            for (int round = 1; round < INLINE_ROUNDS; round++) {
                int seen = signals.get();
                if (seen == 1 || !staysInline()) {
                    break; // nothing new, or the actor was moved to its loop: the loop takes the rest
                }
                signals.addAndGet(1 - seen); // the signals seen so far are served by this round
                process();
            }
        } finally {
            if (signals.decrementAndGet() != 0) {
                loop.submit(this);
            }
        }
    }

    /**
     * The actor is busy: when a caller's {@link #tryRunHere} holds it, waits briefly for it to
     * finish and takes the actor then, rather than signal (the caller would then wake the loop).
     *
     * @return {@code true} when the actor was taken
     */
    private boolean afterCaller() {
        if (!callerRunning) {
            return false; // busy on its loop: the loop takes what comes
        }
        // The caller clears its flag just before it lets go of the actor, so the actor is tried
        // until the deadline, not only while the flag is up.
        long deadline = System.nanoTime() + CALLER_WAIT_NANOS;
        do {
            Thread.yield(); // on a busy machine the caller may be waiting for this very processor
            if (signals.compareAndSet(0, 1)) {
                return true;
            }
        } while (System.nanoTime() - deadline < 0);
        return false;
    }

    /** Marks the calling thread as running this actor's step (for {@link #inStep} and the monitor). */
    private InlineRuns.Run enter() {
        InlineRuns.Run r = INLINE.get();
        if (r == null) {
            r = InlineRuns.register(Thread.currentThread());
            INLINE.set(r);
        }
        r.enter(this);
        return r;
    }

    @Override
    public final void run() {
        int seen = signals.get();
        try {
            process();
        } finally {
            if (signals.addAndGet(-seen) != 0) {
                loop.submit(this);
            }
        }
    }

    /** Does the pending work. Runs on the loop thread, or inline; must not block. */
    protected abstract void process();

    /**
     * Whether a {@link #runInline} in progress may go on with another round; {@code false} once the
     * actor was moved back to its loop (see {@link #heldInline}).
     *
     * @return {@code true} by default
     */
    boolean staysInline() {
        return true;
    }

    /**
     * Whether a caller of {@link #tryRunHere} does the whole step when the actor was signalled
     * during its work (and a {@link #runInline} gave up waiting for it), rather than hand the step
     * to the loop and wake it. Only for an actor whose step may run on any thread that is not inside
     * another step.
     *
     * @return {@code false} by default
     */
    boolean takesOverFromCaller() {
        return false;
    }

    /**
     * A step of this actor has held a thread outside the engine's loops for too long (see {@link
     * InlineRuns}); the actor should stop running there. Called by the engine's monitor.
     *
     * @param thread the thread held
     * @param heldNanos for how long
     */
    void heldInline(Thread thread, long heldNanos) {
    }
}
