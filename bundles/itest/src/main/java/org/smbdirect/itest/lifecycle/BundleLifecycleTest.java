package org.smbdirect.itest.lifecycle;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.management.MBeanServer;
import javax.management.ObjectName;

import com.sun.management.HotSpotDiagnosticMXBean;

import org.apache.felix.service.command.CommandProcessor;
import org.apache.felix.service.command.CommandSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.ServiceRegistration;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.framework.wiring.FrameworkWiring;
import org.osgi.test.common.annotation.InjectBundleContext;
import org.osgi.test.common.annotation.Property;
import org.osgi.test.common.annotation.config.WithFactoryConfiguration;
import org.osgi.test.junit5.cm.ConfigurationExtension;
import org.osgi.test.junit5.context.BundleContextExtension;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe.Counter;

/**
 * Every bundle of ours in the framework (symbolic name {@code org.smbdirect.*}, the test bundles
 * {@code org.smbdirect.itest*} excepted, so that bundles added later are cycled too) is stopped
 * and started {@link #CYCLES} times and updated from its location {@link #CYCLES} times (each
 * update followed by a refresh of the bundle, awaited; 100 each unless the system property
 * {@value #CYCLES_PROPERTY} says otherwise), while SMB Direct messages flow both ways
 * through the {@code SmbDirect} service and bulk sends, inline and RDMA, flow both ways through
 * the {@code BulkTransfer} service (ARCHITECTURE.md, invariant 5: bundles start and stop in any
 * order without leaked threads, registrations or native resources).
 *
 * <p>The traffic runs in its own bundle ({@code org.smbdirect.itest.traffic}, see {@link
 * TrafficProbe}), which reconnects, looking the services up again, whenever a cycle takes its
 * connections or services away, checks that what it receives arrives in order and intact, that
 * every failed send fails with {@code ConnectionLostException} and that a service object whose
 * service went away refuses further use with {@code SmbDirectException}. This bundle imports
 * nothing of the bundles it cycles, so a refresh never reaches it.
 *
 * <p>After every restart: traffic flows again (messages and both bulk sizes delivered), and the
 * framework is back at the baseline taken with traffic flowing before the first cycle: the same
 * {@code smbdirect-} threads (engine loops, timers, the simulated fabric's threads), the same
 * services registered in all, per bundle and in use by our bundles, the same MBeans. After each
 * bundle's cycles, with traffic switched off: no connection and no registration left in the
 * transport ({@code SmbDirect.connections()}, its statistics), every connection end accounted
 * for, no endpoint, region, completion queue or listener left in the simulated provider (its
 * MBean), the class loaders of the updated bundle's old revisions all collected, and the matching
 * check: every message and bulk send the traffic handed to the transport was delivered once, in
 * order, intact, or lost with its connection (both ends told of the loss; what the sender saw
 * complete is lost only when the receiver did not end by its peer's disconnect). Throughout: no
 * framework ERROR or WARNING, no uncaught exception, no warning with an exception from our
 * loggers. All waits are bounded polls for asynchronous shutdown; nothing sleeps for a timer, and
 * a wait that times out fails with the traffic drivers' states and a thread dump.
 */
@ExtendWith({BundleContextExtension.class, ConfigurationExtension.class})
@WithFactoryConfiguration(factoryPid = BundleLifecycleTest.SIM_PID, name = "lifecycle", location = "?", properties = {
    @Property(key = "fabric", value = "lifecycle"), @Property(key = "name", value = BundleLifecycleTest.PROVIDER)})
