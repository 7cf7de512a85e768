package org.smbdirect.protocol.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.FutureTask;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The engine's loops. Each {@link Actor} (a connection) is pinned to one loop, chosen round-robin,
 * and runs there one step at a time. Run queues are intrusive (the actor is the queue node), so
 * scheduling allocates nothing.
 *
 * <p>A loop is not tied to one thread for good: the upper layer's handlers run on the loop's
 * thread, and a handler that does not return must not stall the other connections of its loop.
 * A monitor looks at the loops every {@link #CHECK_NANOS}; a loop whose thread has waited inside
 * one actor's step for {@link #STALL_NANOS} (or computed there for {@link #BUSY_NANOS}) is handed
 * to a new thread, and the stuck one ends once its step returns. The stuck connection keeps its
 * own thread (its state is still touched by one thread at a time); it grants no credits meanwhile,
 * so its peer slows down, and every other connection carries on. A monitor that was itself held
 * up (a pause of the whole process) judges nothing that round.
 */
final class EventLoopGroup {
    private static final System.Logger LOG = System.getLogger(EventLoopGroup.class.getName());
    /** How often the monitor looks while a step runs somewhere. */
    static final long CHECK_NANOS = 5_000_000L;
    /**
     * How long the monitor waits between looks while it saw no step running (an idle transport
     * wakes it 20 times a second, not 200): a step that then starts to hold its thread is seen at
     * most this much later.
     */
    static final long IDLE_CHECK_NANOS = 50_000_000L;
    /**
     * How long one step may hold a loop's thread, parked or sleeping (waiting for something of the
     * upper layer's), before the loop moves to another thread. A thread that is runnable
     * (computing, or preempted on a loaded machine) or blocked on a monitor (normally brief) is
     * given {@link #BUSY_NANOS}.
     */
    static final long STALL_NANOS = 100_000_000L;
    /** How long one step may compute on a loop's thread before the loop moves to another thread. */
    static final long BUSY_NANOS = 1_000_000_000L;
    /** A loop's run-start mark when its thread was taken from it. */
    private static final long HANDED_OVER = Long.MIN_VALUE;

    private final String name;
    private final Loop[] loops;
    private final AtomicInteger nextLoop = new AtomicInteger();
    private final AtomicInteger threadNumbers = new AtomicInteger();
    private final Thread monitor;
    private volatile boolean running = true;
    /** The monitor's looks so far (tests). */
    private volatile long looks;

    /**
     * @param name the threads' name prefix
     * @param threads how many loops
     * @param spinNanos how long an idle loop keeps polling before it sleeps (0: it sleeps at once)
     */
    EventLoopGroup(String name, int threads, long spinNanos) {
        this.name = name;
        loops = new Loop[threads];
        for (int i = 0; i < threads; i++) {
            loops[i] = new Loop(this, spinNanos);
        }
        for (Loop l : loops) {
            l.start(newThread(l));
        }
        monitor = daemon(this::monitor, name + "-monitor");
        monitor.start();
    }

    private Thread newThread(Loop l) {
        return daemon(l, name + "-" + threadNumbers.getAndIncrement());
    }

    /**
     * A plain {@link Thread} running a {@link FutureTask}, which lets go of {@code work} when it
     * ends. A Thread object can outlive its thread (Felix's class loader keeps the thread that raced
     * another to define a class in its map of class locks, for good), and such an object must keep
     * neither a class nor an object of this bundle reachable: an old revision would never be
     * collected. That is also why engine threads are marked by a thread-local, not by a subclass.
     */
    private static Thread daemon(Runnable work, String threadName) {
        Thread t = new Thread(new FutureTask<>(work, null), threadName);
        t.setDaemon(true);
        return t;
    }

    /**
     * The loop for a new actor.
     *
     * @return a loop, round-robin
     */
    Loop next() {
        return loops[Math.floorMod(nextLoop.getAndIncrement(), loops.length)];
    }

    int size() {
        return loops.length;
    }

    /** The loops' current threads. */
    List<Thread> threads() {
        List<Thread> out = new ArrayList<>();
        for (Loop l : loops) {
            out.add(l.thread);
        }
        return out;
    }

    /** Loops handed to a new thread so far because a step held theirs too long. */
    long handOvers() {
        long n = 0;
        for (Loop l : loops) {
            n += l.handOvers;
        }
        return n;
    }

    /** Stops every loop and the monitor and waits for their threads to end. */
    void shutdown() {
        running = false;
        LockSupport.unpark(monitor);
        for (Loop l : loops) {
            l.stop();
        }
        try {
            monitor.join(5000);
            for (Loop l : loops) {
                l.thread.join(5000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void monitor() {
        long last = System.nanoTime();
        long period = CHECK_NANOS;
        while (running) {
            LockSupport.parkNanos(this, period);
            long now = System.nanoTime();
            boolean late = now - last > 4 * period; // the whole process was paused (a GC, say)
            last = now;
            boolean stepping = late;
            for (Loop l : loops) {
                if (late) {
                    l.suspectSince = 0;
                } else if (l.stalled(now)) {
                    handOver(l);
                }
                stepping |= l.inStep();
            }
            if (late) {
                InlineRuns.forgetSuspicions();
            } else {
                stepping |= InlineRuns.check(this, now, STALL_NANOS, BUSY_NANOS);
            }
            period = stepping ? CHECK_NANOS : IDLE_CHECK_NANOS;
            looks++;
        }
    }

    /** The monitor's looks so far, for tests of its pace. */
    long monitorLooks() {
        return looks;
    }

    private void handOver(Loop l) {
        Thread stuck = l.thread;
        l.handOvers++;
        LOG.log(System.Logger.Level.WARNING, () -> stuck.getName() + " has been held by one connection's step for "
                + "more than " + STALL_NANOS / 1_000_000 + " ms (an upper-layer handler that blocks, or long work "
                + "such as a large copy on a slow processor); the other connections of its loop move to a new thread");
        l.start(newThread(l));
    }

    /** Marks the threads of engine loops, so that blocking calls on them can be refused. */
    private static final ThreadLocal<EngineThread> ENGINE_THREAD = new ThreadLocal<>();

    /** Whether the calling thread is an engine loop's and in the middle of an actor's step. */
    static boolean inEngineStep() {
        EngineThread t = ENGINE_THREAD.get();
        return t != null && t.busy;
    }

    /** An engine thread's own state. */
    private static final class EngineThread {
        /** Set while the thread runs an actor's step. Written and read by this thread only. */
        boolean busy;
    }

    /** One loop: a multi-producer, single-consumer run queue (Vyukov's) and the thread that runs it. */
    static final class Loop implements Runnable {
        private static final VarHandle NEXT;

        static {
            try {
                NEXT = MethodHandles.lookup().findVarHandle(Actor.class, "next", Actor.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final EventLoopGroup group;
        private final long spinNanos;
        private final Actor stub = new Actor(this) {
            @Override
            protected void process() {
            }
        };
        private final AtomicReference<Actor> tail = new AtomicReference<>(stub);
        private Actor head = stub;
        /** The thread that runs the loop now; replaced when a step holds it too long. */
        private volatile Thread thread;
        /** When the current step started (nanoTime), 0 between steps, or {@link #HANDED_OVER}. */
        private final AtomicLong runStart = new AtomicLong();
        private volatile boolean sleeping;
        private volatile boolean running = true;
        private volatile long handOvers;
        /** The monitor's: when it first saw the current step waiting, 0 when it has not. */
        private long suspectSince;
        private long suspectStart;

        Loop(EventLoopGroup group, long spinNanos) {
            this.group = group;
            this.spinNanos = spinNanos;
        }

        EventLoopGroup group() {
            return group;
        }

        void start(Thread t) {
            runStart.set(0);
            thread = t;
            t.start();
        }

        void submit(Actor a) {
            NEXT.setRelease(a, (Actor) null);
            Actor prev = tail.getAndSet(a);
            NEXT.setRelease(prev, a);
            if (sleeping) {
                LockSupport.unpark(thread);
            }
        }

        private Actor poll() {
            Actor h = head;
            Actor n = (Actor) NEXT.getAcquire(h);
            if (h == stub) {
                if (n == null) {
                    return null;
                }
                head = n;
                unlink(stub);
                h = n;
                n = (Actor) NEXT.getAcquire(h);
            }
            if (n != null) {
                head = n;
                return unlink(h);
            }
            if (h != tail.get()) {
                return null; // a producer is between getAndSet and linking; try again shortly
            }
            submit(stub);
            n = (Actor) NEXT.getAcquire(h);
            if (n != null) {
                head = n;
                return unlink(h);
            }
            return null;
        }

        /**
         * Clears the link of a node the consumer has moved past (no producer writes it any more),
         * so that a consumed actor does not keep the next one reachable: an ended connection must
         * not stay referenced from the stub or from a live connection.
         */
        private static Actor unlink(Actor consumed) {
            NEXT.setRelease(consumed, (Actor) null);
            return consumed;
        }

        private boolean isEmpty() {
            return head == tail.get() && NEXT.getAcquire(head) == null;
        }

        @Override
        public void run() {
            EngineThread self = new EngineThread();
            ENGINE_THREAD.set(self); // gone with the thread: a thread-local map is dropped when it ends
            long idleSince = 0;
            while (running) {
                Actor a = poll();
                if (a != null) {
                    if (!step(self, a)) {
                        return; // the loop went to another thread while this one was held
                    }
                    a = null; // a parked frame keeps no connection reachable
                    idleSince = 0;
                    continue;
                }
                // Busy polling, when configured: a message exchange often continues within
                // microseconds, and a wake-up costs more than that, but spinning takes a core from
                // the threads that do the work (measured: without it, 1 KiB one-way messages run
                // about 15% faster and a ping-pong 10% faster on 2 cores).
                if (spinNanos > 0) {
                    long now = System.nanoTime();
                    if (idleSince == 0) {
                        idleSince = now;
                    }
                    if (now - idleSince < spinNanos) {
                        Thread.onSpinWait();
                        continue;
                    }
                }
                sleeping = true;
                if (isEmpty() && running) {
                    LockSupport.park(this);
                }
                sleeping = false;
                idleSince = 0;
            }
        }

        /** Whether a step holds (or held, when it was handed over) this loop's thread now. */
        boolean inStep() {
            return runStart.get() != 0;
        }

        /**
         * Runs one actor's step, marked for the monitor.
         *
         * @return {@code false} when the monitor handed the loop to another thread meanwhile
         */
        private boolean step(EngineThread self, Actor a) {
            long start = System.nanoTime();
            if (start == 0 || start == HANDED_OVER) {
                start = 1;
            }
            runStart.set(start);
            self.busy = true;
            try {
                a.run();
            } catch (Throwable t) {
                LOG.log(System.Logger.Level.ERROR, "engine task failed", t);
            } finally {
                self.busy = false;
            }
            return runStart.compareAndSet(start, 0);
        }

        /**
         * The monitor's question: has one step held this loop's thread too long, waiting for
         * {@link #STALL_NANOS} (seen waiting at every look) or otherwise for {@link #BUSY_NANOS}?
         * If so, the loop is taken from the thread, which ends when the step returns.
         */
        boolean stalled(long now) {
            long start = runStart.get();
            if (start == 0 || start == HANDED_OVER) {
                suspectSince = 0;
                return false;
            }
            Thread.State st = thread.getState();
            boolean waiting = st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING;
            if (!waiting || start != suspectStart) {
                suspectSince = waiting ? now : 0;
                suspectStart = start;
            }
            boolean held = suspectSince != 0 && now - suspectSince >= STALL_NANOS || now - start >= BUSY_NANOS;
            if (!held || !runStart.compareAndSet(start, HANDED_OVER)) {
                return false;
            }
            suspectSince = 0;
            return true;
        }

        void stop() {
            running = false;
            LockSupport.unpark(thread);
        }
    }
}
