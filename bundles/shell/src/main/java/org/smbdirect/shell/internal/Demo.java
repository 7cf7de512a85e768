package org.smbdirect.shell.internal;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32C;

import org.osgi.framework.BundleContext;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.util.tracker.ServiceTracker;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TransportStatistics;

/**
 * The product's main job, non-interactively: two SMB Direct endpoints on the simulated RDMA fabric
 * negotiate, exchange messages, move a payload once by RDMA Read and once by RDMA Write through
 * the bulk layer, verify checksums, and print what they negotiated and measured; the traffic is
 * captured to one pcap file.
 *
 * <p>Two simulated providers are configured through Configuration Admin on a fabric of their own:
 * {@code demo-read} (RDMA Read available) and {@code demo-write} ({@code rdmaRead=false}). The
 * transport is pointed at one, then the other, through its {@code provider.target}; on
 * {@code demo-write} the receiving side announces that it cannot RDMA Read, so the sender must
 * RDMA Write. The counters of the bulk sessions and of both connections prove which path ran.
 * Everything the demo configured is removed at the end, the previous {@code provider.target}
 * restored.
 */
final class Demo {
    static final String READ_PROVIDER = "demo-read";
    static final String WRITE_PROVIDER = "demo-write";
    static final String FABRIC = "smbdirect-demo";
    /** Enough for every SMB Direct message (MaxSendSize 1364 plus headers); RDMA data packets are cut. */
    static final int SNAP_LENGTH = 1536;
    private static final int[] MESSAGE_SIZES = {5, 100, 1340, 1341, 8192, 65536, 1 << 20};

    /** The demo failed; the message says why. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String message) {
            super(message);
        }
    }

    private final BundleContext context;
    private final PrintStream out;
    private final long payload;
    private final Path capture;
    private final Duration timeout;
    private final List<ServiceTracker<?, ?>> trackers = new ArrayList<>();
    private final List<String[]> statistics = new ArrayList<>();
    private final List<Configuration> created = new ArrayList<>();
    private final List<Path> partialCaptures = new ArrayList<>();
    private java.util.Dictionary<String, Object> droppedSingleton;
    private ConfigurationAdmin admin;
    private Configs configs;
    private String previousTarget;
    private boolean hadProtocolConfiguration;
    private boolean targetChanged;
    private SmbDirect transport;
    private BulkTransfer bulk;
    private int step;

    /**
     * @param capture where the merged capture goes, or {@code null} for none
     */
    Demo(BundleContext context, PrintStream out, long payload, Path capture, Duration timeout) {
        this.context = context;
        this.out = out;
        this.payload = payload;
        this.capture = capture == null ? null : capture.toAbsolutePath().normalize();
        this.timeout = timeout;
    }

    /** Runs the demo; returns 0 when everything passed, 1 otherwise (the reason printed). */
    int run() throws InterruptedException {
        long start = System.nanoTime();
        out.println("smbdirect demo: SMB Direct (MS-SMBD) over the simulated RDMA fabric, in OSGi (Felix "
                + context.getBundle(0).getVersion() + ", Java " + Runtime.version() + ")");
        boolean passed = false;
        try {
            services();
            providers();
            messages();
            bulkTransfer(READ_PROVIDER, true);
            bulkTransfer(WRITE_PROVIDER, false);
            printStatistics();
            passed = true;
        } catch (Failure e) {
            out.println();
            out.println("demo FAILED: " + e.getMessage());
        } catch (InterruptedException e) {
            out.println("demo FAILED: interrupted");
            throw e;
        } catch (Exception e) {
            out.println();
            out.println("demo FAILED: " + e.getClass().getSimpleName() + ": " + Transfer.describe(e));
        } finally {
            try {
                if (!cleanUp(passed)) {
                    passed = false;
                }
            } catch (Exception e) {
                out.println("demo FAILED while cleaning up: " + Transfer.describe(e));
                passed = false;
            }
            for (ServiceTracker<?, ?> t : trackers) {
                t.close();
            }
        }
        if (passed) {
            out.println();
            out.println("demo PASSED in " + Units.seconds(System.nanoTime() - start)
                    + ": negotiated, exchanged messages, moved " + Units.bytes(payload)
                    + " by RDMA Read and by RDMA Write, checksums verified");
        }
        out.flush();
        return passed ? 0 : 1;
    }

