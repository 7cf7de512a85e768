package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.smbdirect.smbj.RdmaChannelStatistics;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.session.Session;
import com.hierynomus.smbj.share.DiskShare;
import com.hierynomus.smbj.share.File;
import com.sun.nio.file.ExtendedOpenOption;

/**
 * The numbers of BENCHMARKS.md's SMB3 table, against the same ksmbd in the same guest: sequential
 * 64 MiB write and read, and 4 KiB random reads (one at a time) for smbj over SMB Direct (the
 * product's transport), smbj over TCP (its own Direct TCP transport, port 445 of the same address)
 * and the Linux cifs client mounted with {@code -o rdma}, through the file system with O_DIRECT (no
 * page cache: every request goes to the server), and the same cifs over TCP as the control: what
 * the RDMA transport changes for the kernel's own client against the same ksmbd. All four with the
 * same dialect, SMB 3.1.1 (what both clients negotiate by default; {@code -Dinterop.benchDialect=3.0}
 * or {@code 3.0.2} for another), and as each does by default: smbj signs (it will not turn signing off for SMB 3), cifs
 * does not (and so offloads to RDMA; signed, it would not). From 3.0.2 on the server invalidates the
 * registration with its response (Send with Invalidate), which the verbs provider's registration
 * cache turns into a window bound again for the next request.
 * The random reads of the clients take turns in slices of {@value #SLICE_MILLIS} ms, each client
 * with its file open since its copies, so that all of them meet the same moments of the emulated
 * guest, whose speed drifts by a factor of two within minutes.
 * {@code -Dinterop.benchRuns=N} (through {@code -Dinterop.jvmOpts}) repeats each measurement and
 * reports medians; it runs where {@code -Dinterop.benchTransports=rxe} (or {@code rxe,siw}) asks
 * for it, not in every build: it takes three minutes of the emulated guest. It
 * asserts only that each copy arrived intact: the guest is TCG-emulated, its timings are reported,
 * never asserted.
 */
class SmbjBenchmarkTest {
    private static final int MIB = 1 << 20;
    private static final int SIZE = 64 * MIB;
    private static final int CHUNK = 4 * MIB;
    private static final Path MOUNT = Paths.get("/tmp/bench-cifs");
    /** The same share mounted by cifs over TCP: the control for what RDMA changes for the kernel's client. */
    private static final Path MOUNT_TCP = Paths.get("/tmp/bench-cifs-tcp");
    private static final int RUNS = Integer.getInteger("interop.benchRuns", 1);
    private static final String DIALECT = System.getProperty("interop.benchDialect", "3.1.1");
    /** Each client's share of the random reads (the slices of all clients together take as many times longer). */
    private static final long RANDOM_NANOS = TimeUnit.SECONDS.toNanos(Long.getLong("interop.benchRandomSeconds", 3));
    private static final long SLICE_MILLIS = 250;

    /**
     * With {@code -Dinterop.benchRdmaThreshold=N}, one more row: smbj over SMB Direct with the
     * RDMA channel only from N bytes on (4097: 4 KiB reads inline).
     */
    private static final Integer RDMA_FROM = Integer.getInteger("interop.benchRdmaThreshold");
    /**
     * With {@code -Dinterop.benchReadParts=N}, one more row: smbj over SMB Direct sending its large
     * READs as up to N parts (the default is {@link SmbjOptions#readParts()} of the defaults).
     */
    private static final Integer READ_PARTS = Integer.getInteger("interop.benchReadParts");
    /**
     * With {@code -Dinterop.benchWriteParts=N}, one more row: smbj over SMB Direct sending its large
     * WRITEs as up to N parts (the default is {@link SmbjOptions#writeParts()} of the defaults).
     */
    private static final Integer WRITE_PARTS = Integer.getInteger("interop.benchWriteParts");
    /**
     * With {@code -Dinterop.benchRegisterAhead=false}, one more row: smbj over SMB Direct without
     * registrations made ahead ({@link SmbjOptions#registerAhead()}), to compare in the same run.
     */
    private static final boolean NOT_AHEAD = "false".equals(System.getProperty("interop.benchRegisterAhead"));

