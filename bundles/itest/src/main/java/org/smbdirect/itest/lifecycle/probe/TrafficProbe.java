package org.smbdirect.itest.lifecycle.probe;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * What the lifecycle test and its traffic bundle share, registered as a service by the test. The
 * traffic bundle ({@code org.smbdirect.itest.traffic}) uses the product's APIs and is refreshed
 * with them; the test uses only this class and the framework, so that no bundle it cycles is
 * wired to the test bundle (a refresh would otherwise take the running test with it). Only
 * {@code java.*} types cross between the two.
 *
 * <p>The test switches traffic on and off; the traffic bundle counts what it sent and received,
 * classifies every failure it expected and reports anything else as a problem.
 */
public final class TrafficProbe {

    /** What the traffic bundle counts. */
    public enum Counter {
        /** SMB Direct messages handed to {@code send}. */
        MESSAGES_ATTEMPTED,
        /** SMB Direct messages whose send completed. */
        MESSAGES_SENT,
        /** SMB Direct messages received in order and intact. */
        MESSAGES_DELIVERED,
        /** Bytes of those messages. */
        MESSAGE_BYTES,
        /**
         * SMB Direct messages handed to {@code send} and not delivered, on connections whose both
         * ends were told of their loss: counted when the round ends.
         */
        MESSAGES_LOST,
        /** Bulk sends handed to {@code send}. */
        BULK_ATTEMPTED,
        /** Bulk sends completed. */
        BULK_SENT,
        /** Bulk sends of the inline size received in order and intact. */
        BULK_INLINE_DELIVERED,
        /** Bulk sends of the RDMA size received in order and intact. */
        BULK_RDMA_DELIVERED,
        /** Bytes of those bulk sends. */
        BULK_BYTES,
        /** Bulk sends not delivered, on sessions whose both ends were told that they closed. */
        BULK_LOST,
        /** SMB Direct connection ends (either side) that the traffic bundle saw established. */
        CONNECTION_ENDS_OPENED,
        /** SMB Direct connection ends whose loss the traffic bundle was told of. */
        CONNECTION_ENDS_LOST,
        /** Bulk session ends (either side) opened. */
        BULK_ENDS_OPENED,
        /** Bulk session ends whose closing the traffic bundle was told of. */
        BULK_ENDS_CLOSED,
        /** Rounds of listen, connect, send until something ended them (both kinds of traffic). */
        GENERATIONS,
        /** Calls on a service object after its service was unregistered. */
        STALE_SERVICE_CALLS,
        /**
         * {@code getService} returned null for a service reference just looked up: the service's
         * bundle was stopping (Declarative Services then returns null, and the framework reports
         * a "Service factory returned null" ERROR event).
         */
        SERVICE_GONE_AT_GET
    }

    private final AtomicLongArray counters = new AtomicLongArray(Counter.values().length);
    private final Map<String, LongAdder> expected = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private final AtomicInteger driversRunning = new AtomicInteger();
    private final AtomicInteger driversBusy = new AtomicInteger();
    private final AtomicReference<CompletableFuture<Map<String, Object>>> audit = new AtomicReference<>();
    private final Map<String, java.util.function.Supplier<String>> states = new ConcurrentHashMap<>();
    private volatile boolean enabled;

    // ------------------------------------------------------------ the test's side

    /** Traffic starts (or resumes) in every driver. */
    public void enable() {
        enabled = true;
    }

    /** Drivers end their rounds, close what they opened and idle. */
    public void disable() {
        enabled = false;
    }

    /**
     * Whether traffic should flow.
     *
     * @return the switch
     */
    public boolean enabled() {
        return enabled;
    }

    /**
     * Whether the traffic bundle runs its drivers and none of them holds anything open.
     *
     * @param drivers how many drivers the traffic bundle runs
     * @return {@code true} when all of them are running and idle
     */
    public boolean idle(int drivers) {
        return driversRunning.get() == drivers && driversBusy.get() == 0;
    }

