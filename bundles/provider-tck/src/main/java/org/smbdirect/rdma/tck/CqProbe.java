package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;

/**
 * A completion queue under test: its notification handler counts calls and checks the
 * notification guarantees (never concurrent, never on the test's thread); the test's thread
 * polls and arms it. The handler never touches the queue, so the test's thread is its only
 * consumer and the consumer's serialisation obligation holds trivially.
 */
public final class CqProbe implements CompletionNotificationHandler {
    private final String name;
    private final Thread owner = Thread.currentThread();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final List<String> violations = new ArrayList<>();
    private final CompletionResult[] holders = new CompletionResult[16];
    private CompletionQueue queue;
    private int notifications;
    private int entered;
    private int maxConcurrent;
    private volatile CountDownLatch gate;
    private volatile RuntimeException toThrow;
    private volatile boolean collect;
    private final List<Completion> collected = new ArrayList<>();

    private CqProbe(String name) {
        this.name = name;
        for (int i = 0; i < holders.length; i++) {
            holders[i] = new CompletionResult();
        }
    }

    /**
     * Creates a completion queue with a probe as its handler.
     *
     * @param provider the provider
     * @param depth the queue's depth
     * @param name for messages
     * @return the probe
     * @throws RdmaException from {@link RdmaProvider#createCompletionQueue}
     */
    public static CqProbe create(RdmaProvider provider, int depth, String name) throws RdmaException {
        CqProbe p = new CqProbe(name);
        p.queue = provider.createCompletionQueue(depth, p);
        return p;
    }

    /**
     * The queue.
     *
     * @return the completion queue
     */
    public CompletionQueue queue() {
        return queue;
    }

    @Override
    public void onCompletionNotification(CompletionQueue q) {
        int now = inFlight.incrementAndGet();
        synchronized (this) {
            entered++;
            maxConcurrent = Math.max(maxConcurrent, now);
            if (now > 1) {
                violations.add(name + ": notification handler called while another call was running");
            }
            if (Thread.currentThread() == owner) {
                violations.add(name + ": notification handler called on the test's thread, within a call it made");
            }
            if (q != queue) {
                violations.add(name + ": notification handler called with another queue");
            }
            notifyAll();
        }
        try {
            CountDownLatch g = gate;
            if (g != null) {
                gate = null;
                try {
                    if (!g.await(Tck.timeout().toMillis(), TimeUnit.MILLISECONDS)) {
                        synchronized (this) {
                            violations.add(name + ": gate was never opened");
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (collect) {
                CompletionResult[] a = new CompletionResult[8];
                for (int i = 0; i < a.length; i++) {
                    a[i] = new CompletionResult();
                }
                int k;
                do {
                    k = q.getResults(a);
                    synchronized (this) {
                        for (int i = 0; i < k; i++) {
                            collected.add(Completion.of(a[i]));
                        }
                    }
                } while (k > 0);
            }
            RuntimeException t = toThrow;
            if (t != null) {
                toThrow = null;
                throw t;
            }
        } finally {
            inFlight.decrementAndGet();
            synchronized (this) {
                notifications++;
                notifyAll();
            }
        }
    }

    /**
     * Makes the next call of the handler wait, inside the handler, until the latch opens.
     *
     * @param latch the gate
     */
    public void holdNextNotification(CountDownLatch latch) {
        gate = latch;
    }

    /**
     * Makes the next call of the handler throw (after counting it).
     *
     * @param e the exception
     */
    public void throwFromNextNotification(RuntimeException e) {
        toThrow = e;
    }

    /**
     * From now on the handler itself drains the queue into {@link #awaitCollected} (the test's
     * thread must then leave the queue alone, so that calls stay serialised) and re-arms nothing.
     */
    public void collectOnNotification() {
        collect = true;
    }

    /**
     * Waits until the handler collected at least {@code n} completions.
     *
     * @param n how many
     * @return the completions collected so far, oldest first
     */
    public synchronized List<Completion> awaitCollected(int n) {
        long deadline = Tck.deadline();
        while (collected.size() < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                fail(name + ": expected the handler to collect " + n + " completion(s) within " + Tck.timeout() + ", got "
                        + collected);
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
        return new ArrayList<>(collected);
    }

    /**
     * Calls of the handler that have returned.
     *
     * @return the count
     */
    public synchronized int notifications() {
        return notifications;
    }

    /**
     * Calls of the handler that have started.
     *
     * @return the count
     */
    public synchronized int notificationsStarted() {
        return entered;
    }

    /**
     * The most calls of the handler that ran at once (1 when serialised).
     *
     * @return the count
     */
    public synchronized int maxConcurrent() {
        return maxConcurrent;
    }

    /**
     * Waits until at least {@code n} calls of the handler have returned.
     *
     * @param n the count
     */
    public synchronized void awaitNotifications(int n) {
        awaitCount(n, false);
    }

    /**
     * Waits until at least {@code n} calls of the handler have started.
     *
     * @param n the count
     */
    public synchronized void awaitNotificationsStarted(int n) {
        awaitCount(n, true);
    }

    private void awaitCount(int n, boolean started) {
        long deadline = Tck.deadline();
        while ((started ? entered : notifications) < n) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                fail(name + ": expected " + n + " notification(s) within " + Tck.timeout() + ", got "
                        + (started ? entered : notifications));
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
    }

    /**
     * Arms the queue.
     *
     * @param type the condition
     */
    public void arm(ArmType type) {
        queue.arm(type);
    }

    /**
     * Polls ({@link CompletionQueue#getResults}) until {@code n} completions arrived.
     *
     * @param n how many
     * @return them, oldest first
     */
    public List<Completion> poll(int n) {
        return poll(n, false);
    }

    /**
     * Polls with {@link CompletionQueue#getResultsEx} until {@code n} completions arrived.
     *
     * @param n how many
     * @return them, oldest first
     */
    public List<Completion> pollEx(int n) {
        return poll(n, true);
    }

    /**
     * Polls until one completion arrived.
     *
     * @return it
     */
    public Completion next() {
        return poll(1).get(0);
    }

    private List<Completion> poll(int n, boolean extended) {
        List<Completion> got = new ArrayList<>(n);
        long deadline = Tck.deadline();
        while (got.size() < n) {
            int want = Math.min(holders.length, n - got.size());
            CompletionResult[] a = want == holders.length ? holders : java.util.Arrays.copyOf(holders, want);
            int k = extended ? queue.getResultsEx(a) : queue.getResults(a);
            for (int i = 0; i < k; i++) {
                got.add(Completion.of(a[i]));
            }
            if (k == 0) {
                if (System.nanoTime() - deadline > 0) {
                    fail(name + ": expected " + n + " completion(s) within " + Tck.timeout() + ", got " + got);
                }
                LockSupport.parkNanos(50_000);
            }
        }
        return got;
    }

    /**
     * Takes whatever completions are queued now, without waiting.
     *
     * @return them, possibly none
     */
    public List<Completion> drain() {
        List<Completion> got = new ArrayList<>();
        int k;
        do {
            k = queue.getResults(holders);
            for (int i = 0; i < k; i++) {
                got.add(Completion.of(holders[i]));
            }
        } while (k > 0);
        return got;
    }

    /**
     * Broken guarantees seen so far.
     *
     * @return readable descriptions; empty when all is well
     */
    public synchronized List<String> violations() {
        return new ArrayList<>(violations);
    }

    @Override
    public String toString() {
        return "CqProbe[" + name + "]";
    }
}