    private static SmbDirect engine;
    private static SmbjTransport smbj;

    @BeforeAll
    static void start() throws Exception {
        Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
        Guest.peersResult(60, "ksmbd-debug", "off", "all"); // debug output would be measured too
        Guest.peers("cifs-mount", "//" + Guest.address().getHostAddress() + "/share", MOUNT.toString(),
                "vers=" + DIALECT);
        Guest.peers("cifs-mount-tcp", "//" + Guest.address().getHostAddress() + "/share", MOUNT_TCP.toString(),
                "vers=" + DIALECT);
        engine = Guest.engine(SmbDirectConfig.defaults());
        smbj = SmbjTransport.create(engine, SmbjOptions.defaults());
    }

    @AfterAll
    static void stop() throws Exception {
        if (engine != null) {
            engine.close();
        }
        Guest.peersResult(60, "cifs-umount", MOUNT.toString());
        Guest.peersResult(60, "cifs-umount", MOUNT_TCP.toString());
        Guest.peersResult(60, "ksmbd-stop");
    }

    /** Opens a client's file on the share, created or emptied. */
    private interface ClientFactory {
        Client open(String name) throws Exception;
    }

    /** One client's file, open for a whole run: its copies first, then its turns of random reads. */
    private interface Client extends AutoCloseable {
        /**
         * Writes the data, reads it back and reads it again as a stream, each checked.
         *
         * @return write, read and streamed read in MiB/s (NaN without a streamed read)
         */
        double[] copy(byte[] data) throws Exception;

        /** Reads the 4 KiB at {@code offset}. */
        void readPage(long offset) throws Exception;

        /** The SMB Direct connection's counters now, for a client over SMB Direct; else {@code null}. */
        default ConnectionStatistics statistics() {
            return null;
        }

        /** Its transport's RDMA-channel counters now, for a client over SMB Direct; else {@code null}. */
        default RdmaChannelStatistics channel() {
            return null;
        }
    }

