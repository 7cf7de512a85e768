package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.Supplier;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;

/**
 * Sim providers on a fabric of their own, and transports on one virtual clock, closed together.
 */
final class Fixture implements AutoCloseable {
    static final Duration TIMEOUT = RawPeer.TIMEOUT;

    final VirtualScheduler clock = new VirtualScheduler();
    final String fabric = "protocol-test-" + UUID.randomUUID();
    private final List<SmbDirectTransport> transports = new ArrayList<>();
    private final List<RdmaProvider> providers = new ArrayList<>();

    /** A sim provider on this fixture's fabric, with extra sim configuration. */
    RdmaProvider provider(Map<String, Object> extra) throws Exception {
        Map<String, Object> cfg = new HashMap<>(extra);
        cfg.put("fabric", fabric);
        for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
            if (f.type().equals("sim")) {
                RdmaProvider p = f.create(cfg).get(0);
                providers.add(p);
                return p;
            }
        }
        throw new IllegalStateException("no sim RdmaProviderFactory on the test class path");
    }

    RdmaProvider provider() throws Exception {
        return provider(Map.of());
    }

    SmbDirectTransport transport(SmbDirectConfig config, RdmaProvider provider) {
        SmbDirectTransport t = new SmbDirectTransport(config, clock, false);
        t.addProvider(provider, 0, transports.size());
        transports.add(t);
        return t;
    }

    InetSocketAddress anyAddress(RdmaProvider p) {
        return new InetSocketAddress(p.addresses().get(0), 0);
    }

    /** Waits, without sleeping for fixed times, until a condition over a connection's state holds. */
    static <T> T until(ConnectionHandle c, Function<Connection, T> query, Predicate<T> done)
            throws Exception {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        T v;
        do {
            v = c.inspect(query).get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            if (done.test(v)) {
                return v;
            }
            Thread.onSpinWait();
            Thread.yield();
        } while (System.nanoTime() < deadline);
        throw new AssertionError("condition not reached; last value " + v);
    }

    /** Waits until a supplier yields a non-null value. */
    static <T> T await(Supplier<T> s) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        T v;
        while ((v = s.get()) == null && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertNotNull(v, "condition not reached");
        return v;
    }

    /** Waits until the transport has counted a termination for {@code reason}. */
    static void awaitTermination(SmbDirectTransport t, org.smbdirect.transport.TerminationReason reason)
            throws InterruptedException {
        await(() -> t.statistics().terminations().containsKey(reason) ? Boolean.TRUE : null);
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    static ConnectionHandle impl(SmbDirectConnection c) {
        return (ConnectionHandle) c;
    }

    @Override
    public void close() {
        for (SmbDirectTransport t : transports) {
            t.close();
        }
        for (RdmaProvider p : providers) {
            p.close();
        }
    }
}
