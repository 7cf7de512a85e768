package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * Backpressure without collateral damage: an upper-layer handler that blocks holds up its own
 * connection only. Keepalives and their timers run on the virtual clock.
 */
class SlowHandlerTest {
    private static final int CONNECTIONS = 64;
    private Fixture fx;
    private RdmaProvider serverSide;
    private RdmaProvider clientSide;

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        serverSide = fx.provider();
        clientSide = fx.provider();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /** Echoes every message, except that connection 0's handler blocks on its first one for up to 10 s. */
    private static final class Server implements ConnectionHandler {
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch blocked = new CountDownLatch(1);
        final AtomicInteger echoed = new AtomicInteger();
        volatile SmbDirectConnection slow;
        /** Whether the slow handler is inside its 10 s wait. */
        volatile boolean blocking;

        @Override
        public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt token) {
            if (c == slow && blocked.getCount() > 0) {
                blocking = true;
                blocked.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    blocking = false;
                }
            }
            byte[] copy = new byte[message.remaining()];
            message.get(copy);
            c.send(ByteBuffer.wrap(copy));
            echoed.incrementAndGet();
        }
    }

    @Test
    void handlerBlocked10s_onOneConnection_63OthersKeepTheirMessagesKeepalivesAndTimers() throws Exception {
        SmbDirectConfig config = SmbDirectConfig.builder().engineThreads(2).build();
        SmbDirectTransport server = fx.transport(config, serverSide);
        SmbDirectTransport client = fx.transport(config, clientSide);
        Server echo = new Server();
        List<SmbDirectConnection> accepted = java.util.Collections.synchronizedList(new ArrayList<>());
        SmbDirectListener l = server.listen(fx.anyAddress(serverSide), c -> {
            accepted.add(c);
            return echo;
        });
        List<SmbDirectConnection> clients = new ArrayList<>();
        List<Recorder> answers = new ArrayList<>();
        for (int i = 0; i < CONNECTIONS; i++) {
            Recorder r = new Recorder();
            clients.add(client.connect(l.localAddress(), r, Fixture.TIMEOUT));
            answers.add(r);
        }
        Fixture.await(() -> accepted.size() == CONNECTIONS ? Boolean.TRUE : null);
        // The server side of the first client connection is the slow one.
        SmbDirectConnection slowClient = clients.get(0);
        for (SmbDirectConnection s : accepted) {
            if (s.remoteAddress().equals(slowClient.localAddress())) {
                echo.slow = s;
            }
        }
        slowClient.send(ByteBuffer.wrap(new byte[] {-1}));
        assertTrue(echo.blocked.await(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));

        // Messages: every other connection's ten messages are echoed while the handler is blocked.
        for (int i = 1; i < CONNECTIONS; i++) {
            for (int k = 0; k < 10; k++) {
                clients.get(i).send(ByteBuffer.wrap(new byte[] {(byte) i, (byte) k}));
            }
        }
        for (int i = 1; i < CONNECTIONS; i++) {
            for (int k = 0; k < 10; k++) {
                byte[] m = answers.get(i).message().data;
                assertEquals(i, m[0]);
                assertEquals(k, m[1]);
            }
        }
        assertTrue(echo.blocking, "still blocked");

        // Keepalives and their timers (3.1.6.2): 120 s idle, a keepalive is requested on each
        // connection (by either side, or both) and answered in time.
        fx.clock.advance(Duration.ofSeconds(120));
        for (int i = 1; i < CONNECTIONS; i++) {
            Fixture.until(Fixture.impl(clients.get(i)), x -> x.model.keepaliveRequested
                    == DataModel.KeepaliveRequested.NONE
                    && x.statistics().keepalivesSent() + x.statistics().keepalivesReceived() >= 1, v -> v);
        }
        fx.clock.advance(Duration.ofSeconds(6)); // beyond the keepalive response timeout
        for (int i = 1; i < CONNECTIONS; i++) {
            ConnectionHandle c = Fixture.impl(clients.get(i));
            // twice: the second query runs after whatever the timers signalled was processed
            Fixture.get(c.inspect(x -> x.lifecycle.state()));
            assertEquals(ConnectionStateMachine.State.ESTABLISHED, Fixture.get(c.inspect(x -> x.lifecycle.state())),
                    "connection " + i + " kept alive");
        }
        // A new connection is set up (negotiation timers) while the handler is still blocked.
        Recorder late = new Recorder();
        SmbDirectConnection extra = client.connect(l.localAddress(), late, Fixture.TIMEOUT);
        extra.send(ByteBuffer.wrap(new byte[] {42}));
        assertEquals(42, late.message().data[0]);
        assertTrue(echo.blocking, "all of the above happened while the handler was blocked");
        assertTrue(server.engineHandOvers() >= 1, "the blocked loop moved to a new thread");

        // Released, the slow connection's message is answered too (unless its own peer gave up on
        // the keepalive it could not answer, which only that connection pays for).
        echo.release.countDown();
        if (slowClient.isOpen()) {
            answers.get(0).message();
        }
        assertEquals(CONNECTIONS - 1, countOpen(clients.subList(1, CONNECTIONS)));
    }

    private static int countOpen(List<SmbDirectConnection> cs) {
        int n = 0;
        for (SmbDirectConnection c : cs) {
            n += c.isOpen() ? 1 : 0;
        }
        return n;
    }
}