class BundleLifecycleTest {
    static final String SIM_PID = "org.smbdirect.rdma.sim";
    /** A fixed provider name, so that a restarted provider's threads have the same names. */
    static final String PROVIDER = "lifecycle";
    static final String PRODUCT = "org.smbdirect.";
    static final String TESTS = "org.smbdirect.itest";
    /** The traffic bundle, the one consumer of the services that come and go. */
    static final String TRAFFIC = "org.smbdirect.itest.traffic";
    static final List<String> REQUIRED = List.of("org.smbdirect.bulk", "org.smbdirect.protocol",
            "org.smbdirect.rdma.api", "org.smbdirect.rdma.sim");
    /** The system property that sets {@link #CYCLES} (for a longer run, or a quick one). */
    static final String CYCLES_PROPERTY = "smbdirect.lifecycle.cycles";
    /** Stop/start cycles, and update+refresh cycles, of each bundle. */
    static final int CYCLES = Integer.getInteger(CYCLES_PROPERTY, 100);
    /** The traffic bundle's drivers: SMB Direct messages, bulk sends. */
    static final int DRIVERS = 2;
    /** Traffic that must arrive after each restart: messages, and one bulk send of each size. */
    static final int MESSAGES_AFTER_RESTART = 16;
    /** The Gogo commands: after each of its restarts they must answer again. */
    static final String SHELL = "org.smbdirect.shell";
    /** The provider's line in {@code smbdirect:providers}, marked as the one the transport uses. */
    static final Pattern SHELL_SEES_PROVIDER = Pattern.compile("(?m)^\\* " + PROVIDER + " +sim ");
    /** Bound of every wait for asynchronous start-up or shutdown. */
    static final Duration WAIT = Duration.ofSeconds(30);

    @InjectBundleContext
    BundleContext context;

    private TrafficProbe probe;
    private ServiceRegistration<TrafficProbe> probeRegistration;
    private Problems problems;
    private Snapshot baseline;
    private final List<String> report = new ArrayList<>();
    /** Problems reported before the current phase (reported by its failure already). */
    private int probeProblemsBefore;
    private int problemsBefore;
    private long startedNanos;
    private long[] startCounters;
    private int bundlesCycled;

    @BeforeEach
    void setUp() {
        problems = new Problems(context, TRAFFIC);
        probe = new TrafficProbe();
        probeRegistration = context.registerService(TrafficProbe.class, probe, null);
    }

    @AfterEach
    void tearDown() throws Exception {
        probe.disable();
        try {
            probeRegistration.unregister();
        } finally {
            problems.close();
            for (Bundle b : ours()) {
                if (b.getState() != Bundle.ACTIVE) {
                    b.start();
                }
            }
        }
        System.out.println("[lifecycle] summary (" + problems.consumerStopping() + " getService calls of the traffic "
                + "bundle met SCR while that bundle was being stopped by a refresh):");
        report.forEach(l -> System.out.println("[lifecycle]   " + l));
        if (startCounters != null) {
            long[] now = probe.snapshot();
            System.out.println(String.format(Locale.ROOT, "[lifecycle] %d bundles cycled, %d stop/start + %d "
                    + "update/refresh cycles each, in %.1f s; traffic: %d messages (%d bytes) and %d bulk sends (%d "
                    + "bytes) delivered once and in order, %d messages and %d bulk sends lost with their connections",
                    bundlesCycled, CYCLES, CYCLES, (System.nanoTime() - startedNanos) / 1e9,
                    delta(startCounters, now, Counter.MESSAGES_DELIVERED), delta(startCounters, now,
                            Counter.MESSAGE_BYTES), delta(startCounters, now, Counter.BULK_INLINE_DELIVERED)
                            + delta(startCounters, now, Counter.BULK_RDMA_DELIVERED),
                    delta(startCounters, now, Counter.BULK_BYTES), delta(startCounters, now, Counter.MESSAGES_LOST),
                    delta(startCounters, now, Counter.BULK_LOST)));
        }
    }

    @TestFactory
    Stream<DynamicTest> eachBundle_stopStartAndUpdateCycles_whileTrafficFlows_leaveNothingBehind() {
        List<Bundle> bundles = ours();
        List<String> names = bundles.stream().map(Bundle::getSymbolicName).collect(Collectors.toList());
        assertTrue(names.containsAll(REQUIRED), "the framework holds " + names + ", expected at least " + REQUIRED);
        return Stream.concat(Stream.of(DynamicTest.dynamicTest("traffic flows, baseline taken", this::baseline)),
                bundles.stream().map(b -> DynamicTest.dynamicTest(b.getSymbolicName(), () -> cycle(b))));
    }

    /** Our bundles but the tests', by symbolic name. */
    private List<Bundle> ours() {
        return Arrays.stream(context.getBundles()).filter(b -> b.getSymbolicName().startsWith(PRODUCT)
                && !b.getSymbolicName().startsWith(TESTS)).sorted(Comparator.comparing(Bundle::getSymbolicName))
                .collect(Collectors.toList());
    }