    private void step(String title) {
        out.println();
        out.println("[" + ++step + "/7] " + title);
        out.flush();
    }

    private <T> T await(Class<T> type, String filter, String what) throws Failure, InterruptedException {
        ServiceTracker<T, T> t = Services.await(context, type, filter, timeout);
        if (t == null) {
            throw new Failure(what + " did not appear within " + timeout.toSeconds() + " s");
        }
        trackers.add(t);
        return t.getService();
    }

    // ------------------------------------------------------------------ 1. services

    private void services() throws Exception {
        step("services");
        admin = await(ConfigurationAdmin.class, null, "the Configuration Admin service");
        configs = new Configs(admin, null, context);
        transport = await(SmbDirect.class, null, "the SmbDirect transport service (bundle org.smbdirect.protocol)");
        bulk = await(BulkTransfer.class, null, "the bulk-transfer service (bundle org.smbdirect.bulk)");
        out.println("  SmbDirect transport and BulkTransfer services found; bulk configuration " + bulk.configuration());
    }

    // ------------------------------------------------------------------ 2. providers

    private void providers() throws Exception {
        step("providers: two simulated RDMA providers on fabric '" + FABRIC + "', configured through Config Admin");
        hadProtocolConfiguration = configs.protocol().getProperties() != null;
        previousTarget = configs.providerTarget();
        create(READ_PROVIDER, true);
        create(WRITE_PROVIDER, false);
        for (String name : new String[] {READ_PROVIDER, WRITE_PROVIDER}) {
            RdmaProvider p = await(RdmaProvider.class, "(provider.name=" + name + ")", "provider " + name);
            out.println("  " + name + ": " + p.type() + " at " + p.addresses().get(0).getHostAddress() + ", RDMA Read "
                    + yesNo(p.capabilities().rdmaRead()) + ", remote invalidate " + yesNo(p.capabilities().remoteInvalidate())
                    + ", IRD/ORD " + p.capabilities().maxIrd() + "/" + p.capabilities().maxOrd() + ", max SGEs "
                    + p.capabilities().maxSge() + ", inline " + p.capabilities().inlineLimit() + " B");
        }
        if (capture != null) {
            out.println("  capturing RoCEv2 frames of both providers (snap length " + SNAP_LENGTH
                    + " B: SMB Direct messages whole, RDMA data cut)");
        }
    }

    private void create(String name, boolean rdmaRead) throws IOException {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("fabric", FABRIC);
        s.put("rdmaRead", rdmaRead);
        if (capture != null) {
            Path part = capture.resolveSibling(capture.getFileName() + "." + name + ".part");
            partialCaptures.add(part);
            s.put("capture.enabled", true);
            s.put("capture.path", part.toString());
            s.put("capture.snapLength", SNAP_LENGTH);
        }
        java.util.Dictionary<String, Object> dropped = configs.createSim(name, s);
        if (droppedSingleton == null) {
            droppedSingleton = dropped;
        }
        created.add(configs.simConfiguration(name));
    }

