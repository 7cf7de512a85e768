package org.smbdirect.itest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;

/**
 * Two SMB Direct endpoints on one transport service: a listener, and connections made to it by the
 * same service, each end with an upper layer that records what it is told. Closes everything it
 * opened.
 */
final class Endpoints implements AcceptHandler, AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(30);

    /** One end of a connection and what its upper layer saw. */
    static final class Side implements ConnectionHandler {
        volatile SmbDirectConnection connection;
        final BlockingQueue<byte[]> messages = new LinkedBlockingQueue<>();
        final CompletableFuture<ConnectionLoss> loss = new CompletableFuture<>();

        @Override
        public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
            byte[] copy = new byte[message.remaining()];
            message.duplicate().get(copy);
            messages.add(copy);
        }

        @Override
        public void onConnectionLost(SmbDirectConnection c, ConnectionLoss l) {
            loss.complete(l);
        }

        byte[] next() throws InterruptedException {
            byte[] m = messages.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(m, "no message arrived at " + connection);
            return m;
        }

        ConnectionLoss awaitLoss() throws Exception {
            return loss.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Both ends of one connection. */
    static final class Pair {
        final Side active;
        final Side passive;

        Pair(Side active, Side passive) {
            this.active = active;
            this.passive = passive;
        }

        /** Sends a message each way (and one that needs several fragments) and checks that each arrives intact. */
        void exchange(String tag) throws Exception {
            send(active, passive, (tag + ": active to passive").getBytes(StandardCharsets.UTF_8));
            send(passive, active, (tag + ": passive to active").getBytes(StandardCharsets.UTF_8));
            byte[] big = new byte[20000];
            for (int i = 0; i < big.length; i++) {
                big[i] = (byte) (i * 31 + tag.length());
            }
            send(active, passive, big);
        }

        private static void send(Side from, Side to, byte[] data) throws Exception {
            from.connection.sendAndWait(ByteBuffer.wrap(data), TIMEOUT);
            assertArrayEquals(data, to.next());
        }
    }

    private final SmbDirect transport;
    final SmbDirectListener listener;
    private final BlockingQueue<Side> accepted = new LinkedBlockingQueue<>();
    private final List<Side> sides = new CopyOnWriteArrayList<>();

    /** Listens on the wildcard address (the preferred provider's address), on a port it chooses. */
    Endpoints(SmbDirect transport) throws SmbDirectException {
        this.transport = transport;
        this.listener = transport.listen(new InetSocketAddress(0), this);
    }

    @Override
    public ConnectionHandler onConnection(SmbDirectConnection connection) {
        Side s = new Side();
        s.connection = connection;
        sides.add(s);
        accepted.add(s);
        return s;
    }

    /** Connects to the listener and waits for both ends. */
    Pair connect() throws Exception {
        InetSocketAddress to = await("the listener has an address", listener::localAddress);
        Side a = new Side();
        sides.add(a);
        a.connection = transport.connect(to, a, TIMEOUT);
        Side p = accepted.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(p, "the listener did not accept the connection");
        return new Pair(a, p);
    }

    List<Side> sides() {
        return sides;
    }

    @Override
    public void close() {
        listener.close();
        for (Side s : sides) {
            if (s.connection != null) {
                s.connection.close();
            }
        }
    }

    /** Waits until a condition holds (asynchronous framework events: service changes, configuration delivery). */
    static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(10);
        }
    }

    /** Waits until a supplier gives a non-null value, and returns it. */
    static <T> T await(String what, java.util.function.Supplier<T> value) throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        T v;
        while ((v = value.get()) == null) {
            assertTrue(System.nanoTime() < deadline, "timed out waiting until " + what);
            Thread.sleep(10);
        }
        return v;
    }
}