    @Test
    void smbjOverSmbDirect_smbjOverTcp_cifsRdma_cifsTcp() throws Exception {
        byte[] data = new byte[SIZE];
        new SplittableRandom(64).nextBytes(data);
        // smbj signs every SMB 3 request it can (it refuses to turn signing off for SMB 3.x)
        SMB2Dialect dialect = dialect();
        SmbConfig direct = smbj.configBuilder().withDialects(dialect).withTimeout(120, TimeUnit.SECONDS).build();
        SmbConfig tcp = SmbConfig.builder().withNegotiatedBufferSize().withDialects(dialect)
                .withTimeout(120, TimeUnit.SECONDS).build();
        List<String> names = new ArrayList<>(List.of("smbj over SMB Direct", "smbj over TCP", "Linux cifs -o rdma",
                "Linux cifs over TCP"));
        List<ClientFactory> clients = new ArrayList<>(List.of(n -> new SmbjClient(direct, n, smbj),
                n -> new SmbjClient(tcp, n, null), n -> new CifsClient(MOUNT, n), n -> new CifsClient(MOUNT_TCP, n)));
        if (RDMA_FROM != null) {
            names.add("smbj SMBD, RDMA from " + RDMA_FROM + " B");
            clients.add(smbjWith(SmbjOptions.defaults().toBuilder().rdmaThreshold(RDMA_FROM).build(), dialect));
        }
        if (READ_PARTS != null) {
            names.add("smbj SMBD, READs in " + READ_PARTS + " parts");
            clients.add(smbjWith(SmbjOptions.defaults().toBuilder().readParts(READ_PARTS).build(), dialect));
        }
        if (WRITE_PARTS != null) {
            names.add("smbj SMBD, WRITEs in " + WRITE_PARTS + " parts");
            clients.add(smbjWith(SmbjOptions.defaults().toBuilder().writeParts(WRITE_PARTS).build(), dialect));
        }
        if (NOT_AHEAD) {
            names.add("smbj SMBD, none made ahead");
            clients.add(smbjWith(SmbjOptions.defaults().toBuilder().registerAhead(false).build(), dialect));
        }
        List<List<double[]>> results = new ArrayList<>();
        for (int c = 0; c < clients.size(); c++) {
            results.add(new ArrayList<>());
        }
        for (int run = 0; run < RUNS; run++) {
            List<Client> open = new ArrayList<>();
            try {
                List<double[]> copies = new ArrayList<>();
                for (int c = 0; c < clients.size(); c++) {
                    open.add(clients.get(c).open("bench-" + c + ".bin"));
                    copies.add(open.get(c).copy(data));
                }
                double[] reads = randomReads(open, names);
                for (int c = 0; c < clients.size(); c++) {
                    double[] r = copies.get(c);
                    results.get(c).add(new double[] {r[0], r[1], reads[c], r[2]});
                    System.out.printf(Locale.ROOT, "run %d, %s: write %.1f MiB/s, read %.1f MiB/s, streamed read %.1f "
                            + "MiB/s, %.0f reads/s%n", run + 1, names.get(c), r[0], r[1], r[2], reads[c]);
                }
            } finally {
                for (Client c : open) {
                    c.close();
                }
            }
        }
        StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                "%s SMB3 benchmark (SMB " + DIALECT + "; smbj signed, cifs not, as each does by default; 64 MiB; medians of %d run%s; "
                        + "TCG-emulated guest):%n"
                        + "  %-27s %14s %14s %20s %18s%n", Guest.transport(), RUNS, RUNS == 1 ? "" : "s", "client",
                "write MiB/s", "read MiB/s", "streamed read MiB/s", "4 KiB reads/s"));
        for (int c = 0; c < clients.size(); c++) {
            double streamed = median(results.get(c), 3);
            table.append(String.format(Locale.ROOT, "  %-27s %14.1f %14.1f %20s %18.0f%n", names.get(c),
                    median(results.get(c), 0), median(results.get(c), 1),
                    Double.isNaN(streamed) ? "-" : String.format(Locale.ROOT, "%.1f", streamed), median(results.get(c), 2)));
        }
        Guest.record(table.toString().trim());
    }

    /** smbj over SMB Direct with other options, on the same engine. */
    private static ClientFactory smbjWith(SmbjOptions options, SMB2Dialect dialect) {
        SmbjTransport t = SmbjTransport.create(engine, options);
        SmbConfig config = t.configBuilder().withDialects(dialect).withTimeout(120, TimeUnit.SECONDS).build();
        return n -> new SmbjClient(config, n, t);
    }

    /** 3.0, 3.0.2 or 3.1.1 as smbj names it (SMB_3_0_2). */
    private static SMB2Dialect dialect() {
        return SMB2Dialect.valueOf("SMB_" + DIALECT.replace('.', '_'));
    }

    private static double median(List<double[]> runs, int i) {
        List<Double> v = new ArrayList<>();
        for (double[] r : runs) {
            v.add(r[i]);
        }
        Collections.sort(v);
        return v.size() % 2 == 1 ? v.get(v.size() / 2) : (v.get(v.size() / 2 - 1) + v.get(v.size() / 2)) / 2;
    }

    /**
     * Before a copy's clock starts: the harness's own arrays (64 MiB each, the data, its destination
     * and the last copy's) are collected, so that the collector's copying of them, a third of a second
     * in the emulated guest, is not charged to whichever client's copy it happens to fall in.
     */
    private static void collected() {
        System.gc();
    }

    private static double per(long count, long reads) {
        return count / (double) reads;
    }

    private static double mibps(long nanos) {
        return SIZE / (double) MIB / (nanos / 1e9);
    }

    /**
     * The random 4 KiB reads, one at a time per client: the clients take turns in slices of
     * {@value #SLICE_MILLIS} ms until each had {@code RANDOM_NANOS}; every client reads the same
     * sequence of offsets.
     *
     * @param clients the clients
     * @param names their names, for what is printed about each
     * @return reads per second of each client, over its own slices
     */
    private static double[] randomReads(List<Client> clients, List<String> names) throws Exception {
        int n = clients.size();
        long[] ops = new long[n];
        long[] nanos = new long[n];
        SplittableRandom[] random = new SplittableRandom[n];
        for (int c = 0; c < n; c++) {
            random[c] = new SplittableRandom(4096);
        }
        ConnectionStatistics[] before = new ConnectionStatistics[n];
        RdmaChannelStatistics[] channelBefore = new RdmaChannelStatistics[n];
        for (int c = 0; c < n; c++) {
            before[c] = clients.get(c).statistics();
            channelBefore[c] = clients.get(c).channel();
        }
        long slice = TimeUnit.MILLISECONDS.toNanos(SLICE_MILLIS);
        long slices = Math.max(1, RANDOM_NANOS / slice);
        for (long s = 0; s < slices; s++) {
            for (int c = 0; c < n; c++) {
                Client client = clients.get(c);
                long start = System.nanoTime();
                long end = start + slice;
                long now;
                do {
                    client.readPage(random[c].nextInt(SIZE / 4096) * 4096L);
                    ops[c]++;
                    now = System.nanoTime();
                } while (now < end);
                nanos[c] += now - start;
            }
        }
        double[] rates = new double[n];
        for (int c = 0; c < n; c++) {
            rates[c] = ops[c] / (nanos[c] / 1e9);
            ConnectionStatistics after = clients.get(c).statistics();
            RdmaChannelStatistics channelAfter = clients.get(c).channel();
            if (before[c] != null && after != null && channelBefore[c] != null && channelAfter != null) {
                System.out.printf(Locale.ROOT, "%s, per 4 KiB read: %.2f messages sent (%.2f fragments), %.2f "
                        + "received (%.2f fragments), %.2f credits granted, %.2f keepalives sent, %.2f registered "
                        + "ahead%n", names.get(c),
                        per(after.messagesSent() - before[c].messagesSent(), ops[c]),
                        per(after.fragmentsSent() - before[c].fragmentsSent(), ops[c]),
                        per(after.messagesReceived() - before[c].messagesReceived(), ops[c]),
                        per(after.fragmentsReceived() - before[c].fragmentsReceived(), ops[c]),
                        per(after.creditsGranted() - before[c].creditsGranted(), ops[c]),
                        per(after.keepalivesSent() - before[c].keepalivesSent(), ops[c]),
                        per(channelAfter.readsRegisteredAhead() - channelBefore[c].readsRegisteredAhead(), ops[c]));
            }
        }
        return rates;
    }

    /** smbj, over the transport its configuration names. */
    private static final class SmbjClient implements Client {
        private final SMBClient client;
        private final Connection connection;
        private final Session session;
        private final DiskShare share;
        private final File file;
        private final String name;
        private final byte[] page = new byte[4096];
        /** The transport under smbj, or {@code null} for smbj over TCP. */
        private final SmbjTransport over;

        SmbjClient(SmbConfig config, String name, SmbjTransport over) throws IOException {
            this.name = name;
            this.over = over;
            client = new SMBClient(config);
            try {
                connection = client.connect(Guest.address().getHostAddress());
                session = Guest.login(connection);
                share = (DiskShare) session.connectShare("share");
                file = Guest.create(share, name);
            } catch (IOException | RuntimeException e) {
                client.close(); // closes its connections, and their sessions and shares with them
                throw e;
            }
        }

        @Override
        public double[] copy(byte[] data) throws IOException {
            RdmaChannelStatistics s0 = channel();
            collected();
            long start = System.nanoTime();
            file.write(data, 0);
            long write = System.nanoTime() - start;
            // the destination exists before the clock starts, as cifs's does
            byte[] back = new byte[SIZE];
            collected();
            start = System.nanoTime();
            Guest.readAll(file, back);
            long read = System.nanoTime() - start;
            RdmaChannelStatistics s1 = channel();
            if (s0 != null && s1 != null) {
                System.out.printf(Locale.ROOT, "%s, 64 MiB: %d WRITEs through the RDMA channel (%d of smbj's sent in "
                        + "parts, %d on registrations made ahead), %d READs (%d in parts, %d made ahead)%n", name,
                        s1.rdmaWrites() - s0.rdmaWrites(), s1.splitWrites() - s0.splitWrites(),
                        s1.writesRegisteredAhead() - s0.writesRegisteredAhead(), s1.rdmaReads() - s0.rdmaReads(),
                        s1.splitReads() - s0.splitReads(), s1.readsRegisteredAhead() - s0.readsRegisteredAhead());
            }
            assertArrayEquals(data, back, name + " read back");
            if (over == null) {
                // smbj over TCP drops ksmbd's signature of the STATUS_END_OF_FILE answer that ends a
                // stream, and would wait for its timeout (SmbjFileAccessTest asserts it)
                return new double[] {mibps(write), mibps(read), Double.NaN};
            }
            // smbj's stream read (File.read(OutputStream)): its input stream keeps one READ ahead
            Sink sink = new Sink(SIZE);
            collected();
            start = System.nanoTime();
            file.read(sink);
            long streamed = System.nanoTime() - start;
            assertArrayEquals(data, sink.bytes, name + " streamed back");
            return new double[] {mibps(write), mibps(read), mibps(streamed)};
        }

        @Override
        public void readPage(long offset) {
            file.read(page, offset, 0, 4096);
        }

        @Override
        public ConnectionStatistics statistics() {
            return over == null ? null : over.connectionOf(connection).map(SmbDirectConnection::statistics).orElse(null);
        }

        @Override
        public RdmaChannelStatistics channel() {
            return over == null ? null : over.statistics();
        }

        @Override
        public void close() throws Exception {
            try (client; connection; session; share; file) {
                // closed in the reverse order of opening
            }
        }
    }

    /** Collects a stream into one preallocated array (the same single copy as File.read into an array). */
    private static final class Sink extends OutputStream {
        final byte[] bytes;
        private int at;

        Sink(int size) {
            bytes = new byte[size];
        }

        @Override
        public void write(int b) {
            bytes[at++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int len) {
            System.arraycopy(b, off, bytes, at, len);
            at += len;
        }
    }

    /**
     * cifs through the file system, with O_DIRECT (no page cache: each request goes to ksmbd) in
     * 4 MiB requests for the sequential copies, as smbj's are, and 4 KiB for the random reads.
     */
    private static final class CifsClient implements Client {
        private final Path file;
        private final ByteBuffer aligned = ByteBuffer.allocateDirect(CHUNK + 4096).alignedSlice(4096);
        private final ByteBuffer page;
        private FileChannel reads;

        CifsClient(Path mount, String name) {
            file = mount.resolve(name);
            page = aligned.duplicate().limit(4096).slice();
        }

        @Override
        public double[] copy(byte[] data) throws IOException {
            collected();
            long start = System.nanoTime();
            try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING, ExtendedOpenOption.DIRECT)) {
                for (int off = 0; off < SIZE; off += CHUNK) {
                    aligned.clear().limit(CHUNK);
                    aligned.put(data, off, CHUNK).flip();
                    while (aligned.hasRemaining()) {
                        out.write(aligned, off + aligned.position());
                    }
                }
            }
            long write = System.nanoTime() - start;
            byte[] back = new byte[SIZE];
            collected();
            start = System.nanoTime();
            try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ, ExtendedOpenOption.DIRECT)) {
                for (int off = 0; off < SIZE; off += CHUNK) {
                    aligned.clear().limit(CHUNK);
                    while (aligned.hasRemaining() && in.read(aligned, off + aligned.position()) > 0) {
                        // one 4 MiB O_DIRECT read is as many cifs READs as its rsize asks for
                    }
                    aligned.flip().get(back, off, CHUNK);
                }
            }
            long read = System.nanoTime() - start;
            assertArrayEquals(data, back, file + " read back through cifs");
            reads = FileChannel.open(file, StandardOpenOption.READ, ExtendedOpenOption.DIRECT);
            return new double[] {mibps(write), mibps(read), Double.NaN};
        }

        @Override
        public void readPage(long offset) throws IOException {
            page.clear();
            reads.read(page, offset);
        }

        @Override
        public void close() throws IOException {
            if (reads != null) {
                reads.close();
            }
        }
    }
}
