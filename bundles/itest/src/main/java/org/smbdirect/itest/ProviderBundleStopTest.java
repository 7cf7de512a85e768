package org.smbdirect.itest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.FrameworkListener;
import org.osgi.framework.ServiceReference;
import org.osgi.service.cm.Configuration;
import org.osgi.test.common.annotation.InjectBundleContext;
import org.osgi.test.common.annotation.InjectService;
import org.osgi.test.common.annotation.Property;
import org.osgi.test.common.annotation.config.InjectConfiguration;
import org.osgi.test.common.annotation.config.WithConfiguration;
import org.osgi.test.common.annotation.config.WithFactoryConfiguration;
import org.osgi.test.junit5.cm.ConfigurationExtension;
import org.osgi.test.junit5.context.BundleContextExtension;
import org.osgi.test.junit5.service.ServiceExtension;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.TerminationReason;

/**
 * The provider bundle stops while two SMB Direct endpoints exchange messages continuously
 * (ARCHITECTURE.md: "Stopping a provider bundle tells the upper layer of every connection it
 * carried (Connection Loss, 3.1.7.1)"; invariant 5, bundles start and stop in any order without
 * leaked threads): every connection reports its loss, pending sends fail with
 * ConnectionLostException, nothing escapes, the transport service stays; when the bundle starts
 * again, new connections work, and the engine still has exactly its fixed pool of threads.
 */
@ExtendWith({BundleContextExtension.class, ServiceExtension.class, ConfigurationExtension.class})
@WithFactoryConfiguration(factoryPid = Itest.SIM_PID, name = "stop", location = "?", properties = {
    @Property(key = "fabric", value = "itest-stop"), @Property(key = "name", value = "itest-stop")})
class ProviderBundleStopTest {
    private static final int CONNECTIONS = 3;

    @InjectService(timeout = 30_000)
    SmbDirect smbDirect;

    @InjectBundleContext
    BundleContext context;

    /** Sends one side's messages continuously, at most {@code WINDOW} outstanding, until a send fails. */
    private static final class Traffic extends Thread {
        static final int WINDOW = 8;
        private final Endpoints.Side from;
        private final byte[] payload;
        private final Semaphore window = new Semaphore(WINDOW);
        final AtomicLong completed = new AtomicLong();
        /** Every failure of a send: asynchronous results and anything thrown by a call. */
        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        volatile boolean escaped;

        Traffic(Endpoints.Side from, int size, String name) {
            super(name);
            this.from = from;
            this.payload = new byte[size];
            Arrays.fill(payload, (byte) size);
        }

        @Override
        public void run() {
            try {
                while (failures.isEmpty()) {
                    if (!window.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                        continue;
                    }
                    from.connection.send(ByteBuffer.wrap(payload)).whenComplete((v, t) -> {
                        if (t == null) {
                            completed.incrementAndGet();
                        } else {
                            failures.add(t instanceof CompletionException && t.getCause() != null ? t.getCause() : t);
                        }
                        window.release();
                    });
                }
                // every send still in flight completes (fails) too
                if (!window.tryAcquire(WINDOW, Endpoints.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    failures.add(new AssertionError("sends still pending after the connection was lost"));
                }
            } catch (RuntimeException | InterruptedException e) {
                escaped = true;
                failures.add(e);
            }
        }
    }

