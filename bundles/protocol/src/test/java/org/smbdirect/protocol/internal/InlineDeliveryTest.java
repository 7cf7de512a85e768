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
        for (int i = 0; i < 5; i++) {
            toInline.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            assertTrue(inline.next().startsWith(FABRIC_THREAD), "server side: non-blocking, on the fabric");
        }
        SmbDirectConnection accepted = Fixture.await(() -> server.connections().isEmpty() ? null
                : server.connections().get(0));
        assertTrue(Fixture.impl(accepted).engine().runsInline());
        assertFalse(Fixture.impl(toInline).engine().runsInline());
        for (int i = 0; i < 5; i++) {
            accepted.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            assertTrue(engine.next().startsWith(ENGINE_THREAD), "client side: default, on the engine");
        }
    }

    @Test
    void nonBlockingConnection_completesItsSendsAndRdmaOnTheCompletionThread() throws Exception {
        ThreadRecorder serverSide = new ThreadRecorder();
        SmbDirectListener l = listen(serverSide);
        ThreadRecorder clientSide = new ThreadRecorder();
        SmbDirectConnection c = client.connect(l.localAddress(), ConnectionHandler.nonBlocking(clientSide),
                Fixture.TIMEOUT);
        SmbDirectConnection accepted = Fixture.await(() -> server.connections().isEmpty() ? null
                : server.connections().get(0));
        RegisteredBuffer remote = accepted.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ_WRITE);
        List<BufferDescriptorV1> descriptors = remote.descriptors();
        AtomicReference<String> sendDone = new AtomicReference<>();
        AtomicReference<String> readDone = new AtomicReference<>();
        // Warm: the first operations register; the later ones are the steady state.
        for (int i = 0; i < 3; i++) {
            c.send(ByteBuffer.wrap(new byte[] {1})).thenRun(() -> sendDone.set(Thread.currentThread().getName()))
                    .toCompletableFuture().get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            serverSide.next();
            ByteBuffer local = ByteBuffer.allocateDirect(4096);
            CompletableFuture<Void> read = c.rdmaRead(local, descriptors, 0).toCompletableFuture();
            read.thenRun(() -> readDone.set(Thread.currentThread().getName()));
            read.get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
        // A stage completed on the completion thread runs what was chained to it there; one
        // completed before the chaining runs it on the chaining thread (the test's).
        String test = Thread.currentThread().getName();
        assertTrue(sendDone.get().startsWith(FABRIC_THREAD) || sendDone.get().equals(test), sendDone.get());
        assertTrue(readDone.get().startsWith(FABRIC_THREAD) || readDone.get().equals(test), readDone.get());
        remote.close();
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
        // the first connection's handler blocks on its first message, though it says it never blocks
        ConnectionHandler slow = ConnectionHandler.nonBlocking((c, m, t) -> {
            slowThreads.add(Thread.currentThread().getName());
            if (blocking.getCount() > 0) {
                blocking.countDown();
                try {
                    release.await(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        ThreadRecorder others = new ThreadRecorder();
        AtomicReference<ConnectionHandler> next = new AtomicReference<>(slow);
        SmbDirectListener l = server.listen(fx.anyAddress(serverProvider),
                c -> next.getAndSet(ConnectionHandler.nonBlocking(others)));
        SmbDirectConnection slowClient = client.connect(l.localAddress(), new ThreadRecorder(), Fixture.TIMEOUT);
        List<SmbDirectConnection> quick = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            quick.add(client.connect(l.localAddress(), new ThreadRecorder(), Fixture.TIMEOUT));
        }
        ConnectionHandle slowServer = Fixture.impl(Fixture.await(() -> {
            for (SmbDirectConnection s : server.connections()) {
                if (s.remoteAddress().equals(slowClient.localAddress())) {
                    return s;
                }
            }
            return null;
        }));
        assertTrue(slowServer.engine().runsInline());

        slowClient.send(ByteBuffer.wrap(new byte[] {1}));
        assertTrue(blocking.await(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        assertTrue(slowThreads.take().startsWith(FABRIC_THREAD));
        // While it blocks, the other connections' messages go through.
        for (int round = 0; round < 3; round++) {
            for (SmbDirectConnection q : quick) {
                q.send(ByteBuffer.wrap(new byte[] {2}));
                others.next();
            }
        }
        // The engine's monitor sees the step hold the provider's thread and moves the connection.
        Fixture.await(() -> slowServer.engine().runsInline() ? null : Boolean.TRUE);
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
