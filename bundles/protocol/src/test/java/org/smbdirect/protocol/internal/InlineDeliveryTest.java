package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * Handlers that say they never block ({@link ConnectionHandler#nonBlocking()}) are called on the
 * thread that takes their connection's completions, the provider's, with no hand-over to an engine
 * thread; the others stay on the engine's threads. One that blocks all the same is moved back.
 */
class InlineDeliveryTest {
    private static final String FABRIC_THREAD = "smbdirect-sim-";
    private static final String ENGINE_THREAD = "smbdirect-engine-";
    /**
     * Where a step runs is decided per step: one that finds its connection busy (a timer, a
     * connection event, the caller's own send still posting) leaves its work to the engine loop.
     * So the inline path is asserted for most steps, not for every one; a connection that never ran
     * inline has none.
     */
    private static final int ROUNDS = 20;
    private Fixture fx;
    private RdmaProvider serverProvider;
    private SmbDirectTransport server;
    private SmbDirectTransport client;

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        serverProvider = fx.provider();
        server = fx.transport(SmbDirectConfig.defaults(), serverProvider);
        client = fx.transport(SmbDirectConfig.defaults(), fx.provider());
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /** Records each message with the name of the thread it was delivered on. */
    private static final class ThreadRecorder implements ConnectionHandler {
        final BlockingQueue<String> threads = new LinkedBlockingQueue<>();
        final BlockingQueue<ConnectionLoss> losses = new LinkedBlockingQueue<>();
        volatile Thread last;

        @Override
        public void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken) {
            last = Thread.currentThread();
            threads.add(last.getName());
        }

        @Override
        public void onConnectionLost(SmbDirectConnection connection, ConnectionLoss loss) {
            losses.add(loss);
        }

        String next() throws InterruptedException {
            String t = threads.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(t, "no message delivered");
            return t;
        }
    }

    /** A listener whose accepted connections get the handler {@code accepted} makes. */
    private SmbDirectListener listen(ConnectionHandler handler) throws Exception {
        return server.listen(fx.anyAddress(serverProvider), c -> handler);
    }

    @Test
    void nonBlockingHandler_isCalledOnTheCompletionThread_aDefaultOneOnAnEngineThread() throws Exception {
        ThreadRecorder inline = new ThreadRecorder();
        ThreadRecorder engine = new ThreadRecorder();
        SmbDirectListener l = listen(ConnectionHandler.nonBlocking(inline));
        SmbDirectConnection toInline = client.connect(l.localAddress(), engine, Fixture.TIMEOUT);
        int onFabric = 0;
        for (int i = 0; i < ROUNDS; i++) {
            toInline.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            String t = inline.next();
            assertTrue(t.startsWith(FABRIC_THREAD) || t.startsWith(ENGINE_THREAD), t);
            onFabric += t.startsWith(FABRIC_THREAD) ? 1 : 0;
        }
        assertTrue(onFabric > ROUNDS / 2, "server side, non-blocking: " + onFabric + " of " + ROUNDS
                + " messages on the fabric's thread");
        SmbDirectConnection accepted = Fixture.await(() -> server.connections().isEmpty() ? null
                : server.connections().get(0));
        assertTrue(Fixture.impl(accepted).engine().staysInline());
        assertFalse(Fixture.impl(toInline).engine().staysInline());
        for (int i = 0; i < ROUNDS; i++) {
            accepted.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            String t = engine.next();
            assertTrue(t.startsWith(ENGINE_THREAD), "client side: default, always on the engine, not " + t);
        }
    }

    @Test
    void nonBlockingConnection_completesItsSendsAndRdmaOnTheCompletionThread() throws Exception {
        // With the fabric's latency model on, a completion comes a little later (from the fabric's
        // timer, through a fabric thread), so the test has chained to the operation's stage by then.
        Map<String, Object> latency = Map.of("latency.enabled", true, "latency.microseconds", 200);
        RdmaProvider slowServerProvider = fx.provider(latency);
        SmbDirectTransport slowServer = fx.transport(SmbDirectConfig.defaults(), slowServerProvider);
        SmbDirectTransport slowClient = fx.transport(SmbDirectConfig.defaults(), fx.provider(latency));
        ThreadRecorder serverSide = new ThreadRecorder();
        SmbDirectListener l = slowServer.listen(fx.anyAddress(slowServerProvider), x -> serverSide);
        ThreadRecorder clientSide = new ThreadRecorder();
        SmbDirectConnection c = slowClient.connect(l.localAddress(), ConnectionHandler.nonBlocking(clientSide),
                Fixture.TIMEOUT);
        SmbDirectConnection accepted = Fixture.await(() -> slowServer.connections().isEmpty() ? null
                : slowServer.connections().get(0));
        RegisteredBuffer remote = accepted.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ_WRITE);
        List<BufferDescriptorV1> descriptors = remote.descriptors();
        BlockingQueue<String> sendsDone = new LinkedBlockingQueue<>();
        BlockingQueue<String> readsDone = new LinkedBlockingQueue<>();
        ByteBuffer local = ByteBuffer.allocateDirect(4096);
        String test = Thread.currentThread().getName();
        // A stage completed on the completion thread runs what was chained to it there; one that
        // completed before the chaining runs it on the chaining thread (the test's), which says
        // nothing of where it completed. So rounds go on until ROUNDS of each were seen elsewhere.
        for (int i = 0; i < 10 * ROUNDS && (seen(sendsDone, test) < ROUNDS || seen(readsDone, test) < ROUNDS); i++) {
            CompletableFuture<Void> sent = c.send(ByteBuffer.wrap(new byte[] {1})).toCompletableFuture();
            sent.thenRun(() -> sendsDone.add(Thread.currentThread().getName()));
            sent.get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            serverSide.next();
            CompletableFuture<Void> read = c.rdmaRead(local, descriptors, 0).toCompletableFuture();
            read.thenRun(() -> readsDone.add(Thread.currentThread().getName()));
            read.get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
        assertMostlyInline("send completions", sendsDone, test);
        assertMostlyInline("RDMA Read completions", readsDone, test);
        remote.close();
    }

    /** How many of the recorded completions ran somewhere other than on the test's thread. */
    private static long seen(BlockingQueue<String> threads, String test) {
        return threads.stream().filter(t -> !t.equals(test)).count();
    }

    /**
     * Of the completions that had not happened before the test chained to them (those run on the
     * test's thread), at least {@link #ROUNDS} were seen, more on the fabric's threads than on the
     * engine's; none elsewhere.
     */
    private static void assertMostlyInline(String what, BlockingQueue<String> threads, String test) {
        List<String> all = new ArrayList<>(threads);
        long onFabric = all.stream().filter(t -> t.startsWith(FABRIC_THREAD)).count();
        long onEngine = all.stream().filter(t -> t.startsWith(ENGINE_THREAD)).count();
        long onTest = all.stream().filter(test::equals).count();
        assertEquals(all.size(), onFabric + onEngine + onTest, what + ": " + all);
        assertTrue(onFabric + onEngine >= ROUNDS, what + ": only " + (onFabric + onEngine) + " of " + all.size()
                + " were still pending when the test chained to them");
        assertTrue(onFabric > onEngine, what + ": " + onFabric + " on the fabric's threads, " + onEngine
                + " on the engine's: " + all);
    }

    @Test
    void blockingCallInsideNonBlockingHandler_isRefused() throws Exception {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CountDownLatch tried = new CountDownLatch(1);
        SmbDirectListener l = listen(ConnectionHandler.nonBlocking((c, m, t) -> {
            try {
                c.sendAndWait(ByteBuffer.wrap(new byte[] {2}), Duration.ofSeconds(1));
            } catch (Throwable e) {
                thrown.set(e);
            }
            tried.countDown();
        }));
        ThreadRecorder answers = new ThreadRecorder();
        SmbDirectConnection c = client.connect(l.localAddress(), answers, Fixture.TIMEOUT);
        c.send(ByteBuffer.wrap(new byte[] {1}));
        assertTrue(tried.await(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        assertInstanceOf(IllegalStateException.class, thrown.get());
        assertTrue(c.isOpen(), "the refusal ends nothing");
    }

    @Test
    void nonBlockingHandlerThatBlocks_isMovedToTheEngine_andOtherConnectionsCarryOn() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(1);
        BlockingQueue<String> slowThreads = new LinkedBlockingQueue<>();
        // the first connection's handler blocks on its first message taken on the fabric's thread
        // (one that found the connection busy went to the engine), though it says it never blocks
        ConnectionHandler slow = ConnectionHandler.nonBlocking((c, m, t) -> {
            String thread = Thread.currentThread().getName();
            boolean block = blocking.getCount() > 0 && thread.startsWith(FABRIC_THREAD);
            if (block) {
                blocking.countDown();
            }
            // recorded after the latch: the test sends no second message to a handler about to block
            slowThreads.add(thread);
            if (block) {
                try {
                    release.await(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        ThreadRecorder others = new ThreadRecorder();
        // The first connection accepted gets the slow handler. Which client's that is, is known
        // only afterwards: a server may finish accepting one connection after the next.
        AtomicReference<SmbDirectConnection> slowAccepted = new AtomicReference<>();
        SmbDirectListener l = server.listen(fx.anyAddress(serverProvider),
                c -> slowAccepted.compareAndSet(null, c) ? slow : ConnectionHandler.nonBlocking(others));
        List<SmbDirectConnection> quick = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            quick.add(client.connect(l.localAddress(), new ThreadRecorder(), Fixture.TIMEOUT));
        }
        SmbDirectConnection slowAtServer = Fixture.await(slowAccepted::get);
        SmbDirectConnection slowClient = quick.stream()
                .filter(q -> q.localAddress().equals(slowAtServer.remoteAddress())).findFirst().orElseThrow();
        quick.remove(slowClient);
        ConnectionHandle slowServer = Fixture.impl(slowAtServer);
        assertTrue(slowServer.engine().staysInline());

        // Until a message reaches the handler on the fabric's thread; that one blocks. A message sent
        // after it would wait behind the held step, so the loop stops on what the handler saw.
        String got = "";
        for (int i = 0; i < ROUNDS && !got.startsWith(FABRIC_THREAD); i++) {
            slowClient.send(ByteBuffer.wrap(new byte[] {1}));
            got = slowThreads.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(got, "message " + i + " not delivered");
        }
        assertEquals(0, blocking.getCount(), "none of " + ROUNDS + " messages reached the handler on the fabric's thread");
        // While it blocks, the other connections' messages go through.
        for (int round = 0; round < 3; round++) {
            for (SmbDirectConnection q : quick) {
                q.send(ByteBuffer.wrap(new byte[] {2}));
                others.next();
            }
        }
        // The engine's monitor sees the step hold the provider's thread and moves the connection.
        Fixture.await(() -> slowServer.engine().staysInline() ? null : Boolean.TRUE);
        release.countDown();
        slowClient.send(ByteBuffer.wrap(new byte[] {3}));
        String after = slowThreads.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(after);
        assertTrue(after.startsWith(ENGINE_THREAD), after);
        assertTrue(slowClient.isOpen());
        for (SmbDirectConnection q : quick) {
            q.send(ByteBuffer.wrap(new byte[] {4}));
            assertTrue(others.next().startsWith(FABRIC_THREAD), "the others stay where they were");
        }
    }

    @Test
    void nonBlockingWrapper_delegatesAndSaysSo() {
        ThreadRecorder r = new ThreadRecorder();
        ConnectionHandler h = ConnectionHandler.nonBlocking(r);
        assertTrue(h.nonBlocking());
        assertFalse(r.nonBlocking(), "the default");
        h.onMessage(null, ByteBuffer.allocate(1), OptionalInt.empty());
        assertSame(Thread.currentThread(), r.last);
        ConnectionLoss loss = new ConnectionLoss(org.smbdirect.transport.TerminationReason.LOCAL_CLOSE, "x");
        h.onConnectionLost(null, loss);
        assertEquals(loss, r.losses.poll());
    }
}
