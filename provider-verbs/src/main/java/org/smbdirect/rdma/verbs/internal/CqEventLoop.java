package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

/**
 * The provider's completion thread: waits on the completion channels of all the provider's
 * completion queues, moves completions into their rings when the device signals, and calls the
 * notification handlers, one at a time, never inside a call the consumer made.
 */
final class CqEventLoop implements Runnable {
    /** How often queues are polled without a signal, for failures a device does not signal. */
    private static final long SWEEP_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** While spinning, how often the channels are looked at too (a solicited-only arm needs their signal). */
    private static final long SPIN_CHANNEL_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

    private final VerbsProvider provider;
    private final int wakeFd;
    private final Thread thread;
    private final ConcurrentLinkedQueue<VerbsCompletionQueue> notifications = new ConcurrentLinkedQueue<>();
    private final Object membership = new Object();
    private volatile VerbsCompletionQueue[] queues = new VerbsCompletionQueue[0];
    private long generation;
    private long completedGeneration;
    private volatile boolean stopping;
    /** Busy polling before each wait; 0 waits at once. */
    private final long spinNanos;
    /**
     * With busy polling: {@code false} from just before the queues are asked for the device's
     * signal until the wait returns. While it is {@code true}, an ANY arm asks the device nothing:
     * the thread asks for it before it waits ({@link VerbsCompletionQueue#prepareToWait}).
     */
    private volatile boolean awake = true;

    CqEventLoop(VerbsProvider provider) throws NativeException {
        this.provider = provider;
        this.spinNanos = TimeUnit.MICROSECONDS.toNanos(provider.settings.completionSpinMicroseconds);
        this.wakeFd = VerbsNative.eventFd();
        // A FutureTask lets go of the loop when the thread ends: a Thread object can outlive its
        // thread (Felix keeps one that raced another to define a class in that class loader's
        // lock map) and must then keep no class of this bundle, no old revision, reachable.
        this.thread = new Thread(new FutureTask<>(this, null), "smbdirect-verbs-cq-" + provider.name());
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Whether the thread busy-polls before it waits. */
    boolean spins() {
        return spinNanos > 0;
    }

    /** Whether the thread will ask the queues' devices for their signals before it waits. */
    boolean asksBeforeWaiting() {
        return spinNanos > 0 && awake;
    }

    void add(VerbsCompletionQueue cq) {
        synchronized (membership) {
            List<VerbsCompletionQueue> list = new ArrayList<>(List.of(queues));
            list.add(cq);
            queues = list.toArray(new VerbsCompletionQueue[0]);
            generation++;
        }
        VerbsNative.signalEventFd(wakeFd);
    }

    /** Stops watching a queue; when this returns, the thread no longer waits on its channel. */
    void remove(VerbsCompletionQueue cq) {
        long wanted;
        synchronized (membership) {
            List<VerbsCompletionQueue> list = new ArrayList<>(List.of(queues));
            list.remove(cq);
            queues = list.toArray(new VerbsCompletionQueue[0]);
            wanted = ++generation;
        }
        notifications.remove(cq);
        if (inLoop() || !thread.isAlive()) {
            return;
        }
        VerbsNative.signalEventFd(wakeFd);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        synchronized (membership) {
            while (completedGeneration < wanted && thread.isAlive() && deadline - System.nanoTime() > 0) {
                try {
                    membership.wait(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** Schedules a call of the queue's handler on this thread. */
    void notify(VerbsCompletionQueue cq) {
        notifications.add(cq);
        if (!inLoop()) {
            VerbsNative.signalEventFd(wakeFd);
        }
    }

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
    }

    void closeFds() {
        if (!thread.isAlive()) {
            VerbsNative.closeFd(wakeFd);
        }
    }

    boolean isAlive() {
        return thread.isAlive();
    }

    @Override
    public void run() {
        int[] fds = new int[1];
        int[] ready = new int[1];
        long lastSweep = System.nanoTime();
        // an idle provider does not spin: only a wait that something ended is followed by a spin
        boolean busy = true;
        while (true) {
            VerbsCompletionQueue[] snapshot;
            long seen;
            synchronized (membership) {
                snapshot = queues;
                seen = generation;
                completedGeneration = seen;
                membership.notifyAll();
            }
            if (stopping) {
                deliverNotifications();
                return;
            }
            if (fds.length != snapshot.length + 1) {
                fds = new int[snapshot.length + 1];
                ready = new int[snapshot.length + 1];
            }
            fds[0] = wakeFd;
            for (int i = 0; i < snapshot.length; i++) {
                fds[i + 1] = snapshot[i].channelFd;
            }
            try {
                if (spinNanos > 0 && notifications.isEmpty()) {
                    if (busy && spin(snapshot, seen, fds, ready)) {
                        continue;
                    }
                    awake = false;
                    for (VerbsCompletionQueue cq : snapshot) {
                        cq.prepareToWait();
                    }
                }
                int timeout = notifications.isEmpty() ? (int) TimeUnit.NANOSECONDS.toMillis(SWEEP_NANOS) : 0;
                int n;
                try {
                    n = VerbsNative.poll(fds, fds.length, timeout, ready);
                } finally {
                    awake = true;
                }
                busy = n > 0 || timeout == 0;
                if (n > 0 && ready[0] != 0) {
                    VerbsNative.drainEventFd(wakeFd);
                }
                synchronized (membership) {
                    if (generation != seen) {
                        continue; // a queue went away while waiting: do not touch the old set
                    }
                }
                for (int i = 0; n > 0 && i < snapshot.length; i++) {
                    if (ready[i + 1] != 0) {
                        snapshot[i].onChannelReadable();
                    }
                }
                long now = System.nanoTime();
                if (now - lastSweep >= SWEEP_NANOS) {
                    lastSweep = now;
                    for (VerbsCompletionQueue cq : snapshot) {
                        cq.reap(); // failures a device did not signal
                    }
                }
                deliverNotifications();
            } catch (NativeException e) {
                VerbsProvider.LOG.log(Level.ERROR, "completion thread of " + provider.name() + ": " + e.getMessage());
            } catch (RuntimeException | Error e) {
                VerbsProvider.LOG.log(Level.ERROR, "completion thread of " + provider.name() + " caught", e);
            }
        }
    }

    /**
     * Busy polling: takes new completions from every queue (which satisfies ANY and ERRORS arms
     * without the device's signal, and so without its system calls and this thread's wake-up) until
     * a notification is due, the set of queues changes, a channel signals, or the spin time is up.
     *
     * @return {@code true} when the loop should go round again at once, {@code false} to wait
     */
    private boolean spin(VerbsCompletionQueue[] snapshot, long seen, int[] fds, int[] ready) throws NativeException {
        long start = System.nanoTime();
        long channels = start;
        for (;;) {
            for (VerbsCompletionQueue cq : snapshot) {
                cq.reap();
            }
            if (!notifications.isEmpty()) {
                deliverNotifications();
                return true;
            }
            if (stopping) {
                return true;
            }
            synchronized (membership) {
                if (generation != seen) {
                    return true;
                }
            }
            long now = System.nanoTime();
            if (now - channels >= SPIN_CHANNEL_NANOS) {
                channels = now;
                if (VerbsNative.poll(fds, snapshot.length + 1, 0, ready) > 0) {
                    return false; // the wait that follows returns at once and reads the signals
                }
            }
            if (now - start >= spinNanos) {
                return false;
            }
            Thread.onSpinWait();
        }
    }

    private void deliverNotifications() {
        VerbsCompletionQueue cq;
        while ((cq = notifications.poll()) != null) {
            cq.deliverNotification();
        }
    }
}
