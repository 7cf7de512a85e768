package org.smbdirect.rdma.sim.internal;

import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The fabric threads of one provider: a small fixed pool running {@link Actor}s. The ready queue is
 * intrusive (actors link themselves), so scheduling allocates nothing.
 *
 * <p>Work first: an actor kicked by a fabric thread while that thread runs an actor (a connection
 * completing a request kicks the completion queue that reports it; a notification handler posts
 * and kicks a connection) runs next on the same thread, after the current one, instead of waking
 * another thread: as a NIC's interrupt runs its completion handling on the processor that took
 * it. Such a run also serves actors of other providers (one fabric thread carries a message from
 * one provider's endpoint to another's completion queue); their scheduler counts it as running,
 * and one that has stopped drops it. After {@link #LOCAL_RUNS} such runs in a row the thread hands
 * what is left to the actors' schedulers, so that no chain of kicks keeps one thread to itself.
 */
final class Scheduler {
    /** Every fabric thread's name starts with this, so that tests can find leaked threads. */
    static final String THREAD_PREFIX = "smbdirect-sim-";
    /** Actors a fabric thread runs next, in a row, before it hands the rest to their schedulers. */
    static final int LOCAL_RUNS = 64;

    private final Worker[] workers;
    private final Worker[] idle;
    private int idleCount;
    private Actor head;
    private Actor tail;
    private int running;
    /** Actors in the ready queue. */
    private int queued;
    /**
     * This scheduler's own threads running an actor (they look at the ready queue next); {@link
     * #running} also counts other schedulers' threads running one of this scheduler's actors.
     */
    private int workersRunning;
    private int waiters;
    private volatile boolean stopped;
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
        submit(a, true);
    }

    /**
     * Queues an actor.
     *
     * @param a the actor
     * @param mayWake whether an idle thread may be woken for it; {@code false} from one of this
     *        scheduler's threads that takes it next itself
     */
    private void submit(Actor a, boolean mayWake) {
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
            queued++;
            // A running thread takes the next actor when it is done with its own; another is woken
            // only when more are waiting than the running threads will take (a wake-up costs the
            // caller a system call, and the woken thread little work). A thread calling the
            // consumer, which might keep it, does not count (beforeConsumerCall).
            if (mayWake && idleCount > 0 && queued > workersRunning) {
                wake = idle[--idleCount];
                wake.listedIdle = false;
            }
        }
        if (wake != null) {
            LockSupport.unpark(wake.thread);
        }
    }

    /**
     * Work first: when the calling thread is a fabric thread running an actor, {@code a} (already
     * marked scheduled) runs next on it.
     *
     * @param a the actor kicked
     * @return {@code false} when the caller is no fabric thread in a run: submit as usual
     */
    static boolean runNext(Actor a) {
        Worker w = CURRENT.get();
        if (w == null || !w.inRun) {
            return false;
        }
        a.nextLocal = null;
        if (w.localTail == null) {
            w.localHead = a;
        } else {
            w.localTail.nextLocal = a;
        }
        w.localTail = a;
        return true;
    }

    /**
     * Before another scheduler's worker runs one of this scheduler's actors: it counts as running.
     *
     * @return {@code false} when this scheduler has stopped (the actor is dropped instead)
     */
    private synchronized boolean enterForeign() {
        if (stopped) {
            return false;
        }
        running++;
        return true;
    }

    private synchronized void exitForeign() {
        running--;
        if (waiters > 0) {
            notifyAll();
        }
    }

    /**
     * Before a fabric thread calls the consumer (a notification handler, a connection event): the
     * consumer might keep it, so for as long as the call lasts the thread no longer counts as one
     * that takes queued actors next. What was left to run next on it goes to the queue, and what is
     * queued now, or while the call lasts, wakes an idle thread: a handler that keeps the thread
     * does not stop the fabric. What the consumer kicks during the call still runs next here (the
     * echo a handler posts). Pair with {@link #afterConsumerCall()}.
     */
    static void beforeConsumerCall() {
        Worker w = CURRENT.get();
        if (w != null && w.inRun) {
            w.inConsumerCall = true;
            w.handBackLocal();
            w.scheduler().consumerCallBegins();
        }
    }

    /** The consumer returned (see {@link #beforeConsumerCall()}). */
    static void afterConsumerCall() {
        Worker w = CURRENT.get();
        if (w != null && w.inConsumerCall) {
            w.inConsumerCall = false;
            w.scheduler().consumerCallEnds();
        }
    }

    private void consumerCallBegins() {
        Worker wake = null;
        synchronized (this) {
            workersRunning--;
            if (queued > workersRunning && idleCount > 0) {
                wake = idle[--idleCount];
                wake.listedIdle = false;
            }
        }
        if (wake != null) {
            LockSupport.unpark(wake.thread);
        }
    }

    private synchronized void consumerCallEnds() {
        workersRunning++;
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
            queued = 0;
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
        /** Whether the thread is running an actor (kicks it makes then run next, here). Own thread only. */
        boolean inRun;
        /** Whether the thread is in a call of the consumer's. Own thread only. */
        boolean inConsumerCall;
        /** Actors to run next on this thread, linked through {@link Actor#nextLocal}. Own thread only. */
        Actor localHead;
        Actor localTail;

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
                        queued--;
                        head = a.nextReady;
                        if (head == null) {
                            tail = null;
                        }
                        a.nextReady = null;
                        running++;
                        workersRunning++;
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
                    inRun = true;
                    a.runOnce();
                    runLocal();
                } finally {
                    inRun = false;
                    synchronized (Scheduler.this) {
                        running--;
                        workersRunning--;
                        if (waiters > 0) {
                            Scheduler.this.notifyAll();
                        }
                    }
                }
            }
        }

        Scheduler scheduler() {
            return Scheduler.this;
        }

        /** Queues what was left to run next on this thread, each actor with its own scheduler. */
        void handBackLocal() {
            while (localHead != null) {
                Actor b = localHead;
                localHead = b.nextLocal;
                b.nextLocal = null;
                b.scheduler.submit(b, b.scheduler != Scheduler.this);
            }
            localTail = null;
        }

        /** Runs the actors kicked meanwhile, in order; past {@link #LOCAL_RUNS}, hands them back. */
        private void runLocal() {
            int runs = 0;
            while (localHead != null) {
                Actor b = localHead;
                localHead = b.nextLocal;
                if (localHead == null) {
                    localTail = null;
                }
                b.nextLocal = null;
                if (++runs > LOCAL_RUNS) {
                    // Fairness: the rest waits behind what is queued. This thread takes its own
                    // scheduler's actors back from the queue itself; another's need its threads.
                    inRun = false; // what these kick now goes to the schedulers too
                    b.scheduler.submit(b, b.scheduler != Scheduler.this);
                    continue;
                }
                Scheduler home = b.scheduler;
                if (home == Scheduler.this) {
                    if (home.stopped) {
                        b.dropped();
                    } else {
                        b.runOnce();
                    }
                } else if (home.enterForeign()) {
                    try {
                        b.runOnce();
                    } finally {
                        home.exitForeign();
                    }
                } else {
                    b.dropped();
                }
            }
        }
    }
}