    @Test
    void providerBundleStops_whileTrafficFlows_everyConnectionLost_serviceStays_restartWorks(
            @InjectConfiguration(withConfig = @WithConfiguration(pid = Itest.PROTOCOL_PID, location = "?",
                    properties = @Property(key = "provider.target", value = "(provider.fabric=itest-stop)")))
            Configuration protocol) throws Exception {
        Endpoints.await("the transport uses the provider", () -> "sim/itest-stop".equals(smbDirect.provider()));
        ServiceReference<SmbDirect> service = context.getServiceReference(SmbDirect.class);
        Object serviceId = service.getProperty("service.id");
        Bundle sim = Arrays.stream(context.getBundles()).filter(b -> Itest.SIM_BUNDLE.equals(b.getSymbolicName()))
                .findFirst().orElseThrow();
        List<FrameworkEvent> frameworkErrors = new CopyOnWriteArrayList<>();
        FrameworkListener errors = ev -> {
            if (ev.getType() == FrameworkEvent.ERROR || ev.getType() == FrameworkEvent.WARNING) {
                frameworkErrors.add(ev);
            }
        };
        List<Throwable> uncaught = new CopyOnWriteArrayList<>();
        Thread.UncaughtExceptionHandler previousHandler = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, ex) -> uncaught.add(ex));
        context.addFrameworkListener(errors);
        try (Logs logs = new Logs("org.smbdirect", Level.WARNING); Endpoints e = new Endpoints(smbDirect)) {
            List<Endpoints.Pair> pairs = new ArrayList<>();
            List<Traffic> traffic = new ArrayList<>();
            for (int i = 0; i < CONNECTIONS; i++) {
                Endpoints.Pair p = e.connect();
                pairs.add(p);
                // small messages one way, fragmented ones the other
                traffic.add(new Traffic(p.active, 200, "itest-traffic-" + i + "-active"));
                traffic.add(new Traffic(p.passive, 5000, "itest-traffic-" + i + "-passive"));
            }
            traffic.forEach(Thread::start);
            Endpoints.await("traffic flows on every connection in both directions",
                    () -> traffic.stream().allMatch(t -> t.completed.get() >= 50));
            // The engine's pool (its timer thread starts with the first timer).
            List<String> engineThreads = threads("smbdirect-engine-", "smbdirect-timers");
            assertTrue(engineThreads.contains("smbdirect-timers") && engineThreads.size() >= 3,
                    engineThreads.toString());

            assertFalse(threads("smbdirect-sim-itest-stop").isEmpty(), "the provider's fabric threads run");
            sim.stop();

            for (Endpoints.Pair p : pairs) {
                for (Endpoints.Side s : List.of(p.active, p.passive)) {
                    ConnectionLoss loss = s.awaitLoss();
                    assertEquals(TerminationReason.PROVIDER_STOPPED, loss.reason(), loss.message());
                    assertFalse(s.connection.isOpen());
                }
            }
            for (Traffic t : traffic) {
                t.join(Endpoints.TIMEOUT.toMillis());
                assertFalse(t.isAlive(), t.getName() + " still sending");
                assertFalse(t.escaped, t.getName() + ": an exception escaped from a send call: " + t.failures);
                assertFalse(t.failures.isEmpty(), t.getName() + ": no send failed");
                for (Throwable f : t.failures) {
                    ConnectionLostException lost = assertInstanceOf(ConnectionLostException.class, f,
                            t.getName() + " failed with " + f);
                    assertEquals(TerminationReason.PROVIDER_STOPPED, lost.loss().reason());
                }
            }
            // The transport service stays registered, with no provider and no connection.
            ServiceReference<SmbDirect> still = context.getServiceReference(SmbDirect.class);
            assertNotNull(still, "the SmbDirect service is still registered");
            assertEquals(serviceId, still.getProperty("service.id"), "the same registration");
            assertNull(smbDirect.provider());
            assertEquals(List.of(), smbDirect.connections());
            assertTrue(smbDirect.statistics().terminations().getOrDefault(TerminationReason.PROVIDER_STOPPED, 0L)
                    >= 2 * CONNECTIONS, smbDirect.statistics().toString());
            Endpoints.await("the provider's threads have ended",
                    () -> threads("smbdirect-sim-itest-stop").isEmpty());

            sim.start();

            Endpoints.await("the transport uses the restarted provider",
                    () -> "sim/itest-stop".equals(smbDirect.provider()));
            Endpoints.await("the listener follows the restarted provider", () -> e.listener.localAddress() != null);
            Endpoints.Pair again = e.connect();
            assertEquals("sim/itest-stop", again.active.connection.parameters().provider());
            again.exchange("after the provider bundle restarted");

            assertEquals(engineThreads, threads("smbdirect-engine-", "smbdirect-timers"),
                    "the engine's threads are the same fixed pool before and after the cycle");
            assertEquals(List.of(), uncaught, "uncaught exceptions");
            assertEquals(List.of(), frameworkErrors.stream().map(ev -> ev.getBundle() + ": " + ev.getThrowable())
                    .collect(Collectors.toList()), "framework errors");
            List<String> problems = logs.records.stream().filter(r -> r.getThrown() != null
                    || r.getMessage().contains("internal error")).map(ProviderBundleStopTest::describe)
                    .collect(Collectors.toList());
            assertEquals(List.of(), problems, "exceptions logged by the engine or the provider");
        } finally {
            context.removeFrameworkListener(errors);
            Thread.setDefaultUncaughtExceptionHandler(previousHandler);
            if (sim.getState() != Bundle.ACTIVE) {
                sim.start();
            }
        }
    }

    private static String describe(LogRecord r) {
        return r.getLevel() + " " + r.getLoggerName() + ": " + r.getMessage() + (r.getThrown() == null ? ""
                : " " + r.getThrown());
    }

    /** Names of the live threads whose name starts with one of the prefixes. */
    private static List<String> threads(String... prefixes) {
        List<String> names = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> t : Thread.getAllStackTraces().entrySet()) {
            for (String p : prefixes) {
                if (t.getKey().getName().startsWith(p) && t.getKey().isAlive()) {
                    names.add(t.getKey().getName());
                }
            }
        }
        names.sort(null);
        return names;
    }
}
