package org.smbdirect.protocol.internal;

/**
 * The one clock and timer source of a transport (negotiation timers, idle connection timers,
 * keepalive response timeouts). Behind an interface so that tests drive a virtual clock and never
 * sleep for a protocol timeout.
 */
public interface Scheduler {

    /**
     * The current time of this scheduler's clock.
     *
     * @return nanoseconds from an arbitrary origin
     */
    long nanoTime();

    /**
     * Runs a task once after a delay, on the scheduler's thread. Tasks must be short; they hand
     * work to a connection's actor rather than doing it.
     *
     * @param task what to run
     * @param delayNanos how long from now
     * @return a handle to cancel it
     */
    Timer schedule(Runnable task, long delayNanos);

    /**
     * Runs a task once at a time of this scheduler's clock: a deadline computed from one reading
     * stays that deadline, however far the clock moved before the call (a virtual clock can move
     * by minutes at once).
     *
     * @param task what to run
     * @param deadlineNanos when, on {@link #nanoTime()}'s scale
     * @return a handle to cancel it
     */
    default Timer scheduleAt(Runnable task, long deadlineNanos) {
        return schedule(task, deadlineNanos - nanoTime());
    }

    /**
     * Stops the scheduler; pending tasks are dropped.
     */
    void shutdown();

    /** A scheduled task. */
    interface Timer {
        /** Cancels the task if it has not run yet. */
        void cancel();
    }
}
