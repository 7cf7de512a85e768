package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

/**
 * The provider's connection thread: takes rdma_cm events and the device's asynchronous events,
 * runs timers (unanswered connection requests, teardown deadlines) and runs the tasks other
 * threads hand it, so that every connection event reaches its listener on this one thread, in
 * order, never inside a call the consumer made.
 */
final class CmEventLoop implements Runnable {
    private static final class Timer implements Comparable<Timer> {
        final long deadline;
        final Runnable task;
        final long order;

        Timer(long deadline, Runnable task, long order) {
            this.deadline = deadline;
            this.task = task;
            this.order = order;
        }

        @Override
        public int compareTo(Timer o) {
            int c = Long.compare(deadline, o.deadline);
            return c != 0 ? c : Long.compare(order, o.order);
        }
    }

    private final VerbsProvider provider;
    private final long channel;
    private final int[] fds;
    private final int[] ready = new int[3];
    private final int wakeFd;
    private final ByteBuffer event = ByteBuffer.allocateDirect(VerbsNative.EV_SIZE).order(ByteOrder.nativeOrder());
    private final long[] asyncEvent = new long[2];
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private long timerOrder;
    private final Thread thread;
    private volatile boolean stopping;
    private volatile Runnable onExit;

    CmEventLoop(VerbsProvider provider, long channel, int channelFd, int asyncFd) throws NativeException {
        this.provider = provider;
        this.channel = channel;
        this.wakeFd = VerbsNative.eventFd();
        this.fds = new int[] {channelFd, asyncFd, wakeFd};
        // A FutureTask lets go of the loop when the thread ends: a Thread object can outlive its
        // thread (Felix keeps one that raced another to define a class in that class loader's
        // lock map) and must then keep no class of this bundle, no old revision, reachable.
        this.thread = new Thread(new FutureTask<>(this, null), "smbdirect-verbs-cm-" + provider.name());
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Runs a task on this thread, soon. */
    void execute(Runnable task) {
        tasks.add(task);
        VerbsNative.signalEventFd(wakeFd);
    }

    /** Runs a task on this thread and waits for it, at most the given time; runs it at once when called on this thread. */
    boolean executeAndWait(Runnable task, long timeoutMillis) {
        if (inLoop() || !thread.isAlive()) {
            task.run();
            return true;
        }
        CountDownLatch done = new CountDownLatch(1);
        execute(() -> {
            try {
                task.run();
            } finally {
                done.countDown();
            }
        });
        try {
            return done.await(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Runs a task on this thread after a delay. */
    void schedule(long delayMillis, Runnable task) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis);
        synchronized (timers) {
            timers.add(new Timer(deadline, task, timerOrder++));
        }
        VerbsNative.signalEventFd(wakeFd);
    }

    /** Stops the thread once the tasks queued so far have run. */
    void stop(long timeoutMillis) {
        stopping = true;
        VerbsNative.signalEventFd(wakeFd);
        if (!inLoop()) {
            try {
                thread.join(timeoutMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (!thread.isAlive() || inLoop()) {
            runTasks();
        }
    }

    /** Releases the wake-up descriptor; only after {@link #stop}. */
    void closeFds() {
        if (!thread.isAlive()) {
            VerbsNative.closeFd(wakeFd);
        }
    }

    boolean isAlive() {
        return thread.isAlive();
    }

    /** Runs a task on this thread just before it ends. */
    void onExit(Runnable task) {
        onExit = task;
    }

    @Override
    public void run() {
        while (!stopping) {
            try {
                int n = VerbsNative.poll(fds, fds.length, nextTimeout(), ready);
                if (n > 0 && ready[2] != 0) {
                    VerbsNative.drainEventFd(wakeFd);
                }
                if (n > 0 && ready[0] != 0) {
                    while (!stopping && VerbsNative.getCmEvent(channel, event)) {
                        dispatch(() -> provider.onCmEvent(event));
                    }
                }
                if (n > 0 && ready[1] != 0) {
                    while (!stopping && VerbsNative.getAsyncEvent(provider.contextPtr, asyncEvent)) {
                        dispatch(() -> provider.onAsyncEvent((int) asyncEvent[0], asyncEvent[1]));
                    }
                }
                runTasks();
                runTimers();
            } catch (NativeException e) {
                VerbsProvider.LOG.log(Level.ERROR, "connection event thread of " + provider.name() + ": "
                        + e.getMessage());
                sleepQuietly();
            } catch (RuntimeException | Error e) {
                VerbsProvider.LOG.log(Level.ERROR, "connection event thread of " + provider.name() + " caught", e);
            }
        }
        runTasks();
        Runnable last = onExit;
        if (last != null) {
            dispatch(last);
            VerbsNative.closeFd(wakeFd);
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = tasks.poll()) != null) {
            dispatch(task);
        }
    }

    private void runTimers() {
        long now = System.nanoTime();
        while (true) {
            Timer due;
            synchronized (timers) {
                Timer first = timers.peek();
                if (first == null || first.deadline - now > 0) {
                    return;
                }
                due = timers.poll();
            }
            dispatch(due.task);
        }
    }

    private int nextTimeout() {
        synchronized (timers) {
            Timer first = timers.peek();
            if (first == null) {
                return -1;
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(first.deadline - System.nanoTime()) + 1;
            return (int) Math.max(0, Math.min(ms, Integer.MAX_VALUE));
        }
    }

    private static void dispatch(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException | Error e) {
            VerbsProvider.LOG.log(Level.ERROR, "a connection event task threw", e);
        }
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
