package org.smbdirect.protocol.internal;

import java.util.concurrent.FutureTask;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/** The real-time {@link Scheduler}: one daemon thread. */
public final class SystemScheduler implements Scheduler {
    private final ScheduledThreadPoolExecutor executor;

    /**
     * Starts the scheduler thread.
     *
     * @param name the thread's name
     */
    public SystemScheduler(String name) {
        executor = new ScheduledThreadPoolExecutor(1, r -> {
            // A FutureTask lets go of the pool's worker, and so of this factory, when the thread
            // ends (see EventLoopGroup.daemon).
            Thread t = new Thread(new FutureTask<>(r, null), name);
            t.setDaemon(true);
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
        executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public Timer schedule(Runnable task, long delayNanos) {
        ScheduledFuture<?> f = executor.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
        return () -> f.cancel(false);
    }

    @Override
    public void shutdown() {
        executor.shutdownNow();
        try {
            executor.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
