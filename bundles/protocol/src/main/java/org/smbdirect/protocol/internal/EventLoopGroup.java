package org.smbdirect.protocol.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The engine's fixed pool of threads. Each {@link Actor} (a connection) is pinned to one loop,
 * chosen round-robin, so its processing rules always run on the same thread. Run queues are
 * intrusive (the actor is the queue node), so scheduling allocates nothing.
 */
final class EventLoopGroup {
    private static final System.Logger LOG = System.getLogger(EventLoopGroup.class.getName());

    private final Loop[] loops;
    private final AtomicInteger nextLoop = new AtomicInteger();

    EventLoopGroup(String name, int threads) {
        loops = new Loop[threads];
        for (int i = 0; i < threads; i++) {
            loops[i] = new Loop(name + "-" + i);
        }
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

    java.util.List<Thread> threads() {
        java.util.List<Thread> out = new java.util.ArrayList<>();
        for (Loop l : loops) {
            out.add(l.thread);
        }
        return out;
    }

    /** Stops every loop thread and waits for them to end. */
    void shutdown() {
        for (Loop l : loops) {
            l.stop();
        }
        for (Loop l : loops) {
            try {
                l.thread.join(5000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** The threads of engine loops, recognisable so that blocking calls on them can be refused. */
    static final class EngineThread extends Thread {
        EngineThread(Runnable r, String name) {
            super(r, name);
        }
    }

    /** One engine thread with its multi-producer, single-consumer run queue (Vyukov's). */
    static final class Loop implements Runnable {
        private static final VarHandle NEXT;

        static {
            try {
                NEXT = MethodHandles.lookup().findVarHandle(Actor.class, "next", Actor.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private final Actor stub = new Actor(this) {
            @Override
            protected void process() {
            }
        };
        private final AtomicReference<Actor> tail = new AtomicReference<>(stub);
        private Actor head = stub;
        private final EngineThread thread;
        private volatile boolean sleeping;
        private volatile boolean running = true;

        Loop(String name) {
            thread = new EngineThread(this, name);
            thread.setDaemon(true);
            thread.start();
        }

        Thread thread() {
            return thread;
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
            int idle = 0;
            while (running) {
                Actor a = poll();
                if (a != null) {
                    idle = 0;
                    try {
                        a.run();
                    } catch (Throwable t) {
                        LOG.log(System.Logger.Level.ERROR, "engine task failed", t);
                    }
                    continue;
                }
                // Spin briefly before parking: a message exchange often continues within microseconds.
                if (++idle < 100) {
                    Thread.onSpinWait();
                    continue;
                }
                sleeping = true;
                if (isEmpty() && running) {
                    LockSupport.park(this);
                }
                sleeping = false;
                idle = 0;
            }
        }

        void stop() {
            running = false;
            LockSupport.unpark(thread);
        }
    }
}