    /** Points the transport at one provider and waits until new connections use it. */
    private void use(String name) throws Exception {
        configs.setProviderTarget("(provider.name=" + name + ")");
        targetChanged = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!("sim/" + name).equals(transport.provider())) {
            if (System.nanoTime() - deadline > 0) {
                throw new Failure("the transport did not move to provider " + name + " within " + timeout.toSeconds()
                        + " s (it uses " + transport.provider() + ")");
            }
            Thread.sleep(10);
        }
    }

    private InetAddress addressOf(String name) throws Exception {
        return await(RdmaProvider.class, "(provider.name=" + name + ")", "provider " + name).addresses().get(0);
    }

    // ------------------------------------------------------------------ 3. negotiation and messages

    private void messages() throws Exception {
        step("negotiation and messages (provider " + READ_PROVIDER + ")");
        use(READ_PROVIDER);
        CompletableFuture<SmbDirectConnection> accepted = new CompletableFuture<>();
        ConnectionHandler echo = (c, m, t) -> {
            ByteBuffer copy = ByteBuffer.allocate(m.remaining());
            copy.put(m.duplicate()).flip();
            c.send(copy);
        };
        BlockingQueue<ByteBuffer> replies = new LinkedBlockingQueue<>();
        ConnectionHandler client = new ConnectionHandler() {
            @Override
            public void onMessage(SmbDirectConnection c, ByteBuffer m, OptionalInt t) {
                ByteBuffer copy = ByteBuffer.allocate(m.remaining());
                copy.put(m.duplicate()).flip();
                replies.add(copy);
            }
        };
        try (SmbDirectListener listener = transport.listen(new InetSocketAddress(addressOf(READ_PROVIDER), 0), c -> {
            accepted.complete(c);
            return echo;
        })) {
            InetSocketAddress at = listener.localAddress();
            out.println("  listener on " + at + " (" + transport.provider() + ")");
            SmbDirectConnection c = transport.connect(at, client, timeout);
            SmbDirectConnection s = accepted.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            out.println("  connected " + c.localAddress() + " -> " + c.remoteAddress() + "; negotiated (MS-SMBD 3.1.4.7):");
            parameters(c.parameters(), s.parameters());
            long sentBytes = 0;
            for (int i = 0; i < MESSAGE_SIZES.length; i++) {
                int n = Math.min(MESSAGE_SIZES[i], c.parameters().maxFragmentedSendSize());
                ByteBuffer m = ByteBuffer.allocate(n);
                if (i == 0) {
                    m.put("hello".getBytes(StandardCharsets.US_ASCII), 0, Math.min(5, n)).clear();
                } else {
                    Checksum.fill(m, 100 + i);
                }
                c.sendAndWait(m, timeout);
                ByteBuffer r = replies.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
                if (r == null) {
                    throw new Failure("no echo of the " + n + "-byte message within " + timeout.toSeconds() + " s");
                }
                if (!r.equals(m)) {
                    throw new Failure("the echo of the " + n + "-byte message differs from what was sent");
                }
                sentBytes += n;
            }
            ConnectionStatistics cs = c.statistics();
            out.println("  " + MESSAGE_SIZES.length + " messages of 5 B to " + Units.bytes(MESSAGE_SIZES[MESSAGE_SIZES.length - 1])
                    + " (" + Units.bytes(sentBytes) + ") sent and echoed back, contents verified; "
                    + cs.fragmentsSent() + " Data Transfer messages sent, " + cs.fragmentsReceived()
                    + " received (larger messages are fragmented at MaxSendSize " + c.parameters().maxSendSize() + ")");
            record("messages, initiator", c);
            record("messages, listener", s);
            c.close();
        }
    }

    private void parameters(ConnectionParameters a, ConnectionParameters p) {
        String f = "    %-28s %14s %14s%n";
        out.printf(Locale.ROOT, f, "", "initiator", "listener");
        row(f, "Protocol version", hex(a.protocolVersion()), hex(p.protocolVersion()));
        row(f, "MaxSendSize", a.maxSendSize(), p.maxSendSize());
        row(f, "MaxReceiveSize", a.maxReceiveSize(), p.maxReceiveSize());
        row(f, "MaxFragmentedSendSize", a.maxFragmentedSendSize(), p.maxFragmentedSendSize());
        row(f, "MaxFragmentedRecvSize", a.maxFragmentedRecvSize(), p.maxFragmentedRecvSize());
        row(f, "MaxReadWriteSize", a.maxReadWriteSize(), p.maxReadWriteSize());
        row(f, "ReceiveCreditMax", a.receiveCreditMax(), p.receiveCreditMax());
        row(f, "SendCreditTarget", a.sendCreditTarget(), p.sendCreditTarget());
        row(f, "KeepaliveInterval", a.keepaliveInterval().toSeconds() + " s", p.keepaliveInterval().toSeconds() + " s");
        row(f, "IRD / ORD", a.ird() + " / " + a.ord(), p.ird() + " / " + p.ord());
        row(f, "RDMA Read", yesNo(a.rdmaRead()), yesNo(p.rdmaRead()));
        row(f, "Remote invalidate", yesNo(a.remoteInvalidate()), yesNo(p.remoteInvalidate()));
        row(f, "Provider", a.provider(), p.provider());
    }

    private void row(String format, String name, Object a, Object p) {
        out.printf(Locale.ROOT, format, name, a, p);
    }

    // ------------------------------------------------------------------ 4, 5. bulk transfers

    private void bulkTransfer(String provider, boolean expectRead) throws Exception {
        String path = expectRead ? "RDMA Read" : "RDMA Write";
        step(Units.bytes(payload) + " by " + path + " through the bulk layer (provider " + provider + ", RDMA Read "
                + (expectRead ? "available" : "disabled") + ")");
        use(provider);
        ByteBuffer data = ByteBuffer.allocateDirect((int) payload);
        Checksum.fill(data, expectRead ? 0x5eed : 0xfeed);
        long sentCrc = Checksum.of(data);
        CompletableFuture<BulkSession> accepted = new CompletableFuture<>();
        Sink sink = new Sink(payload);
        try (BulkListener listener = bulk.listen(new InetSocketAddress(addressOf(provider), 0), s -> {
            accepted.complete(s);
            return sink;
        })) {
            BulkHandler none = (s, d) -> {
            };
            BulkSession sender = bulk.connect(listener.localAddress(), none, timeout);
            BulkSession receiver = accepted.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            out.println("  session " + sender.connection().localAddress() + " -> " + sender.connection().remoteAddress()
                    + ": the receiver announced RDMA Read " + (sender.peerCanRdmaRead() ? "available" : "unavailable"));
            if (sender.peerCanRdmaRead() != expectRead) {
                throw new Failure("the receiver on " + provider + " announced RDMA Read "
                        + (sender.peerCanRdmaRead() ? "available" : "unavailable") + ", expected the opposite");
            }
            BulkStatistics before = sender.statistics();
            ConnectionStatistics sendBefore = sender.connection().statistics();
            ConnectionStatistics recvBefore = receiver.connection().statistics();
            long t0 = System.nanoTime();
            sender.sendAndWait(data, timeout);
            long received = sink.await(timeout);
            long nanos = System.nanoTime() - t0;
            BulkStatistics after = sender.statistics();
            ConnectionStatistics sendAfter = sender.connection().statistics();
            ConnectionStatistics recvAfter = receiver.connection().statistics();
            if (received != payload) {
                throw new Failure("the receiver got " + received + " bytes, expected " + payload);
            }
            out.println("  sent " + payload + " bytes in " + Units.seconds(nanos) + ": "
                    + String.format(Locale.ROOT, "%.1f MiB/s (%.1f MB/s)", Units.mibPerSecond(payload, nanos),
                            payload / (nanos / 1e9) / 1e6));
            out.println("  CRC-32C sent " + Checksum.hex(sentCrc) + ", received " + Checksum.hex(sink.crc()) + ": "
                    + (sentCrc == sink.crc() ? "match" : "MISMATCH"));
            if (sentCrc != sink.crc()) {
                throw new Failure("checksum mismatch over the " + path + " path");
            }
            long reads = after.readTransfers() - before.readTransfers();
            long writes = after.writeTransfers() - before.writeTransfers();
            long rdmaReads = recvAfter.rdmaReads() - recvBefore.rdmaReads();
            long rdmaReadBytes = recvAfter.rdmaReadBytes() - recvBefore.rdmaReadBytes();
            long rdmaWrites = sendAfter.rdmaWrites() - sendBefore.rdmaWrites();
            long rdmaWriteBytes = sendAfter.rdmaWriteBytes() - sendBefore.rdmaWriteBytes();
            out.println("  path taken: bulk read transfers " + reads + ", write transfers " + writes + "; receiver's RDMA Reads "
                    + rdmaReads + " (" + Units.bytes(rdmaReadBytes) + "), sender's RDMA Writes " + rdmaWrites + " ("
                    + Units.bytes(rdmaWriteBytes) + ")");
            if (expectRead && (reads < 1 || writes != 0 || rdmaReads < 1 || rdmaWrites != 0)) {
                throw new Failure("expected the RDMA Read path, the counters say otherwise");
            }
            if (!expectRead && (writes < 1 || reads != 0 || rdmaWrites < 1 || rdmaReads != 0)) {
                throw new Failure("expected the RDMA Write path, the counters say otherwise");
            }
            out.println("  => the payload moved by " + path);
            record(path + ", sender", sender.connection());
            record(path + ", receiver", receiver.connection());
            sender.close();
        }
    }

    /** Receives one payload, checksumming it as it arrives. */
    private static final class Sink implements BulkHandler {
        private final long expected;
        private final CRC32C crc = new CRC32C();
        private final CompletableFuture<Long> complete = new CompletableFuture<>();
        private long bytes;

        Sink(long expected) {
            this.expected = expected;
        }

        @Override
        public synchronized void onData(BulkSession s, ByteBuffer data) {
            bytes += data.remaining();
            crc.update(data);
            if (bytes >= expected) {
                complete.complete(bytes);
            }
        }

        @Override
        public void onClosed(BulkSession s, org.smbdirect.transport.ConnectionLoss loss) {
            complete.completeExceptionally(new IOException("the receiving session ended: " + loss.message()));
        }

        long await(Duration timeout) throws Exception {
            try {
                return complete.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new Failure("the receiver did not get all the data within " + timeout.toSeconds() + " s (got "
                        + bytes() + " of " + expected + ")");
            }
        }

        synchronized long bytes() {
            return bytes;
        }

        synchronized long crc() {
            return crc.getValue();
        }
    }

    // ------------------------------------------------------------------ 6. statistics

    private void record(String what, SmbDirectConnection c) {
        ConnectionStatistics s = c.statistics();
        statistics.add(new String[] {what, Long.toString(s.messagesSent()), Long.toString(s.messagesReceived()),
            Units.bytes(s.bytesSent()), Units.bytes(s.bytesReceived()), Long.toString(s.fragmentsSent()),
            Long.toString(s.fragmentsReceived()), Long.toString(s.creditsGranted()), Long.toString(s.creditsReceived()),
            Long.toString(s.creditStalls()), s.rdmaReads() + " / " + Units.bytes(s.rdmaReadBytes()),
            s.rdmaWrites() + " / " + Units.bytes(s.rdmaWriteBytes())});
    }

    private void printStatistics() {
        step("statistics per connection (MS-SMBD counters of each side)");
        String f = "  %-22s %5s %5s %10s %10s %6s %6s %7s %7s %6s %18s %18s%n";
        out.printf(Locale.ROOT, f, "connection", "msgs>", "msgs<", "bytes>", "bytes<", "frag>", "frag<", "granted",
                "recvd", "stalls", "RDMA Read", "RDMA Write");
        for (String[] r : statistics) {
            out.printf(Locale.ROOT, f, (Object[]) r);
        }
        TransportStatistics t = transport.statistics();
        out.println("  transport: " + t.connectionsEstablished() + " connections established, " + t.connectionsFailed()
                + " failed, " + t.connectionsOpen() + " open; RDMA Reads " + t.rdmaReads() + " ("
                + Units.bytes(t.rdmaReadBytes()) + "), RDMA Writes " + t.rdmaWrites() + " (" + Units.bytes(t.rdmaWriteBytes())
                + "); terminations " + t.terminations());
    }

    // ------------------------------------------------------------------ 7. capture and clean-up

    /** Removes the demo's providers, restores the transport's target, merges the capture. */
    private boolean cleanUp(boolean passed) throws Exception {
        if (created.isEmpty() && !targetChanged) {
            return true;
        }
        if (passed) {
            step("capture and clean-up");
        }
        if (targetChanged) {
            if (hadProtocolConfiguration) {
                configs.setProviderTarget(previousTarget);
            } else {
                configs.protocol().delete();
            }
        }
        for (Configuration c : created) {
            c.delete();
        }
        boolean gone = Services.awaitGone(context, RdmaProvider.class, "(|(provider.name=" + READ_PROVIDER
                + ")(provider.name=" + WRITE_PROVIDER + "))", timeout);
        if (!gone) {
            out.println("  the demo's providers did not go away within " + timeout.toSeconds() + " s");
            return false;
        }
        if (configs.simFactoryConfigurations().isEmpty()) {
            // the default provider is back: give it its settings again
            configs.restoreSimSingleton(droppedSingleton);
        }
        if (capture == null || partialCaptures.isEmpty()) {
            return true;
        }
        try {
            long frames = Pcap.merge(partialCaptures, capture, timeout);
            for (Path p : partialCaptures) {
                Files.deleteIfExists(p);
            }
            if (passed) {
                out.println("  capture: " + capture + " (" + frames + " frames, " + Units.bytes(Files.size(capture)) + ")");
                out.println("  decode the SMB Direct messages:  tshark -r " + capture + " -Y smb_direct -O smb_direct");
                out.println("  one line per RoCEv2 frame:       tshark -r " + capture);
                out.println("  or open it in Wireshark:         wireshark " + capture);
            }
            return true;
        } catch (IOException e) {
            out.println("  capture could not be written: " + e.getMessage());
            return false;
        }
    }

    private static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }

    private static String hex(int v) {
        return String.format("0x%04x", v);
    }

    /** Classic pcap files: merging by timestamp. */
    static final class Pcap {
        private Pcap() {
        }

        /**
         * Merges complete pcap files (same link type) into one, in timestamp order, once each is
         * complete and no longer growing.
         *
         * @return the number of frames written
         */
        static long merge(List<Path> parts, Path target, Duration timeout) throws IOException, InterruptedException {
            List<List<long[]>> records = new ArrayList<>();
            List<ByteBuffer> contents = new ArrayList<>();
            ByteBuffer header = null;
            int linkType = 0;
            for (Path p : parts) {
                ByteBuffer b = settled(p, timeout);
                if (header == null) {
                    header = b.duplicate().limit(24);
                    linkType = b.getInt(20);
                } else if (b.getInt(20) != linkType) {
                    throw new IOException(p + " has another link type");
                }
                contents.add(b);
                records.add(index(b));
            }
            Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
            long frames = 0;
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(tmp,
                    java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.TRUNCATE_EXISTING,
                    java.nio.file.StandardOpenOption.WRITE)) {
                write(ch, header.duplicate());
                int[] next = new int[parts.size()];
                while (true) {
                    int best = -1;
                    for (int i = 0; i < parts.size(); i++) {
                        if (next[i] < records.get(i).size() && (best < 0
                                || records.get(i).get(next[i])[0] < records.get(best).get(next[best])[0])) {
                            best = i;
                        }
                    }
                    if (best < 0) {
                        break;
                    }
                    long[] r = records.get(best).get(next[best]++);
                    write(ch, contents.get(best).duplicate().position((int) r[1]).limit((int) (r[1] + r[2])));
                    frames++;
                }
            }
            Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
            return frames;
        }

        private static void write(java.nio.channels.FileChannel ch, ByteBuffer b) throws IOException {
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }

        /** Reads a file once it parses completely and its size has not changed for 200 ms. */
        private static ByteBuffer settled(Path p, Duration timeout) throws IOException, InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            long lastSize = -1;
            int stable = 0;
            while (true) {
                long size = Files.exists(p) ? Files.size(p) : -1;
                if (size >= 24 && size == lastSize) {
                    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
                    if (b.getInt(0) != 0xa1b2c3d4) {
                        throw new IOException(p + " is not a little-endian microsecond pcap file");
                    }
                    if (complete(b) && ++stable >= 4) {
                        return b;
                    }
                } else {
                    stable = 0;
                }
                lastSize = size;
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException(p + " was not complete within " + timeout.toSeconds() + " s");
                }
                Thread.sleep(50);
            }
        }

        private static boolean complete(ByteBuffer b) {
            int p = 24;
            while (p + 16 <= b.limit()) {
                p += 16 + b.getInt(p + 8);
            }
            return p == b.limit();
        }

        /** (timestamp in microseconds, offset, record length) of each record. */
        private static List<long[]> index(ByteBuffer b) {
            List<long[]> r = new ArrayList<>();
            int p = 24;
            while (p + 16 <= b.limit()) {
                long micros = Integer.toUnsignedLong(b.getInt(p)) * 1_000_000L + Integer.toUnsignedLong(b.getInt(p + 4));
                int len = 16 + b.getInt(p + 8);
                r.add(new long[] {micros, p, len});
                p += len;
            }
            return r;
        }
    }
}