    private void baseline() throws Exception {
        startedNanos = System.nanoTime();
        startCounters = probe.snapshot();
        probe.enable();
        awaitTraffic("the traffic starts", probe.snapshot());
        // Threads that start lazily (timers) are up once traffic flowed; the baseline must then
        // hold still over more traffic.
        Snapshot previous = Snapshot.take(context, PRODUCT, TESTS);
        for (int i = 0; i < 5; i++) {
            awaitTraffic("traffic before the baseline", probe.snapshot());
            Snapshot s = Snapshot.take(context, PRODUCT, TESTS);
            if (s.sameAs(previous)) {
                baseline = s;
                break;
            }
            previous = s;
        }
        assertNotNull(baseline, "the framework did not hold still while traffic flowed: " + previous);
        assertTrue(baseline.threads.stream().anyMatch(t -> t.startsWith("smbdirect-engine-"))
                && baseline.threads.stream().anyMatch(t -> t.startsWith("smbdirect-sim-" + PROVIDER)),
                "the engine's and the provider's threads are in the baseline: " + baseline);
        assertTrue(baseline.mbeans.contains(simMBean().toString()), "the provider's MBean is registered: " + baseline);
        report.add("baseline with traffic flowing: " + baseline);
    }

    private void cycle(Bundle b) throws Exception {
        assertNotNull(baseline, "no baseline");
        probeProblemsBefore = probe.problems().size();
        problemsBefore = problems.seen().size();
        probe.enable(); // again, if the previous phase failed with traffic off
        for (Bundle o : ours()) {
            if (o.getState() != Bundle.ACTIVE) {
                o.start(); // the previous phase failed with it stopped: this one starts from the baseline
            }
        }
        String name = b.getSymbolicName();
        long[] before = probe.snapshot();
        Map<String, Long> failuresBefore = probe.expectedFailures();
        List<Long> stopStart = new ArrayList<>();
        for (int i = 1; i <= CYCLES; i++) {
            long t0 = System.nanoTime();
            b.stop();
            String what = name + " stopped (" + i + ")";
            await(what + ": no thread or MBean beyond the baseline", () -> {
                Snapshot s = Snapshot.take(context, PRODUCT, TESTS);
                return s.threadsWithin(baseline) && baseline.mbeans.containsAll(s.mbeans);
            }, () -> Snapshot.take(context, PRODUCT, TESTS).toString());
            b.start();
            settle(name + " restarted (" + i + ")", probe.snapshot());
            if (SHELL.equals(name)) {
                shellAnswers(name + " restarted (" + i + ")");
            }
            stopStart.add(System.nanoTime() - t0);
        }

        List<WeakReference<ClassLoader>> oldLoaders = new ArrayList<>();
        List<Long> updates = new ArrayList<>();
        for (int i = 1; i <= CYCLES; i++) {
            long t0 = System.nanoTime();
            oldLoaders.add(loaderOf(b));
            b.update();
            refresh(b);
            settle(name + " updated (" + i + ")", probe.snapshot());
            if (SHELL.equals(name)) {
                shellAnswers(name + " updated (" + i + ")");
            }
            updates.add(System.nanoTime() - t0);
        }

        quiet(name);
        long[] after = probe.snapshot();
        // since the traffic started (ends opened before this phase may have ended in it)
        assertEquals(after[Counter.CONNECTION_ENDS_OPENED.ordinal()], after[Counter.CONNECTION_ENDS_LOST.ordinal()],
                "every SMB Direct connection end the traffic opened was told of its loss");
        assertEquals(after[Counter.BULK_ENDS_OPENED.ordinal()], after[Counter.BULK_ENDS_CLOSED.ordinal()],
                "every bulk session end the traffic opened was told that it closed");
        long opened = delta(before, after, Counter.CONNECTION_ENDS_OPENED);
        long bulkOpened = delta(before, after, Counter.BULK_ENDS_OPENED);
        // Old revisions must not linger: no thread, queue or timer of another bundle (or of the
        // JDK) may keep the last task, connection or class of a revision reachable.
        long leaked = awaitCollected(oldLoaders, 0);
        if (leaked > 0 && Boolean.getBoolean("smbdirect.lifecycle.heapDump")) {
            dumpHeap(name);
        }
        assertEquals(0, leaked, leaked + " class loaders of " + name + "'s " + oldLoaders.size()
                + " old revisions still reachable after its updates");
        assertEquals(List.of(), since(problems.seen(), problemsBefore),
                "framework errors, uncaught exceptions, logged exceptions");

        Map<String, Long> failures = new TreeMap<>(probe.expectedFailures());
        failuresBefore.forEach((k, v) -> failures.computeIfPresent(k, (k2, now) -> now - v == 0 ? null : now - v));
        String line = String.format(Locale.ROOT, "%s: %d stop/start cycles in %.1f s (%s), %d update+refresh cycles in "
                + "%.1f s (%s); traffic: %d messages, %d bulk inline + %d bulk RDMA sends delivered, %d rounds, "
                + "%d connection ends and %d bulk session ends opened and closed, %d stale service calls refused, "
                + "%d getService calls racing with a stopping bundle, %d old revisions still reachable; expected failures %s", name, stopStart.size(), seconds(stopStart), stats(stopStart), updates.size(),
                seconds(updates), stats(updates), delta(before, after, Counter.MESSAGES_DELIVERED),
                delta(before, after, Counter.BULK_INLINE_DELIVERED), delta(before, after, Counter.BULK_RDMA_DELIVERED),
                delta(before, after, Counter.GENERATIONS), opened, bulkOpened,
                delta(before, after, Counter.STALE_SERVICE_CALLS), delta(before, after, Counter.SERVICE_GONE_AT_GET),
                leaked, failures);
        System.out.println("[lifecycle] " + line);
        report.add(line);
        bundlesCycled++;
        probe.enable();
    }

