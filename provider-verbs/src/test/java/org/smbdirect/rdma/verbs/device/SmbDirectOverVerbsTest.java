package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.protocol.internal.Scheduler;
import org.smbdirect.protocol.internal.SmbDirectTransport;
import org.smbdirect.rdma.verbs.internal.EndpointProbe;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * The MS-SMBD engine end to end over the verbs provider on a real RDMA device (Soft-RoCE in the
 * guest): negotiation with the IRD/ORD header of section 6, a 500-byte and a 64 KiB fragmented
 * message, 1 MiB by RDMA Read and by RDMA Write through buffer descriptors, a send with remote
 * invalidate, and a keepalive. Timers run on a virtual clock, so emulation's slowness cannot fire a
 * negotiation timeout and the keepalive needs no waiting.
 */
class SmbDirectOverVerbsTest {
    private static final long TIMEOUT = Fixture.TIMEOUT;

    private Fixture fx;
    private VirtualClock clock;
    private SmbDirectTransport server;
    private SmbDirectTransport client;
    private SmbDirectConnection c;
    private SmbDirectConnection s;
    private final Inbox atClient = new Inbox();
    private final Inbox atServer = new Inbox();

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        clock = new VirtualClock();
        server = new SmbDirectTransport(SmbDirectConfig.defaults(), clock, false);
        client = new SmbDirectTransport(SmbDirectConfig.defaults(), clock, false);
        server.addProvider(fx.provider, 0, 0);
        client.addProvider(fx.provider, 0, 0);
        SmbDirectListener l = server.listen(new InetSocketAddress(fx.address, 0), atServer);
        c = client.connect(l.localAddress(), atClient, Duration.ofMillis(TIMEOUT));
        s = atServer.connections.poll(TIMEOUT, TimeUnit.MILLISECONDS);
        assertNotNull(s, "the server side of the connection");
    }

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
        fx.close();
    }

    /** MS-SMBD 3.1.5.2 / 3.1.5.3 / 6.2: both ends negotiated, the IRD/ORD header answered. */
    @Test
    void negotiation_withIrdOrdHeader() {
        for (SmbDirectConnection x : List.of(c, s)) {
            assertEquals(0x0100, x.parameters().protocolVersion());
            assertEquals(1364, x.parameters().maxSendSize());
            assertEquals(1364, x.parameters().maxReceiveSize(), "min(8192, the peer's PreferredSendSize 1364)");
            assertTrue(x.parameters().ird() > 0 && x.parameters().ord() > 0, "IRD/ORD from the header");
            assertTrue(x.parameters().provider().startsWith("verbs/"));
        }
        assertTrue(c.parameters().initiator());
    }

    /**
     * Example 4.2 and 4.3 sizes: 500 bytes in one message, 64 KiB in fragments of 1340. The
     * engine posts a burst of fragments with {@code RequestFlags.DEFER} but the last, and the
     * provider hands them to the device in chains: far fewer {@code ibv_post_send} calls (system
     * calls on Soft-RoCE) than fragments, on both endpoints together (the receiver's credit
     * messages included).
     */
    @Test
    void messages_500BytesAnd64KiBFragmented() throws Exception {
        byte[] small = pattern(500, 1);
        byte[] large = pattern(65536, 2);
        c.send(ByteBuffer.wrap(small)).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        long fragmentsBefore = c.statistics().fragmentsSent();
        long postsBefore = EndpointProbe.postSendCalls(fx.provider);
        c.send(ByteBuffer.wrap(large)).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        assertArrayEquals(small, atServer.next().data);
        assertArrayEquals(large, atServer.next().data);
        long fragments = c.statistics().fragmentsSent() - fragmentsBefore;
        long posts = EndpointProbe.postSendCalls(fx.provider) - postsBefore;
        assertTrue(fragments >= 49, "65536 / 1340 -> 49 fragments, was " + fragments);
        System.out.println("64 KiB message: " + fragments + " fragments, " + posts + " ibv_post_send calls");
        assertTrue(posts * 2 < fragments, fragments + " fragments took " + posts + " posts");
        s.send(ByteBuffer.wrap(small)).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        assertArrayEquals(small, atClient.next().data);
    }

    /**
     * IPv6 (the guest's RDMA_VM_IP6): the engine listens on an IPv6 address of the device,
     * connects to it from the provider's IPv6 address (the family of the peer decides the local
     * address), negotiates and carries a fragmented message and an RDMA Read.
     */
    @Test
    void ipv6_connectNegotiateSendAndRead() throws Exception {
        InetAddress v6 = fx.provider.addresses().stream()
                .filter(a -> a instanceof Inet6Address && !a.isLinkLocalAddress()).findFirst()
                .orElseThrow(() -> new AssertionError("the device has no global IPv6 address: " + fx.provider.addresses()
                        + " (run-in-vm.sh gives it RDMA_VM_IP6)"));
        SmbDirectListener l = server.listen(new InetSocketAddress(v6, 0), atServer);
        try (SmbDirectConnection c6 = client.connect(l.localAddress(), atClient, Duration.ofMillis(TIMEOUT))) {
            SmbDirectConnection s6 = atServer.connections.poll(TIMEOUT, TimeUnit.MILLISECONDS);
            assertNotNull(s6, "the server side of the IPv6 connection");
            assertEquals(v6, c6.remoteAddress().getAddress());
            assertEquals(v6, c6.localAddress().getAddress(), "connected from the provider's IPv6 address");
            assertEquals(v6, s6.remoteAddress().getAddress());
            byte[] large = pattern(20000, 6);
            c6.send(ByteBuffer.wrap(large)).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
            assertArrayEquals(large, atServer.next().data);
            ByteBuffer exposed = ByteBuffer.allocateDirect(65536).put(pattern(65536, 7)).flip();
            RegisteredBuffer reg = c6.register(exposed, RemoteAccess.READ);
            ByteBuffer into = ByteBuffer.allocateDirect(65536);
            s6.rdmaRead(into, reg.descriptors(), 0).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
            assertEquals(exposed.duplicate().clear(), into.duplicate().clear(), "RDMA Read over IPv6 placed the bytes");
            reg.deregister();
        } finally {
            l.close();
        }
    }

    /** Examples 4.4 and 4.5: 1 MiB by RDMA Read and by RDMA Write through descriptors (3.1.4.3 - 3.1.4.6). */
    @Test
    void rdma_oneMiBByReadAndByWrite() throws Exception {
        int mib = 1 << 20;
        ByteBuffer exposed = ByteBuffer.allocateDirect(mib).put(pattern(mib, 3)).flip();
        RegisteredBuffer reg = c.register(exposed, RemoteAccess.READ_WRITE);
        List<BufferDescriptorV1> d = reg.descriptors();

        ByteBuffer into = ByteBuffer.allocateDirect(mib);
        s.rdmaRead(into, d, 0).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        assertEquals(exposed.duplicate().clear(), into.duplicate().clear(), "RDMA Read placed the bytes");

        ByteBuffer from = ByteBuffer.allocateDirect(mib).put(pattern(mib, 4)).flip();
        s.rdmaWrite(from, d, 0).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        assertEquals(from.duplicate().clear(), exposed.duplicate().clear(), "RDMA Write placed the bytes");
        assertEquals(2L * mib, s.statistics().rdmaReadBytes() + s.statistics().rdmaWriteBytes());
        reg.deregister();
        assertEquals(0, c.statistics().registrationsLive());
    }

    /** MS-SMBD 3.1.4.2 / 3.1.5.8: a send with remote invalidate invalidates the peer's buffer. */
    @Test
    void sendWithRemoteInvalidate_invalidatesThePeersBuffer() throws Exception {
        RegisteredBuffer reg = c.register(ByteBuffer.allocateDirect(8192), RemoteAccess.WRITE);
        int token = reg.descriptors().get(0).token();
        s.sendAndInvalidate(ByteBuffer.wrap(pattern(300, 5)), token).toCompletableFuture()
                .get(TIMEOUT, TimeUnit.MILLISECONDS);
        Inbox.Message m = atClient.next();
        assertEquals(300, m.data.length);
        assertEquals(OptionalInt.of(token), m.token);
        assertFalse(reg.isRegistered());
    }

    /** MS-SMBD 3.1.6.2: an idle connection sends a keepalive, the peer answers, both stay up. */
    @Test
    void keepalive_answeredOverTheDevice() throws Exception {
        c.send(ByteBuffer.wrap(new byte[] {1})).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        atServer.next();
        // Both Idle Connection Timers fall due. Each side either sends a keepalive or, when the
        // peer's arrives first, takes that as the message that retriggers its timer.
        clock.advance(Duration.ofSeconds(121));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT);
        while (!(keepaliveSettled(c) && keepaliveSettled(s)) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        ConnectionStatistics cs = c.statistics();
        ConnectionStatistics ss = s.statistics();
        assertTrue(cs.keepalivesSent() + ss.keepalivesSent() > 0, "a keepalive was sent: " + cs + " / " + ss);
        assertTrue(cs.keepalivesReceived() + ss.keepalivesReceived() > 0, "and received: " + cs + " / " + ss);
        assertEquals(cs.keepalivesSent(), cs.keepalivesAnswered(), "every keepalive answered: " + cs);
        assertEquals(ss.keepalivesSent(), ss.keepalivesAnswered(), "every keepalive answered: " + ss);
        // The answers retriggered the timers: the keepalives' 5 s response timeout ends nothing.
        clock.advance(Duration.ofSeconds(6));
        assertTrue(c.isOpen() && s.isOpen());
        c.send(ByteBuffer.wrap(new byte[] {2})).toCompletableFuture().get(TIMEOUT, TimeUnit.MILLISECONDS);
        assertArrayEquals(new byte[] {2}, atServer.next().data);
    }

    /**
     * Whether a side is past its keepalive round: it sent a keepalive or received the peer's (which
     * retriggered its timer before the check), and every keepalive it sent was answered. Counting
     * fragments instead would take a credit grant for the answer.
     */
    private static boolean keepaliveSettled(SmbDirectConnection x) {
        ConnectionStatistics st = x.statistics();
        return st.keepalivesSent() + st.keepalivesReceived() > 0 && st.keepalivesAnswered() == st.keepalivesSent();
    }

    private static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    /** Records delivered messages and accepted connections. */
    private static final class Inbox implements ConnectionHandler, AcceptHandler {
        record Message(byte[] data, OptionalInt token) {
        }

        final BlockingQueue<Message> messages = new LinkedBlockingQueue<>();
        final BlockingQueue<SmbDirectConnection> connections = new LinkedBlockingQueue<>();

        @Override
        public void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken) {
            byte[] copy = new byte[message.remaining()];
            message.get(copy);
            messages.add(new Message(copy, invalidatedToken));
        }

        @Override
        public ConnectionHandler onConnection(SmbDirectConnection connection) {
            connections.add(connection);
            return this;
        }

        Message next() throws InterruptedException {
            Message m = messages.poll(TIMEOUT, TimeUnit.MILLISECONDS);
            assertNotNull(m, "no message delivered");
            return m;
        }
    }

    /** A virtual clock for the engine's timers: time moves only when the test advances it. */
    private static final class VirtualClock implements Scheduler {
        private final PriorityQueue<long[]> due = new PriorityQueue<>((a, b) -> Long.compare(a[0], b[0]));
        private final java.util.Map<Long, Runnable> tasks = new java.util.HashMap<>();
        private long now = 1_000_000_000L;
        private long next;

        @Override
        public synchronized long nanoTime() {
            return now;
        }

        @Override
        public synchronized Timer schedule(Runnable task, long delayNanos) {
            long id = next++;
            tasks.put(id, task);
            due.add(new long[] {now + Math.max(0, delayNanos), id});
            return () -> {
                synchronized (VirtualClock.this) {
                    tasks.remove(id);
                }
            };
        }

        void advance(Duration d) {
            long target;
            synchronized (this) {
                target = now + d.toNanos();
            }
            for (;;) {
                Runnable r;
                synchronized (this) {
                    long[] t = due.peek();
                    if (t == null || t[0] > target) {
                        now = target;
                        return;
                    }
                    due.poll();
                    now = t[0];
                    r = tasks.remove(t[1]);
                }
                if (r != null) {
                    r.run();
                }
            }
        }

        @Override
        public void shutdown() {
        }
    }
}
