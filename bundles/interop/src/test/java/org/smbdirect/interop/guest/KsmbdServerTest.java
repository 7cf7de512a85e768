package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.msdtyp.AccessMask;
import com.hierynomus.mssmb2.SMB2CreateDisposition;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2ShareAccess;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.auth.AuthenticationContext;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.session.Session;
import com.hierynomus.smbj.share.DiskShare;
import com.hierynomus.smbj.share.File;

/**
 * The engine as client of the Linux kernel's SMB server, ksmbd: SMB Direct negotiation on the port
 * Linux uses for the transport (445 on RoCE, 5445 on iWARP), then a real SMB2 conversation driven
 * by smbj over the engine (NEGOTIATE, SESSION_SETUP, TREE_CONNECT, CREATE), and 16 MiB of file
 * data written and read back both through the RDMA channel (ksmbd moves the data by RDMA Read and
 * RDMA Write into the engine's registered buffers) and inline (fragmented SMB Direct messages).
 * The content is checked on ksmbd's share directory.
 */
class KsmbdServerTest {
    private static final int SIZE = 16 << 20;
    private static final int WAIT_SECONDS = 120;

    private static SmbDirect engine;

    /** The transport smbj created last, to reach its SMB Direct connection. */
    private final SmbDirectTransportLayer[] last = new SmbDirectTransportLayer[1];

    @BeforeAll
    static void startKsmbd() throws Exception {
        Guest.peers("dmesg-mark");
        Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
        // the rdma component of ksmbd's debug output names every RDMA channel request it serves
        Guest.peers("ksmbd-debug", "on", "rdma");
        engine = Guest.engine(SmbDirectConfig.defaults());
    }