    /** After a restart: traffic flows again and the framework is back at the baseline. */
    private void settle(String what, long[] mark) throws Exception {
        awaitTraffic(what + ": traffic flows", mark);
        await(what + ": back at the baseline", () -> Snapshot.take(context, PRODUCT, TESTS).sameAs(baseline),
                () -> "now " + Snapshot.take(context, PRODUCT, TESTS) + "\nbaseline " + baseline);
    }

    /**
     * After the shell's restart its commands work again: {@code smbdirect:providers}, run through
     * Gogo as a user would, lists the provider and marks it as the transport's.
     */
    private void shellAnswers(String what) throws Exception {
        ServiceReference<CommandProcessor> ref = context.getServiceReference(CommandProcessor.class);
        assertNotNull(ref, "Gogo's command processor");
        CommandProcessor gogo = context.getService(ref);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream print = new PrintStream(out, true, UTF_8);
        try {
            await(what + ": smbdirect:providers lists the provider in use", () -> {
                out.reset();
                CommandSession session = gogo.createSession(InputStream.nullInputStream(), print, print);
                try {
                    session.execute("smbdirect:providers");
                } catch (Exception e) {
                    print.println(e); // not registered yet: shown if the wait times out
                } finally {
                    session.close();
                }
                return SHELL_SEES_PROVIDER.matcher(out.toString(UTF_8)).find();
            }, () -> out.toString(UTF_8));
        } finally {
            context.ungetService(ref);
        }
    }

