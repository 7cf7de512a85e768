package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.TransportType;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * What ksmbd's SMB Direct listener refuses, and what the engine says of it. Linux 7's ksmbd (the
 * shared {@code fs/smb/smbdirect} module) listens on 445 and on 5445 on every device but takes
 * InfiniBand and RoCE on 445 only and iWARP on 5445 only (the ports of MS-SMB2 2.1), and refuses a
 * connection request while more than 10 are pending (accepted by RDMA but not yet negotiated);
 * Linux 6.1's listens on one port, 5445 where an iWARP device is present and 445 otherwise, and has
 * no such limit. The engine's error names what the refusal can mean.
 */
class KsmbdListenerTest {
    private static final int WAIT_SECONDS = 120;
    /** ksmbd 7's listen backlog (smb_direct_listen: smbdirect_socket_listen(sc, 10)). */
    private static final int BACKLOG = 10;

    private static SmbDirect engine;

    @BeforeAll
    static void startKsmbd() throws Exception {
        Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
        engine = Guest.engine(SmbDirectConfig.defaults());
    }

    @AfterAll
    static void stopKsmbd() throws Exception {
        if (engine != null) {
            engine.close();
        }
        Guest.peersResult(60, "ksmbd-stop");
    }

    private static boolean iwarp() {
        return Guest.transport().equals("siw");
    }

    /**
     * MS-SMBD 3.1.4.1: the connection to the other transport's port fails, and the engine says whose
     * port it is. Linux 6.1's ksmbd listens on one port; Linux 7's on both, each restricted to its
     * transport's devices: on RoCE nobody listens at 5445. On iWARP, which runs over TCP, port 445
     * is ksmbd's SMB over TCP listener: it reads the MPA request as an SMB2 length and resets the
     * connection, which the engine sees as a rejection.
     */
    @Test
    void otherTransportsPort_refused_theEngineSaysWhosePortItIs() throws Exception {
        int other = iwarp() ? 445 : 5445;
        SmbDirectException e = assertThrows(SmbDirectException.class, () -> engine.connect(
                new InetSocketAddress(Guest.address(), other), (c, m, t) -> { }, Duration.ofSeconds(WAIT_SECONDS)));
        String message = String.valueOf(e.getMessage());
        Guest.record(Guest.kernel() + " " + Guest.transport() + " engine -> ksmbd on port " + other + ": " + message);
        assertTrue(message.contains("CONNECTION_REFUSED") && message.contains("port " + other + " is SMB Direct's port for "
                + (iwarp() ? "InfiniBand and RoCE" : "iWARP")), message);
        if (!iwarp()) {
            assertTrue(message.contains("nobody listens"), message);
        }
        // and the right port takes the engine
        try (SmbDirectConnection c = engine.connect(new InetSocketAddress(Guest.address(), 0), (conn, m, t) -> { },
                Duration.ofSeconds(WAIT_SECONDS))) {
            assertEquals(iwarp() ? 5445 : 445, c.remoteAddress().getPort());
        }
    }

    /**
     * Eleven RDMA connections to ksmbd that never send a Negotiate Request stay pending at ksmbd
     * for its negotiation timeout (5 s in Linux 7); a twelfth request meanwhile is refused by Linux
     * 7's ksmbd (its backlog of 10) and the engine's error says a busy server refuses such requests,
     * while Linux 6.1's ksmbd accepts it. Once the pending ones are gone the engine connects (to
     * Linux 7.2's ksmbd only after a restart: see below).
     */
    @Test
    void moreThanTenPending_linux7Refuses_theEngineSaysTheServerIsBusy() throws Exception {
        Guest.peers("dmesg-mark");
        List<RdmaProvider> providers = Guest.providers();
        RdmaProvider provider = providers.get(0);
        List<Endpoint> pending = new ArrayList<>();
        try {
            pending.addAll(connectSilently(provider, BACKLOG + 1));
            long start = System.nanoTime();
            String outcome;
            try (SmbDirectConnection c = engine.connect(new InetSocketAddress(Guest.address(), 0), (conn, m, t) -> { },
                    Duration.ofSeconds(WAIT_SECONDS))) {
                outcome = "connected";
            } catch (SmbDirectException e) {
                outcome = String.valueOf(e.getMessage());
            }
            long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            Guest.record(Guest.kernel() + " " + Guest.transport() + " engine -> ksmbd with " + pending.size()
                    + " connections pending there: " + outcome + " (" + millis + " ms)");
            if (Guest.linux7()) {
                assertTrue(outcome.contains("more than 10 connection requests are pending"),
                        "ksmbd 7 refuses a request beyond its backlog, and the engine says so: " + outcome);
                String log = Guest.peers("dmesg-since-mark");
                assertTrue(log.contains("full pending["), "ksmbd logged its full backlog:\n" + log);
            } else {
                assertEquals("connected", outcome, "ksmbd 6.1 has no backlog of pending requests");
            }
        } finally {
            pending.forEach(Endpoint::close);
            providers.forEach(RdmaProvider::close);
        }
        // Linux 6.1's ksmbd takes the next request at once. Linux 7.2's reaps a pending connection
        // that failed (its peer left, or its negotiation timed out) only when the listener itself is
        // released (fs/smb/smbdirect/socket.c), so it may go on refusing after the silent ones have
        // gone: what it did is recorded, and a restart of ksmbd has to make the engine welcome again.
        String refusedAfter = connectOnce();
        long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (refusedAfter != null && System.nanoTime() < waitUntil) {
            Thread.sleep(1000);
            refusedAfter = connectOnce();
        }
        Guest.record(Guest.kernel() + " " + Guest.transport() + " ksmbd after the pending connections left: "
                + (refusedAfter == null ? "takes requests again" : "still refuses 10 s later (" + refusedAfter + ")"));
        if (!Guest.linux7()) {
            assertEquals(null, refusedAfter, "ksmbd 6.1 takes a request once the pending ones are gone");
        } else if (refusedAfter != null) {
            Guest.peers("ksmbd-stop");
            Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
            assertEquals(null, connectOnce(), "the engine connects to a restarted ksmbd");
        }
    }