    @AfterAll
    static void stopKsmbd() throws Exception {
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

    /** SMB 3.0: SMB2_CHANNEL_RDMA_V1; the engine deregisters the buffers itself. */
    @Test
    void smb30_sixteenMiB_rdmaChannelAndInline() throws Exception {
        conversation(SMB2Dialect.SMB_3_0, "smb30.bin");
    }

    /** SMB 3.1.1: SMB2_CHANNEL_RDMA_V1_INVALIDATE; ksmbd invalidates them with its response. */
    @Test
    void smb311_sixteenMiB_rdmaChannelInvalidateAndInline() throws Exception {
        conversation(SMB2Dialect.SMB_3_1_1, "smb311.bin");
    }

    private void conversation(SMB2Dialect dialect, String name) throws Exception {
        // Inline messages must fit the sizes SMB Direct negotiated: ksmbd reassembles at most its
        // MaxFragmentedSize (173,910 bytes with 6.1's defaults); the engine up to its own.
        ConnectionParameters probe = probe();
        // smbj sends whole 64 KiB credits of data per WRITE, hence multiples of 64 KiB.
        int inlineWrite = roundDown(probe.maxFragmentedSendSize() - 512, 65536);
        int inlineRead = roundDown(probe.maxFragmentedRecvSize() - 512, 65536);
        SmbConfig config = SmbConfig.builder()
                .withDialects(dialect)
                .withWriteBufferSize(inlineWrite)
                .withReadBufferSize(inlineRead)
                .withTimeout(WAIT_SECONDS, TimeUnit.SECONDS)
                .withTransportLayerFactory(SmbDirectTransportLayer.factory(engine, last))
                .build();
        Path onShare = Guest.SHARE.resolve(name);
        Files.deleteIfExists(onShare);
        Random random = new Random(name.hashCode());
        try (SMBClient client = new SMBClient(config);
                Connection connection = client.connect(Guest.address().getHostAddress());
                Session session = connection.authenticate(
                        new AuthenticationContext(Guest.USER, Guest.PASSWORD.toCharArray(), "WORKGROUP"));
                DiskShare share = (DiskShare) session.connectShare("share");
                File file = share.openFile(name, EnumSet.of(AccessMask.GENERIC_ALL), null, SMB2ShareAccess.ALL,
                        SMB2CreateDisposition.FILE_OVERWRITE_IF, null)) {
            SmbDirectConnection direct = last[0].connection();
            assertEquals(dialect, connection.getNegotiatedProtocol().getDialect());
            int chunk = Math.min(1 << 20, Math.min(direct.parameters().maxReadWriteSize(),
                    connection.getNegotiatedProtocol().getMaxWriteSize()));
            Smb2RdmaChannel rdma = new Smb2RdmaChannel(session, share, direct);
            int requests = SIZE / chunk;

            // 1. WRITE through the RDMA channel: ksmbd RDMA-reads the engine's registered buffer.
            byte[] up = new byte[SIZE];
            random.nextBytes(up);
            ByteBuffer source = ByteBuffer.allocateDirect(chunk);
            int rdmaLinesBefore = ksmbdRdmaRequests();
            long start = System.nanoTime();
            for (int off = 0; off < SIZE; off += chunk) {
                source.clear();
                source.put(up, off, chunk).flip();
                assertEquals(chunk, rdma.write(file, off, source), "bytes written at " + off);
            }
            long writeNanos = System.nanoTime() - start;
            assertArrayEquals(up, Files.readAllBytes(onShare), "ksmbd's file holds what the engine wrote by RDMA");

            // 2. READ through the RDMA channel: ksmbd RDMA-writes into the engine's registered buffer.
            ByteBuffer destination = ByteBuffer.allocateDirect(chunk);
            byte[] back = new byte[SIZE];
            start = System.nanoTime();
            for (int off = 0; off < SIZE; off += chunk) {
                destination.clear();
                rdma.read(file, off, destination);
                destination.get(back, off, chunk);
            }
            long readNanos = System.nanoTime() - start;
            assertArrayEquals(up, back, "what ksmbd RDMA-wrote into the engine's buffers is the file");
            int rdmaRequests = ksmbdRdmaRequests() - rdmaLinesBefore;
            assertEquals(2 * requests, rdmaRequests, "ksmbd served every request through the RDMA channel");
            // MS-SMB2 3.3.5.12/3.3.5.13: with the invalidate channel ksmbd answers with Send with
            // Invalidate. The engine sees it where its provider registers with memory windows
            // (rxe); on siw (memory regions only) it deregisters itself, as with SMB 3.0.
            boolean remote = rdma.channel() == Smb2RdmaChannel.SMB2_CHANNEL_RDMA_V1_INVALIDATE
                    && direct.parameters().remoteInvalidate();
            assertEquals(remote ? 2 * requests : 0, rdma.remotelyInvalidated(), "registrations ksmbd invalidated");
            assertEquals(remote ? 0 : 2 * requests, rdma.locallyDeregistered(), "registrations the engine deregistered");
            assertEquals(0, direct.statistics().registrationsLive(), "no registration left");

            // 3. Inline: smbj's own WRITE and READ, fragmented by the engine.
            byte[] inline = new byte[SIZE];
            random.nextBytes(inline);
            ConnectionStatistics before = direct.statistics();
            start = System.nanoTime();
            file.write(inline, 0);
            long inlineWriteNanos = System.nanoTime() - start;
            assertArrayEquals(inline, Files.readAllBytes(onShare), "ksmbd's file holds what smbj wrote inline");
            byte[] inlineBack = new byte[SIZE];
            start = System.nanoTime();
            for (int off = 0; off < SIZE;) {
                int n = file.read(inlineBack, off, off, SIZE - off);
                assertTrue(n > 0, "READ at " + off + " returned " + n);
                off += n;
            }
            long inlineReadNanos = System.nanoTime() - start;
            assertArrayEquals(inline, inlineBack, "smbj read back inline what is on ksmbd's share");
            ConnectionStatistics after = direct.statistics();
            assertEquals(0, ksmbdRdmaRequests() - rdmaLinesBefore - rdmaRequests, "inline requests do not use RDMA");
            assertTrue(after.fragmentsSent() - before.fragmentsSent() > after.messagesSent() - before.messagesSent(),
                    "the inline WRITEs went as fragmented messages");
            assertTrue(after.fragmentsReceived() - before.fragmentsReceived()
                    > after.messagesReceived() - before.messagesReceived(), "the inline READ responses came fragmented");

            Guest.record(String.format("%s smbj %s over the engine to ksmbd: %d MiB RDMA channel (%s, %d KiB requests) "
                    + "write %.1f MiB/s, read %.1f MiB/s; inline (WRITE %d KiB, READ %d KiB) write %.1f MiB/s, read %.1f MiB/s; "
                    + "engine: %d fragments sent, %d received; %d registrations invalidated by ksmbd", Guest.transport(), dialect, SIZE >> 20,
                    rdma.channel() == 1 ? "RDMA_V1" : "RDMA_V1_INVALIDATE", chunk >> 10, mibPerSecond(writeNanos),
                    mibPerSecond(readNanos), inlineWrite >> 10, inlineRead >> 10, mibPerSecond(inlineWriteNanos),
                    mibPerSecond(inlineReadNanos), after.fragmentsSent(), after.fragmentsReceived(), rdma.remotelyInvalidated()));
        }
        Guest.Result dmesg = Guest.peersResult(60, "dmesg-check");
        assertEquals(0, dmesg.exit, "no SMB Direct error in the kernel log:\n" + dmesg.output);
    }

    /** The SMB Direct parameters of a connection to ksmbd, for sizing smbj's requests. */
    private static ConnectionParameters probe() throws Exception {
        try (SmbDirectConnection c = engine.connect(new InetSocketAddress(Guest.address(), 0),
                (conn, message, token) -> { }, Duration.ofSeconds(WAIT_SECONDS))) {
            return c.parameters();
        }
    }

    private static int ksmbdPort() throws Exception {
        return Integer.parseInt(Guest.peers("ksmbd-port").trim());
    }

    /**
     * Requests ksmbd served through the RDMA channel: with its debug component rdma, ksmbd logs
     * "RDMA r/w request N: token T, length L" for each buffer descriptor; descriptor 0 starts a request.
     */
    private static int ksmbdRdmaRequests() throws Exception {
        String log = Guest.run(60, java.util.List.of("dmesg")).output;
        Matcher m = Pattern.compile("RDMA r/w request (0x)?0: token").matcher(log);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    private static int roundDown(int value, int unit) {
        return value / unit * unit;
    }

    private static double mibPerSecond(long nanos) {
        return SIZE / 1048576.0 / (nanos / 1e9);
    }
}