    /** Switches traffic off and checks that nothing of it is left anywhere. */
    private void quiet(String name) throws Exception {
        probe.disable();
        await(name + ": the traffic bundle closed everything", () -> probe.idle(DRIVERS), () -> "not idle");
        Map<String, Object> audit;
        try {
            audit = probe.requestAudit().get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("no audit from the traffic bundle within " + WAIT.toSeconds() + " s after "
                    + name + "\n" + diagnostics(), e);
        }
        report.add(name + ": the transport afterwards: " + audit);
        assertEquals(0, audit.get("connections"), "SmbDirect.connections() after " + name + ": " + audit);
        assertEquals(0L, audit.get("connectionsOpen"), "statistics: open connections: " + audit);
        assertEquals(0L, audit.get("registrationsLive"), "statistics: live registrations: " + audit);
        assertEquals((Long) audit.get("connectionsEstablished") + (Long) audit.get("connectionsFailed"),
                audit.get("terminated"), "every connection the transport made has ended, with a reason: " + audit);
        MBeanServer jmx = ManagementFactory.getPlatformMBeanServer();
        ObjectName sim = simMBean();
        await(name + ": the simulated provider holds nothing", () -> {
            try {
                for (String a : new String[] {"Endpoints", "Regions", "CompletionQueues", "Listeners"}) {
                    if (!Integer.valueOf(0).equals(jmx.getAttribute(sim, a))) {
                        return false;
                    }
                }
                return true;
            } catch (javax.management.JMException e) {
                return false;
            }
        }, () -> simCounts(jmx, sim));
        await(name + ": back at the baseline without traffic", () -> Snapshot.take(context, PRODUCT, TESTS)
                .sameAs(baseline), () -> "now " + Snapshot.take(context, PRODUCT, TESTS) + "\nbaseline " + baseline);
        assertEquals(List.of(), since(probe.problems(), probeProblemsBefore), "what the traffic bundle saw");
        // The matching check, summed over every round since the traffic started: each message
        // handed to the transport was delivered (once, in order: the receiving ends check) or
        // accounted lost with its connection when its round ended.
        long[] c = probe.snapshot();
        assertEquals(c[Counter.MESSAGES_ATTEMPTED.ordinal()], c[Counter.MESSAGES_DELIVERED.ordinal()]
                + c[Counter.MESSAGES_LOST.ordinal()], "SMB Direct messages sent = delivered + lost with their "
                + "connections");
        assertEquals(c[Counter.BULK_ATTEMPTED.ordinal()], c[Counter.BULK_INLINE_DELIVERED.ordinal()]
                + c[Counter.BULK_RDMA_DELIVERED.ordinal()] + c[Counter.BULK_LOST.ordinal()],
                "bulk sends = delivered + lost with their sessions");
        // Every "Service factory returned null" ERROR is a getService of the traffic bundle that
        // raced with the service's bundle stopping, and the traffic bundle saw that null.
        await(name + ": each 'Service factory returned null' was a getService the traffic bundle saw fail",
                () -> problems.factoryNulls() <= probe.snapshot()[Counter.SERVICE_GONE_AT_GET.ordinal()],
                () -> problems.factoryNulls() + " ERROR events, " + probe.snapshot()[
                        Counter.SERVICE_GONE_AT_GET.ordinal()] + " nulls seen");
    }

    private static String simCounts(MBeanServer jmx, ObjectName sim) {
        try {
            return sim + ": endpoints " + jmx.getAttribute(sim, "Endpoints") + ", regions " + jmx.getAttribute(sim,
                    "Regions") + ", completion queues " + jmx.getAttribute(sim, "CompletionQueues") + ", listeners "
                    + jmx.getAttribute(sim, "Listeners");
        } catch (javax.management.JMException e) {
            return sim + ": " + e;
        }
    }

    private static ObjectName simMBean() throws javax.management.MalformedObjectNameException {
        return new ObjectName("org.smbdirect.rdma.sim:type=SimProvider,name=" + ObjectName.quote(PROVIDER));
    }

    /** A separate frame, so that no local variable of the caller keeps the loader reachable. */
    private static WeakReference<ClassLoader> loaderOf(Bundle b) {
        BundleWiring w = b.adapt(BundleWiring.class);
        assertNotNull(w, b + " is resolved");
        return new WeakReference<>(w.getClassLoader());
    }