    /**
     * Asks an idle driver for what the transport service reports once everything is closed.
     *
     * @return completes with the report
     */
    public CompletableFuture<Map<String, Object>> requestAudit() {
        CompletableFuture<Map<String, Object>> f = new CompletableFuture<>();
        audit.set(f);
        return f;
    }

    /**
     * A snapshot of the counters.
     *
     * @return one value per {@link Counter}, in declaration order
     */
    public long[] snapshot() {
        long[] v = new long[counters.length()];
        for (int i = 0; i < v.length; i++) {
            v[i] = counters.get(i);
        }
        return v;
    }

    /**
     * The expected failures seen so far, by kind.
     *
     * @return for example {@code send: ConnectionLostException PROVIDER_STOPPED -> 12}
     */
    public Map<String, Long> expectedFailures() {
        Map<String, Long> m = new TreeMap<>();
        expected.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }

    /**
     * Everything unexpected the traffic bundle saw, with stack traces.
     *
     * @return the problems, oldest first
     */
    public List<String> problems() {
        return new ArrayList<>(problems);
    }

    /**
     * What each driver is doing, for the message of a failed wait.
     *
     * @return one line per driver
     */
    public String describe() {
        StringBuilder s = new StringBuilder();
        states.forEach((k, v) -> {
            String d;
            try {
                d = v.get();
            } catch (RuntimeException e) {
                d = e.toString();
            }
            s.append(k).append(": ").append(d).append('\n');
        });
        return s.toString();
    }

    // ------------------------------------------------------------ the traffic bundle's side

    /**
     * Publishes (or, with {@code null}, withdraws) a driver's description of what it is doing.
     *
     * @param driver the driver's name
     * @param state describes it; withdrawn when the driver ends, so that nothing of a refreshed
     *        bundle stays reachable from here
     */
    public void state(String driver, java.util.function.Supplier<String> state) {
        if (state == null) {
            states.remove(driver);
        } else {
            states.put(driver, state);
        }
    }

    /**
     * Counts.
     *
     * @param c the counter
     * @param n the amount
     */
    public void add(Counter c, long n) {
        counters.addAndGet(c.ordinal(), n);
    }

    /**
     * Records a failure of a kind the traffic expects while bundles cycle.
     *
     * @param kind what failed and how, without varying details
     */
    public void expected(String kind) {
        expected(kind, 1);
    }

    /**
     * Records failures of a kind the traffic expects while bundles cycle.
     *
     * @param kind what failed and how, without varying details
     * @param n how many
     */
    public void expected(String kind, long n) {
        if (n > 0) {
            expected.computeIfAbsent(kind, k -> new LongAdder()).add(n);
        }
    }

    /**
     * Records something that must not happen.
     *
     * @param what a description
     * @param t the exception, or {@code null}
     */
    public void problem(String what, Throwable t) {
        StringBuilder s = new StringBuilder(Thread.currentThread().getName()).append(": ").append(what);
        if (t != null) {
            StringWriter w = new StringWriter();
            t.printStackTrace(new PrintWriter(w));
            s.append('\n').append(w);
        }
        problems.add(s.toString());
    }

    /**
     * A driver thread started ({@code +1}) or ended ({@code -1}).
     *
     * @param delta the change
     */
    public void driverRunning(int delta) {
        driversRunning.addAndGet(delta);
    }

    /**
     * A driver opened its first resource of a round ({@code +1}) or closed its last ({@code -1}).
     *
     * @param delta the change
     */
    public void driverBusy(int delta) {
        driversBusy.addAndGet(delta);
    }

    /**
     * Takes the pending audit request, if any.
     *
     * @return the request to complete, or {@code null}
     */
    public CompletableFuture<Map<String, Object>> takeAuditRequest() {
        return audit.getAndSet(null);
    }
}
