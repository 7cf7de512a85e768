package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.smbdirect.smbj.RdmaChannelStatistics;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.TerminationReason;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.session.Session;
import com.hierynomus.smbj.share.DiskShare;
import com.hierynomus.smbj.share.File;

/**
 * The engine as client of the Linux kernel's SMB server, ksmbd: SMB Direct negotiation on the port
 * Linux uses for the transport (445 on RoCE, 5445 on iWARP), then a real SMB2 conversation driven
 * by smbj over the engine through the product's transport (bundle org.smbdirect.smbj): NEGOTIATE,
 * SESSION_SETUP (signed), TREE_CONNECT, CREATE, and 16 MiB of file data written and read back with
 * smbj's own File API, both through the RDMA channel (ksmbd moves the data by RDMA Read and RDMA
 * Write into the engine's registered buffers) and inline (fragmented SMB Direct messages). The
 * content is checked on ksmbd's share directory. Two connections left idle from the first test to
 * the last, on an engine without a keepalive of its own, show what ksmbd does about idleness: an
 * SMB2 session (NEGOTIATE, SESSION_SETUP, TREE_CONNECT), which Linux 7's ksmbd asks for a keepalive
 * after 120 s and keeps when it is answered (Linux 6.1's asks for none), and an SMB2 connection that
 * only negotiated, which Linux 7's ksmbd ends after 45 s (KSMBD_UNAUTHENTICATED_CONN_TIMEOUT) and
 * Linux 6.1's keeps.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class KsmbdServerTest {
    private static final int SIZE = 16 << 20;
    /**
     * Inline, every 128 KiB request is about a hundred fragments, each signed byte by byte in Java
     * on the emulated processor (a few MiB/s): 2 MiB show the path as well as 16 would.
     */
    private static final int INLINE_SIZE = 2 << 20;
    private static final int WAIT_SECONDS = 120;

    /** ksmbd 7's keepalive interval (SMB_DIRECT_KEEPALIVE_SEND_INTERVAL) and then some. */
    private static final long IDLE_SECONDS = 150;

    private static SmbDirect engine;
    /** An engine that sends no keepalive of its own, and its connections to ksmbd, idle from the start. */
    private static SmbDirect quiet;
    /** An smbj session over it, with a file open: ksmbd's keepalive is what it meets. */
    private static SMBClient idleClient;
    private static Connection idleConnection;
    private static File idleFile;
    private static SmbDirectConnection idle;
    /** A connection that only negotiated SMB2, never set up a session. */
    private static SmbDirectConnection unauthenticated;
    private static long idleSince;
    private static final byte[] IDLE_DATA = new byte[4096];

    @BeforeAll
    static void startKsmbd() throws Exception {
        Guest.peers("dmesg-mark");
        Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
        // the rdma component of ksmbd's debug output names every RDMA channel request it serves
        Guest.peers("ksmbd-debug", "on", "rdma");
        engine = Guest.engine(SmbDirectConfig.defaults());
        quiet = Guest.engine(SmbDirectConfig.builder().keepaliveIntervalSeconds(0).build());
        // MS-SMB2 2.2.3: the SMB2 NEGOTIATE an SMB2 client sends first. Its SMB Direct message also
        // grants ksmbd its first send credits (MS-SMBD 3.1.5.9: the Negotiate Request grants none)
        java.util.concurrent.BlockingQueue<byte[]> answers = new java.util.concurrent.LinkedBlockingQueue<>();
        unauthenticated = quiet.connect(new InetSocketAddress(Guest.address(), 0), (conn, message, token) -> {
            byte[] b = new byte[message.remaining()];
            message.get(b);
            answers.add(b);
        }, Duration.ofSeconds(WAIT_SECONDS));
        unauthenticated.send(java.nio.ByteBuffer.wrap(smb2Negotiate(0x0302))).toCompletableFuture()
                .get(WAIT_SECONDS, TimeUnit.SECONDS);
        byte[] negotiated = answers.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        assertTrue(negotiated != null && negotiated.length >= 64 && negotiated[12] == 0, "ksmbd answered the NEGOTIATE");
        SmbjTransport quietSmbj = SmbjTransport.create(quiet, SmbjOptions.defaults());
        idleClient = new SMBClient(quietSmbj.configBuilder().withDialects(SMB2Dialect.SMB_3_1_1).withSigningRequired(true)
                .withTimeout(WAIT_SECONDS, TimeUnit.SECONDS).build());
        idleConnection = idleClient.connect(Guest.address().getHostAddress());
        Session session = Guest.login(idleConnection);
        DiskShare share = (DiskShare) session.connectShare("share");
        new Random(150).nextBytes(IDLE_DATA);
        idleFile = Guest.create(share, "idle.bin");
        idleFile.write(IDLE_DATA, 0);
        idle = quietSmbj.connectionOf(idleConnection).orElseThrow();
        idleSince = System.nanoTime();
    }

    @AfterAll
    static void stopKsmbd() throws Exception {
        if (idleClient != null) {
            idleClient.close();
        }
        if (quiet != null) {
            quiet.close();
        }
        if (engine != null) {
            engine.close();
        }
        Guest.peersResult(60, "ksmbd-debug", "off", "rdma");
        Guest.peersResult(60, "ksmbd-stop");
    }

    /** MS-SMBD 3.1.5.2, 3.1.5.7 against ksmbd: what the engine took from ksmbd's Negotiate Response. */
    @Test
    void smbDirectNegotiation_withKsmbd_onLinuxPort() throws Exception {
        int port = ksmbdPort();
        assertEquals(Guest.transport().equals("siw") ? 5445 : 445, engine.defaultPort(),
                "the engine's default port for the device's transport is ksmbd's");
        SmbDirectConnection c = engine.connect(new InetSocketAddress(Guest.address(), 0),
                (conn, message, token) -> { }, Duration.ofSeconds(WAIT_SECONDS));
        try {
            ConnectionParameters p = c.parameters();
            Guest.record(Guest.transport() + " engine -> ksmbd (port " + port + "): " + CifsClientTest.describe(p));
            assertEquals(port, c.remoteAddress().getPort());
            assertEquals(0x0100, p.protocolVersion());
            assertEquals(Guest.transport().equals("siw") ? "iWARP" : "RoCE", p.transport());
            // ksmbd 6.1: receive size 1364, 255 receive credits, MaxFragmentedSize = 255 * 1364 / 2,
            // MaxReadWriteSize 8 MiB (fs/smb/server/transport_rdma.c)
            assertEquals(1364, p.maxSendSize(), "MaxSendSize: min(ours, ksmbd's MaxReceiveSize)");
            assertEquals(255 * Math.min(1364, p.maxReceiveSize()) / 2, p.maxFragmentedSendSize(),
                    "MaxFragmentedSendSize: ksmbd's MaxFragmentedSize");
            assertTrue(p.maxReadWriteSize() > 0 && p.maxReadWriteSize() <= 8 << 20, "MaxReadWriteSize " + p.maxReadWriteSize());
            assertTrue(p.ird() > 0, "ksmbd RDMA-reads from the engine (WRITE through the RDMA channel): IRD " + p.ird());
            assertTrue(c.statistics().sendCredits() > 0, "ksmbd granted send credits");
        } finally {
            c.close();
        }
    }

    /** SMB 3.0: SMB2_CHANNEL_RDMA_V1; the client invalidates and deregisters the buffers itself. */
    @Test
    void smb30_sixteenMiB_rdmaChannelAndInline() throws Exception {
        conversation(SMB2Dialect.SMB_3_0, "smb30.bin");
    }

    /** SMB 3.1.1: SMB2_CHANNEL_RDMA_V1_INVALIDATE; ksmbd invalidates them with its response. */
    @Test
    void smb311_sixteenMiB_rdmaChannelInvalidateAndInline() throws Exception {
        conversation(SMB2Dialect.SMB_3_1_1, "smb311.bin");
    }

    /**
     * smbj's own File.write and File.read, signed, once over the product's transport with the RDMA
     * channel and once with it turned off (everything inline, fragmented by the engine).
     */
    private void conversation(SMB2Dialect dialect, String name) throws Exception {
        Path onShare = Guest.SHARE.resolve(name);
        Files.deleteIfExists(onShare);
        Random random = new Random(name.hashCode());
        SmbjTransport rdma = SmbjTransport.create(engine, SmbjOptions.defaults());
        SmbjTransport inline = SmbjTransport.create(engine, SmbjOptions.builder().rdmaChannel(false).build());
        StringBuilder line = new StringBuilder(String.format("%s smbj %s over the engine to ksmbd (signed)",
                Guest.transport(), dialect));
        for (SmbjTransport t : List.of(rdma, inline)) {
            boolean channel = t == rdma;
            SmbConfig config = t.configBuilder().withDialects(dialect).withSigningRequired(true)
                    .withTimeout(WAIT_SECONDS, TimeUnit.SECONDS).build();
            try (SMBClient client = new SMBClient(config);
                    Connection connection = client.connect(Guest.address().getHostAddress());
                    Session session = Guest.login(connection);
                    DiskShare share = (DiskShare) session.connectShare("share");
                    File file = Guest.create(share, name)) {
                SmbDirectConnection direct = t.connectionOf(connection).orElseThrow();
                assertEquals(dialect, connection.getNegotiatedProtocol().getDialect());
                assertTrue(session.isSigningRequired(), "the session is signed");
                int requestSize = connection.getNegotiatedProtocol().getMaxWriteSize();
                int size = channel ? SIZE : INLINE_SIZE;
                byte[] up = new byte[size];
                random.nextBytes(up);
                int rdmaBefore = Guest.ksmbdRdmaRequests();
                ConnectionStatistics before = direct.statistics();
                long start = System.nanoTime();
                file.write(up, 0);
                long writeNanos = System.nanoTime() - start;
                assertArrayEquals(up, Files.readAllBytes(onShare), "ksmbd's file holds what smbj wrote");
                start = System.nanoTime();
                byte[] back = Guest.readAll(file, size);
                long readNanos = System.nanoTime() - start;
                assertArrayEquals(up, back, "smbj read back what is on ksmbd's share");
                ConnectionStatistics after = direct.statistics();
                RdmaChannelStatistics s = t.statistics();
                int served = Guest.ksmbdRdmaRequests() - rdmaBefore;
                if (channel) {
                    assertEquals(s.rdmaWrites() + s.rdmaReads(), served,
                            "ksmbd served every READ and WRITE through the RDMA channel");
                    assertEquals(2L * size, s.rdmaWriteBytes() + s.rdmaReadBytes());
                    assertTrue(after.bytesSent() - before.bytesSent() < size / 100,
                            "the data did not travel in SMB Direct messages");
                    // MS-SMB2 3.3.5.12/3.3.5.13: with the invalidate channel ksmbd answers with Send
                    // with Invalidate. The engine sees it where its provider registers with memory
                    // windows (rxe); on siw (memory regions only) it deregisters itself, as with 3.0.
                    boolean remote = dialect != SMB2Dialect.SMB_3_0 && direct.parameters().remoteInvalidate();
                    assertEquals(remote ? served : 0, s.remoteInvalidations(), "registrations ksmbd invalidated");
                    assertEquals(remote ? 0 : served, s.localInvalidations(), "registrations invalidated here");
                } else {
                    assertEquals(0, served, "inline requests do not use RDMA");
                    assertTrue(after.fragmentsSent() - before.fragmentsSent() > after.messagesSent() - before.messagesSent(),
                            "the inline WRITEs went as fragmented messages");
                    assertTrue(after.fragmentsReceived() - before.fragmentsReceived()
                            > after.messagesReceived() - before.messagesReceived(), "the inline READ responses came fragmented");
                }
                Guest.nothingLeftButWhatIsMadeAhead(t, connection, direct, "no registration left");
                // on iWARP: one per part of the last READ and of the last WRITE, each in two parts
                assertEquals(channel && !direct.parameters().remoteInvalidate() ? 4 : 0, t.registeredAhead(connection),
                        "registrations made ahead");
                line.append(String.format("; %s, %d MiB in %d KiB requests: write %.1f MiB/s, read %.1f MiB/s",
                        channel ? (dialect == SMB2Dialect.SMB_3_0 ? "RDMA_V1" : "RDMA_V1_INVALIDATE") : "inline",
                        size >> 20, requestSize >> 10, mibPerSecond(size, writeNanos), mibPerSecond(size, readNanos)));
            }
        }
        Guest.record(line.toString());
        Guest.Result dmesg = Guest.peersResult(60, "dmesg-check");
        assertEquals(0, dmesg.exit, "no SMB Direct error in the kernel log:\n" + dmesg.output);
    }

    /**
     * MS-SMBD 3.1.6.2 on ksmbd's side: the SMB2 session set up before the first test, on which
     * nothing was sent since and whose engine sends no keepalive, is still up after 150 s and reads
     * its file back. Linux 7's ksmbd asked for a keepalive (SMB_DIRECT_RESPONSE_REQUESTED) after 120
     * s and the engine answered in time (3.1.5.8: the answer goes at once); Linux 6.1's ksmbd has no
     * keepalive and asked for none. The connection that only negotiated was ended by Linux 7's ksmbd
     * (a connection without a session after 45 s) and kept by 6.1's. The wait is ksmbd's timers,
     * which no virtual clock reaches: the rest of this class runs inside it.
     */
    @Test
    @Order(Integer.MAX_VALUE)
    void idleConnection_150s_survives_ksmbdKeepaliveAnsweredWhereItSendsOne() throws Exception {
        long left = IDLE_SECONDS - TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - idleSince);
        if (left > 0) {
            Thread.sleep(TimeUnit.SECONDS.toMillis(left));
        }
        ConnectionStatistics s = idle.statistics();
        Guest.record(String.format("%s %s engine -> ksmbd idle %d s: session open %b, keepalives from ksmbd %d, sent %d; "
                + "connection without a session open %b (%s)", Guest.kernel(), Guest.transport(),
                TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - idleSince), idle.isOpen(), s.keepalivesReceived(),
                s.keepalivesSent(), unauthenticated.isOpen(), unauthenticated.loss().map(Object::toString).orElse("-")));
        assertTrue(idle.isOpen(), "the idle session is up after " + IDLE_SECONDS + " s: " + idle.loss());
        assertEquals(0, s.keepalivesSent(), "the engine's keepalive is off");
        if (Guest.linux7()) {
            assertTrue(s.keepalivesReceived() >= 1, "ksmbd 7 asked for a keepalive after 120 s idle");
            assertEquals(TerminationReason.PEER_DISCONNECTED, unauthenticated.loss().map(l -> l.reason()).orElse(null),
                    "ksmbd 7 ended the connection without a session");
        } else {
            assertEquals(0, s.keepalivesReceived(), "ksmbd 6.1 has no keepalive");
            assertTrue(unauthenticated.isOpen(), "ksmbd 6.1 keeps a connection without a session");
        }
        byte[] back = new byte[IDLE_DATA.length];
        assertEquals(IDLE_DATA.length, idleFile.read(back, 0), "the idle session reads its file after " + IDLE_SECONDS + " s");
        assertArrayEquals(IDLE_DATA, back);
        idleFile.close();
        unauthenticated.close();
    }

    /** An SMB2 NEGOTIATE request (MS-SMB2 2.2.3) offering one dialect, message id 0, no contexts. */
    private static byte[] smb2Negotiate(int dialect) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(64 + 36 + 2).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(0x424d53fe).putShort((short) 64).putShort((short) 0).putInt(0).putShort((short) 0).putShort((short) 1);
        b.position(64);
        b.putShort((short) 36).putShort((short) 1).putShort((short) 1).putShort((short) 0); // 1 dialect, signing enabled
        b.putInt(0); // Capabilities
        b.put(new byte[16]); // ClientGuid
        b.putLong(0); // ClientStartTime
        b.putShort((short) dialect);
        return b.array();
    }

    private static int ksmbdPort() throws Exception {
        return Integer.parseInt(Guest.peers("ksmbd-port").trim());
    }

    private static double mibPerSecond(int bytes, long nanos) {
        return bytes / 1048576.0 / (nanos / 1e9);
    }
}
