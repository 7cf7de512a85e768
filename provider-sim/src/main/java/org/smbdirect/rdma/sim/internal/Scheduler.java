package org.smbdirect.rdma.sim.internal;

import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The fabric threads of one provider: a small fixed pool running {@link Actor}s. The ready queue is
 * intrusive (actors link themselves), so scheduling allocates nothing.
 */
final class Scheduler {
    /** Every fabric thread's name starts with this, so that tests can find leaked threads. */
    static final String THREAD_PREFIX = "smbdirect-sim-";

    private final Worker[] workers;
    private final Worker[] idle;
    private int idleCount;
    private Actor head;
    private Actor tail;
    private int running;
    private int waiters;
    private boolean stopped;
    /** Marks fabric threads (a thread-local, not a Thread subclass: see {@link Worker}). */
    private static final ThreadLocal<Worker> CURRENT = new ThreadLocal<>();

    Scheduler(String name, int threads) {
        workers = new Worker[threads];
        idle = new Worker[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker(THREAD_PREFIX + name + "-fabric-" + i);
        }
        for (Worker w : workers) {
            w.thread.start();
        }
    }

    void submit(Actor a) {
        Worker wake = null;
        synchronized (this) {
            if (stopped) {
                a.dropped();
                return;
            }
            a.nextReady = null;
            if (tail == null) {
                head = a;
            } else {
                tail.nextReady = a;
            }
            tail = a;
            if (idleCount > 0) {
                wake = idle[--idleCount];
                wake.listedIdle = false;
            }
        }
        if (wake != null) {
            LockSupport.unpark(wake.thread);
        }
    }

    /** Tells whether the calling thread is a fabric thread of any provider. */
    static boolean onAnyFabricThread() {
        return CURRENT.get() != null;
    }

    /** Tells whether the calling thread is one of this scheduler's fabric threads. */
    boolean isFabricThread() {
        Thread t = Thread.currentThread();
        for (Worker w : workers) {
            if (w.thread == t) {
                return true;
            }
        }
        return false;
    }

    /**
     * Waits until no actor is queued or running (other than the calling fabric thread's own).
     *
     * @return whether the scheduler became quiet in time
     */
    boolean awaitQuiet(long timeoutNanos) {
        long deadline = System.nanoTime() + timeoutNanos;
        int self = isFabricThread() ? 1 : 0;
        synchronized (this) {
            waiters++;
            try {
                while (head != null || running > self) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    TimeUnit.NANOSECONDS.timedWait(this, left);
                }
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                waiters--;
            }
        }
    }

    /** Stops the threads; actors still queued are dropped. Joins unless called from a fabric thread. */
    void stop(long timeoutNanos) {
        synchronized (this) {
            if (stopped) {
                return;
            }
            stopped = true;
            for (Actor a = head; a != null; ) {
                Actor n = a.nextReady;
                a.nextReady = null;
                a.dropped();
                a = n;
            }
            head = tail = null;
        }
        for (Worker w : workers) {
            LockSupport.unpark(w.thread);
        }
        if (isFabricThread()) {
            return;
        }
        long deadline = System.nanoTime() + timeoutNanos;
        for (Worker w : workers) {
            try {
                long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
                w.thread.join(left);
                if (w.thread.isAlive()) {
                    w.thread.interrupt();
                    w.thread.join(1000);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * One fabric thread's work. Its plain {@link Thread} runs a {@link FutureTask}, which lets go
     * of the worker when the thread ends: a Thread object can outlive its thread (Felix's class
     * loader keeps the thread that raced another to define a class in its map of class locks, for
     * good) and must then keep no class of this bundle, and so no old revision, reachable.
     */
    private final class Worker implements Runnable {
        final Thread thread;
        /** Guarded by the scheduler. */
        boolean listedIdle;

        Worker(String name) {
            thread = new Thread(new FutureTask<>(this, null), name);
            thread.setDaemon(true);
        }

        @Override
        public void run() {
            CURRENT.set(this); // dropped with the thread's thread-locals when it ends
            for (;;) {
                Actor a;
                synchronized (Scheduler.this) {
                    a = head;
                    if (a != null) {
                        head = a.nextReady;
                        if (head == null) {
                            tail = null;
                        }
                        a.nextReady = null;
                        running++;
                    } else {
                        if (stopped) {
                            return;
                        }
                        if (!listedIdle) {
                            idle[idleCount++] = this;
                            listedIdle = true;
                        }
                    }
                }
                if (a == null) {
                    LockSupport.park(Scheduler.this);
                    continue;
                }
                try {
                    a.runOnce();
                } finally {
                    synchronized (Scheduler.this) {
                        running--;
                        if (waiters > 0) {
                            Scheduler.this.notifyAll();
                        }
                    }
                }
            }
        }
    }
}
