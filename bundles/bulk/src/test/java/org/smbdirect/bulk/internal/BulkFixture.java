package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectFactory;

/**
 * Sim providers on a fabric of their own, SMB Direct transports from the protocol module's
 * factory, bulk layers on them; everything closed together. Real clock: tests wait on futures and
 * queues, bounded by {@link #TIMEOUT}.
 */
final class BulkFixture implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(60);
    static final int MIB = 1 << 20;

    final String fabric = "bulk-test-" + UUID.randomUUID();
    private final Deque<AutoCloseable> toClose = new ArrayDeque<>();

    /** How one side is set up. */
    static final class Side {
        final Map<String, Object> sim = new HashMap<>();
        SmbDirectConfig smb = SmbDirectConfig.defaults();
        BulkConfig bulk = BulkConfig.defaults();
        Allocator allocator = Allocator.DIRECT;
        Duration helloTimeout = BulkTransferImpl.HELLO_TIMEOUT;

        Side sim(String key, Object value) {
            sim.put(key, value);
            return this;
        }

        Side smb(SmbDirectConfig c) {
            smb = c;
            return this;
        }

        Side bulk(BulkConfig c) {
            bulk = c;
            return this;
        }

        Side allocator(Allocator a) {
            allocator = a;
            return this;
        }
    }

    static Side side() {
        return new Side();
    }

    RdmaProvider provider(Map<String, Object> extra) throws Exception {
        Map<String, Object> cfg = new HashMap<>(extra);
        cfg.put("fabric", fabric);
        for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
            if (f.type().equals("sim")) {
                RdmaProvider p = f.create(cfg).get(0);
                toClose.push(p);
                return p;
            }
        }
        throw new IllegalStateException("no sim RdmaProviderFactory on the test class path");
    }

    SmbDirect transport(RdmaProvider p, SmbDirectConfig c) {
        SmbDirectFactory f = ServiceLoader.load(SmbDirectFactory.class).findFirst()
                .orElseThrow(() -> new IllegalStateException("no SmbDirectFactory on the test class path"));
        SmbDirect t = f.create(java.util.List.of(p), c);
        toClose.push(t);
        return t;
    }

    /** One side: provider, transport and bulk layer. */
    final class End {
        final RdmaProvider provider;
        final SmbDirect transport;
        final BulkTransferImpl bulk;

        End(Side s) throws Exception {
            provider = provider(s.sim);
            transport = transport(provider, s.smb);
            bulk = new BulkTransferImpl(transport, s.bulk, s.allocator, s.helloTimeout);
        }

        InetSocketAddress anyAddress() {
            return new InetSocketAddress(provider.addresses().get(0), 0);
        }
    }

    End end(Side s) throws Exception {
        return new End(s);
    }

    /** A connected pair of sessions with recording handlers. */
    final class Pair {
        final End serverEnd;
        final End clientEnd;
        final Session client;
        final Session server;
        final Received atClient = new Received();
        final Received atServer = new Received();

        Pair(Side serverSide, Side clientSide) throws Exception {
            serverEnd = new End(serverSide);
            clientEnd = new End(clientSide);
            BlockingQueue<BulkSession> accepted = new LinkedBlockingQueue<>();
            BulkListener l = serverEnd.bulk.listen(serverEnd.anyAddress(), s -> {
                accepted.add(s);
                return atServer;
            });
            toClose.push(l);
            client = (Session) clientEnd.bulk.connect(l.localAddress(), atClient, TIMEOUT);
            server = (Session) accepted.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(server, "the listener got no session");
        }

        /** Neither side has a registration left. */
        void assertNothingRegistered() {
            assertEquals(0, client.connection().statistics().registrationsLive(), "client registrations");
            assertEquals(0, server.connection().statistics().registrationsLive(), "server registrations");
        }
    }

    Pair pair(Side server, Side client) throws Exception {
        return new Pair(server, client);
    }

    /** A handler that records what it is given. */
    static final class Received implements BulkHandler {
        final BlockingQueue<ByteBuffer> data = new LinkedBlockingQueue<>();
        final BlockingQueue<ConnectionLoss> closed = new LinkedBlockingQueue<>();
        final BlockingQueue<Thread> threads = new LinkedBlockingQueue<>();
        /** Optional reaction run inside onData, after recording. */
        volatile java.util.function.BiConsumer<BulkSession, ByteBuffer> reaction;

        @Override
        public void onData(BulkSession session, ByteBuffer d) {
            threads.add(Thread.currentThread());
            data.add(d);
            java.util.function.BiConsumer<BulkSession, ByteBuffer> r = reaction;
            if (r != null) {
                r.accept(session, d);
            }
        }

        @Override
        public void onClosed(BulkSession session, ConnectionLoss loss) {
            closed.add(loss);
        }

        ByteBuffer next() throws InterruptedException {
            ByteBuffer b = data.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(b, "nothing delivered within " + TIMEOUT);
            return b;
        }

        ConnectionLoss loss() throws InterruptedException {
            ConnectionLoss l = closed.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(l, "the session did not close within " + TIMEOUT);
            return l;
        }
    }

    /** {@code n} pseudo-random bytes from {@code seed}, direct or on the heap. */
    static ByteBuffer data(int n, long seed, boolean direct) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        ByteBuffer out = direct ? ByteBuffer.allocateDirect(n) : ByteBuffer.allocate(n);
        return out.put(b).flip();
    }

    static long crc(ByteBuffer b) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate());
        return c.getValue();
    }

    static <T> T get(CompletionStage<T> f) throws Exception {
        return f.toCompletableFuture().get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    static Throwable failure(CompletionStage<?> f) throws Exception {
        CompletableFuture<?> c = f.toCompletableFuture();
        try {
            c.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("completed normally, a failure was expected");
    }

    @Override
    public void close() {
        while (!toClose.isEmpty()) {
            try {
                toClose.pop().close();
            } catch (Exception e) {
                // best effort
            }
        }
    }
}
