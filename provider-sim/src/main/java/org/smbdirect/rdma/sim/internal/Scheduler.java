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
 *
 * <p>A thread that calls the consumer (a notification handler) sets aside what it was left to run
 * next. The call normally returns within microseconds and the thread goes on with it, with no
 * wake-up; a call that holds the thread for {@link #HOLD_NANOS} or more has it taken over by the
 * other threads, so that a handler that keeps its thread does not stop the fabric (a NIC goes on
 * while the host handles a completion).
 */
final class Scheduler {
    /** Every fabric thread's name starts with this, so that tests can find leaked threads. */
    static final String THREAD_PREFIX = "smbdirect-sim-";
    /** Actors a fabric thread runs next, in a row, before it hands the rest to their schedulers. */
    static final int LOCAL_RUNS = 64;
    /** How long a consumer's call may hold the work set aside on its thread before others take it. */
    static final long HOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(2);

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
    /** Numbers the consumer calls that set work aside; guarded by this. */
    private long calls;
    /** Where the watch over work set aside runs; the provider's timer. */
    private final Timer timer;
    private final boolean ownTimer;
    private final Timer.Task watch = new Timer.Task() {
        @Override
        void fire() {
            takeOverHeldWork();
        }
    };
    /** Marks fabric threads (a thread-local, not a Thread subclass: see {@link Worker}). */
    private static final ThreadLocal<Worker> CURRENT = new ThreadLocal<>();

    /**
     * A scheduler with a timer of its own (tests).
     *
     * @param name the name in its threads' names
     * @param threads how many fabric threads
     */
    Scheduler(String name, int threads) {
        this(name, threads, new Timer(THREAD_PREFIX + name + "-timer"), true);
    }

    /**
     * @param name the name in its threads' names
     * @param threads how many fabric threads
     * @param timer the provider's timer, which the provider stops
     */
    Scheduler(String name, int threads, Timer timer) {
        this(name, threads, timer, false);
    }

    private Scheduler(String name, int threads, Timer timer, boolean ownTimer) {
        this.timer = timer;
        this.ownTimer = ownTimer;
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
        // Another provider's actor counts as running there from now until it has run, so that its
        // provider, closing, waits for it (awaitQuiet) rather than shut its queues under it.
        if (a.scheduler != w.scheduler() && !a.scheduler.enterForeign()) {
            a.dropped();
            return true;
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
     * Before another scheduler's worker takes one of this scheduler's actors to run next: it counts
     * as running until {@link #exitForeign} (after it ran, or went to this scheduler's queue).
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
     * that takes queued actors next; what is queued now, or while the call lasts, wakes an idle
     * thread. What it was left to run next is set aside, for it to run after the call, or for the
     * other threads once the call has held it for {@link #HOLD_NANOS}. What the consumer kicks
     * during the call runs next here (the echo a handler posts). Pair with {@link
     * #afterConsumerCall()}. A call made inside another (a handler whose provider call delivers an
     * event at once) is part of the outer one.
     */
    static void beforeConsumerCall() {
        Worker w = CURRENT.get();
        if (w != null && (w.consumerCalls > 0 || w.inRun) && w.consumerCalls++ == 0) {
            w.scheduler().consumerCallBegins(w);
        }
    }

    /** The consumer returned (see {@link #beforeConsumerCall()}). */
    static void afterConsumerCall() {
        Worker w = CURRENT.get();
        if (w != null && w.consumerCalls > 0 && --w.consumerCalls == 0) {
            w.scheduler().consumerCallEnds(w);
        }
    }

    private void consumerCallBegins(Worker w) {
        Worker wake = null;
        boolean setAside = false;
        synchronized (this) {
            workersRunning--;
            if (w.localHead != null) {
                w.heldHead = w.localHead;
                w.heldTail = w.localTail;
                w.heldCall = ++calls;
                w.localHead = null;
                w.localTail = null;
                setAside = true;
            }
            if (queued > workersRunning && idleCount > 0) {
                wake = idle[--idleCount];
                wake.listedIdle = false;
            }
        }
        if (wake != null) {
            LockSupport.unpark(wake.thread);
        }
        if (setAside) {
            timer.schedule(watch, System.nanoTime() + HOLD_NANOS); // no-op while the watch is due
        }
    }

    /** The call returned: what was set aside and not taken over runs next, before what it kicked. */
    private synchronized void consumerCallEnds(Worker w) {
        workersRunning++;
        if (w.heldHead != null) {
            w.heldTail.nextLocal = w.localHead;
            if (w.localHead == null) {
                w.localTail = w.heldTail;
            }
            w.localHead = w.heldHead;
            w.heldHead = null;
            w.heldTail = null;
        }
    }

    /**
     * The watch, on the timer's thread: work set aside by a consumer call that was already in
     * progress at the previous look (so it has held its thread for at least {@link #HOLD_NANOS})
     * goes to the actors' schedulers, to run on other threads. Looks again while work is set aside.
     */
    private void takeOverHeldWork() {
        Actor taken = null;
        boolean again = false;
        synchronized (this) {
            if (stopped) {
                return;
            }
            for (Worker w : workers) {
                if (w.heldHead == null) {
                    continue;
                }
                if (w.heldCall == w.seenCall) {
                    w.heldTail.nextLocal = taken;
                    taken = w.heldHead;
                    w.heldHead = null;
                    w.heldTail = null;
                } else {
                    w.seenCall = w.heldCall;
                    again = true;
                }
            }
        }
        while (taken != null) {
            Actor b = taken;
            taken = b.nextLocal;
            b.nextLocal = null;
            b.scheduler.submit(b);
            if (b.scheduler != this) {
                b.scheduler.exitForeign(); // counted since it was left to run next here
            }
        }
        if (again) {
            timer.schedule(watch, System.nanoTime() + HOLD_NANOS);
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
            queued = 0;
        }
        for (Worker w : workers) {
            LockSupport.unpark(w.thread);
        }
        if (ownTimer) {
            timer.stop();
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
        /** Depth of the consumer's calls the thread is in (a call within a call counts once). Own thread only. */
        int consumerCalls;
        /** Actors to run next on this thread, linked through {@link Actor#nextLocal}. Own thread only. */
        Actor localHead;
        Actor localTail;
        /** What was to run next when the thread called the consumer; guarded by the scheduler. */
        Actor heldHead;
        Actor heldTail;
        /** The number of that call, and of the call the watch last saw; guarded by the scheduler. */
        long heldCall;
        long seenCall;

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
                Scheduler home = b.scheduler;
                if (++runs > LOCAL_RUNS) {
                    // Fairness: the rest waits behind what is queued. This thread takes its own
                    // scheduler's actors back from the queue itself; another's need its threads.
                    inRun = false; // what these kick now goes to the schedulers too
                    home.submit(b, home != Scheduler.this);
                    if (home != Scheduler.this) {
                        home.exitForeign();
                    }
                    continue;
                }
                try {
                    if (home.stopped) {
                        b.dropped();
                    } else {
                        b.runOnce();
                    }
                } finally {
                    if (home != Scheduler.this) {
                        home.exitForeign();
                    }
                }
            }
        }
    }
}
