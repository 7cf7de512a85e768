package org.smbdirect.protocol.internal;

import java.time.Duration;
import java.util.PriorityQueue;

/**
 * A {@link Scheduler} on a virtual clock: time moves only when a test calls {@link #advance}, so
 * protocol timeouts are tested without sleeping. Due tasks run on the advancing thread, in time
 * order.
 */
final class VirtualScheduler implements Scheduler {
    private final PriorityQueue<Task> queue = new PriorityQueue<>();
    private long now = 1_000_000_000L;
    private long sequence;

    @Override
    public synchronized long nanoTime() {
        return now;
    }

    @Override
    public synchronized Timer schedule(Runnable task, long delayNanos) {
        return scheduleAt(task, now + Math.max(0, delayNanos));
    }

    @Override
    public synchronized Timer scheduleAt(Runnable task, long deadlineNanos) {
        Task t = new Task(Math.max(now, deadlineNanos), sequence++, task);
        queue.add(t);
        return () -> {
            synchronized (VirtualScheduler.this) {
                queue.remove(t);
            }
        };
    }

    /**
     * Moves the clock forward, running every task that falls due on the way.
     *
     * @param d how far
     */
    void advance(Duration d) {
        long target;
        synchronized (this) {
            target = now + d.toNanos();
        }
        for (;;) {
            Task t;
            synchronized (this) {
                t = queue.peek();
                if (t == null || t.at > target) {
                    now = target;
                    return;
                }
                queue.poll();
                now = t.at;
            }
            t.task.run();
        }
    }

    /** The number of tasks waiting. */
    synchronized int pending() {
        return queue.size();
    }

    @Override
    public void shutdown() {
        synchronized (this) {
            queue.clear();
        }
    }

    private static final class Task implements Comparable<Task> {
        final long at;
        final long seq;
        final Runnable task;

        Task(long at, long seq, Runnable task) {
            this.at = at;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public int compareTo(Task o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }
}