    /** One connection attempt of the engine to ksmbd's port: {@code null} when it connected, else why not. */
    private static String connectOnce() throws Exception {
        try (SmbDirectConnection c = engine.connect(new InetSocketAddress(Guest.address(), 0), (conn, m, t) -> { },
                Duration.ofSeconds(WAIT_SECONDS))) {
            return null;
        } catch (SmbDirectException e) {
            return e.getMessage();
        }
    }

    /**
     * {@code count} RDMA connections to ksmbd's port, established at once and then left silent: no
     * SMB Direct Negotiate Request follows (MS-SMBD 3.1.5.2), so ksmbd keeps each pending. On
     * iWARP each carries the IRD/ORD header of MS-SMBD 6, as the engine sends it. Those the server
     * refused are left out.
     */
    private static List<Endpoint> connectSilently(RdmaProvider provider, int count) throws Exception {
        TransportType type = provider.capabilities().transportType();
        int port = type.smbDirectPort();
        byte[] privateData = type == TransportType.IWARP ? ByteBuffer.allocate(8).putInt(16).putInt(16).array() : null;
        List<Endpoint> endpoints = new ArrayList<>();
        List<CompletableFuture<String>> outcomes = new ArrayList<>();
        CountDownLatch go = new CountDownLatch(1);
        for (int i = 0; i < count; i++) {
            CompletionQueue cq = provider.createCompletionQueue(16, q -> { });
            cq.arm(ArmType.ANY);
            CompletableFuture<String> outcome = new CompletableFuture<>();
            Endpoint ep = provider.createEndpoint(EndpointOptions.builder(cq, cq).sendQueueDepth(4).receiveQueueDepth(4)
                    .build(), new ConnectionListener() {
                        @Override
                        public void onEstablished(Endpoint endpoint) {
                            outcome.complete("established");
                        }

                        @Override
                        public void onDisconnected(Endpoint endpoint) {
                            outcome.complete("disconnected");
                        }

                        @Override
                        public void onError(Endpoint endpoint, RdmaStatus status, String reason) {
                            outcome.complete(status + ": " + reason);
                        }
                    });
            endpoints.add(ep);
            outcomes.add(outcome);
        }
        List<Thread> threads = new ArrayList<>();
        for (Endpoint ep : endpoints) {
            Thread t = new Thread(() -> {
                try {
                    go.await();
                    ep.connect(new InetSocketAddress(Guest.address(), port), privateData, 16, 16);
                } catch (Exception e) {
                    // the outcome says it
                }
            });
            t.start();
            threads.add(t);
        }
        go.countDown();
        for (Thread t : threads) {
            t.join();
        }
        List<Endpoint> established = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String o = outcomes.get(i).get(WAIT_SECONDS, TimeUnit.SECONDS);
            if (o.equals("established")) {
                established.add(endpoints.get(i));
            } else {
                endpoints.get(i).close();
            }
        }
        assertTrue(established.size() > BACKLOG, "at least " + (BACKLOG + 1) + " silent connections established: "
                + established.size());
        return established;
    }
}