    /** Collects garbage until at most {@code allowed} loaders remain or the wait is over; returns how many remain. */
    private static long awaitCollected(List<WeakReference<ClassLoader>> loaders, long allowed)
            throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        long left;
        while ((left = loaders.stream().filter(r -> r.get() != null).count()) > allowed
                && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50); // the collector runs concurrently; poll again shortly
        }
        return left;
    }

    /** For finding what keeps an old revision reachable: -Dsmbdirect.lifecycle.heapDump=true. */
    private static void dumpHeap(String name) {
        try {
            Path file = Paths.get(System.getProperty("java.io.tmpdir"),
                    "smbdirect-lifecycle-" + name + "-" + System.nanoTime() + ".hprof");
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).dumpHeap(file.toString(), true);
            System.err.println("heap dumped to " + file);
        } catch (IOException | RuntimeException e) {
            System.err.println("no heap dump: " + e);
        }
    }

    /** Updates have new revisions; refreshing makes the bundle (and whoever is wired to it) use them. */
    private void refresh(Bundle b) throws Exception {
        FrameworkWiring wiring = context.getBundle(Constants.SYSTEM_BUNDLE_LOCATION).adapt(FrameworkWiring.class);
        CompletableFuture<FrameworkEvent> done = new CompletableFuture<>();
        wiring.refreshBundles(List.of(b), done::complete);
        FrameworkEvent e;
        try {
            e = done.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (TimeoutException x) {
            throw new AssertionError("the refresh of " + b + " did not end within " + WAIT.toSeconds() + " s\n"
                    + diagnostics(), x);
        }
        assertEquals(FrameworkEvent.PACKAGES_REFRESHED, e.getType(), "refresh of " + b + ": " + e.getThrowable());
    }

    /** Waits until messages and a bulk send of each size were delivered after {@code mark}. */
    private void awaitTraffic(String what, long[] mark) throws InterruptedException {
        await(what, () -> {
            long[] now = probe.snapshot();
            return delta(mark, now, Counter.MESSAGES_DELIVERED) >= MESSAGES_AFTER_RESTART
                    && delta(mark, now, Counter.BULK_INLINE_DELIVERED) >= 1
                    && delta(mark, now, Counter.BULK_RDMA_DELIVERED) >= 1;
        }, () -> "delivered since: " + delta(mark, probe.snapshot(), Counter.MESSAGES_DELIVERED) + " messages, "
                + delta(mark, probe.snapshot(), Counter.BULK_INLINE_DELIVERED) + " bulk inline, "
                + delta(mark, probe.snapshot(), Counter.BULK_RDMA_DELIVERED) + " bulk RDMA; expected failures "
                + probe.expectedFailures());
    }

    /** What the traffic drivers are doing and every thread's stack, for a wait that timed out. */
    private String diagnostics() {
        return "traffic drivers:\n" + probe.describe() + "threads:\n" + threadDump();
    }

    /** Every thread's stack (the framework's and Declarative Services' too: a stop or refresh may hang there). */
    private static String threadDump() {
        StringBuilder s = new StringBuilder();
        Thread.getAllStackTraces().forEach((t, stack) -> {
            s.append('"').append(t.getName()).append("\" ").append(t.getState()).append('\n');
            for (int i = 0; i < Math.min(stack.length, 30); i++) {
                s.append("    at ").append(stack[i]).append('\n');
            }
        });
        return s.toString();
    }

    /**
     * Polls a condition until it holds or {@link #WAIT} is over; fails at once on anything the
     * traffic or the framework reported meanwhile.
     */
    private void await(String what, BooleanSupplier condition, Supplier<String> state) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            List<String> seen = new ArrayList<>(since(probe.problems(), probeProblemsBefore));
            seen.addAll(since(problems.seen(), problemsBefore));
            if (!seen.isEmpty()) {
                fail(what + ": " + seen.size() + " problem(s):\n" + String.join("\n", seen.subList(0,
                        Math.min(5, seen.size()))));
            }
            if (condition.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                fail("timed out after " + WAIT.toSeconds() + " s waiting until " + what + "; " + state.get() + "\n"
                        + diagnostics());
            }
            Thread.sleep(5);
        }
    }

    private static List<String> since(List<String> all, int before) {
        return all.subList(Math.min(before, all.size()), all.size());
    }

    private static long delta(long[] before, long[] after, Counter c) {
        return after[c.ordinal()] - before[c.ordinal()];
    }

    private static double seconds(List<Long> nanos) {
        return nanos.stream().mapToLong(Long::longValue).sum() / 1e9;
    }

    private static String stats(List<Long> nanos) {
        List<Long> sorted = new ArrayList<>(nanos);
        sorted.sort(null);
        return String.format(Locale.ROOT, "median %d ms, max %d ms", sorted.get(sorted.size() / 2) / 1_000_000,
                sorted.get(sorted.size() - 1) / 1_000_000);
    }
}
