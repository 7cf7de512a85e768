package org.smbdirect.rdma.sim.internal;

import java.util.PriorityQueue;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

/**
 * One provider's timer thread, for what happens later: the latency model, delayed completions
 * and unanswered connection requests. Started on first use, stopped with the provider.
 */
final class Timer {
    /** Something that can be scheduled; an object is in the timer at most once. */
    abstract static class Task {
        /** Due time in {@link System#nanoTime()} units, 0 when not scheduled; guarded by the timer. */
        long due;

        /** Runs on the timer thread; must be quick and must not block. */
        abstract void fire();
    }

    private final String threadName;
    private final PriorityQueue<Task> queue = new PriorityQueue<>(16, (x, y) -> Long.compare(x.due, y.due));
    private Thread thread;
    private boolean stopped;

    Timer(String threadName) {
        this.threadName = threadName;
    }

    /** Schedules the task at {@code dueNanos}, or earlier if it is already scheduled earlier. */
    void schedule(Task task, long dueNanos) {
        if (dueNanos == 0) {
            dueNanos = 1;
        }
        synchronized (this) {
            if (stopped) {
                return;
            }
            if (task.due != 0) {
                if (task.due - dueNanos <= 0) {
                    return;
                }
                queue.remove(task);
            }
            task.due = dueNanos;
            queue.add(task);
            if (thread == null) {
                // A FutureTask lets go of the timer when the thread ends (see Scheduler.Worker).
                thread = new Thread(new FutureTask<>(this::run, null), threadName);
                thread.setDaemon(true);
                thread.start();
            }
            if (queue.peek() == task) {
                notifyAll();
            }
        }
    }

    /** Removes a scheduled task. */
    void cancel(Task task) {
        synchronized (this) {
            if (task.due != 0) {
                queue.remove(task);
                task.due = 0;
            }
        }
    }

    void stop() {
        Thread t;
        synchronized (this) {
            stopped = true;
            for (Task task : queue) {
                task.due = 0;
            }
            queue.clear();
            notifyAll();
            t = thread;
        }
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void run() {
        for (;;) {
            Task task = awaitDue();
            if (task == null) {
                return;
            }
            try {
                task.fire();
            } catch (Throwable t) {
                SimLog.error("timer task failed", t);
            }
            // A waiting thread's frame must not keep the last task reachable: a task is a
            // connection, and a closed connection's memory is to be released at once.
            task = null;
        }
    }

    /** Waits for the first task to fall due and takes it; {@code null} once stopped. */
    private synchronized Task awaitDue() {
        for (;;) {
            if (stopped) {
                return null;
            }
            Task first = queue.peek();
            long now = System.nanoTime();
            if (first != null && first.due - now <= 0) {
                queue.poll();
                first.due = 0;
                return first;
            }
            long wait = first == null ? 0 : first.due - now;
            first = null; // nor a task cancelled while the thread waits for it
            try {
                if (wait == 0) {
                    wait();
                } else {
                    TimeUnit.NANOSECONDS.timedWait(this, wait);
                }
            } catch (InterruptedException e) {
                return null;
            }
        }
    }
}
