package org.smbdirect.shell.internal;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;

/**
 * A bandwidth benchmark over a loopback connection of the current provider, printed as perftest
 * prints its {@code ib_*_bw} tables. MB is 2^20 bytes, as in perftest. BW average is the bytes of
 * the measured iterations over the time from the first post to the last completion; BW peak is
 * the best average over any tenth of the iterations (consecutive completions); MsgRate is
 * iterations per second in millions.
 */
final class Bench {
    static final String LINE = "---------------------------------------------------------------------------------------";
    static final String HEADER = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";

    /** The operation measured. */
    enum Op {
        WRITE("RDMA_Write"), READ("RDMA_Read"), SEND("Send"), BULK("Bulk transfer");

        final String title;

        Op(String title) {
            this.title = title;
        }
    }

    /** One row of the table. */
    static final class Row {
        final long bytes;
        final int iterations;
        final double peak;
        final double average;
        final double mpps;

        Row(long bytes, int iterations, double peak, double average, double mpps) {
            this.bytes = bytes;
            this.iterations = iterations;
            this.peak = peak;
            this.average = average;
            this.mpps = mpps;
        }

        String format() {
            return String.format(Locale.ROOT, " %-10d %-14d %-18.2f %-20.2f %.6f", bytes, iterations, peak, average,
                    mpps);
        }
    }

    private final SmbDirect transport;
    private final BulkTransfer bulk;
    private final InetAddress address;
    private final PrintStream out;
    private final Duration stall;

    Bench(SmbDirect transport, BulkTransfer bulk, InetAddress address, PrintStream out, Duration stall) {
        this.transport = transport;
        this.bulk = bulk;
        this.address = address;
        this.out = out;
        this.stall = stall;
    }

    /** Runs every size, printing the table as it goes. */
    List<Row> run(Op op, List<Long> sizes, int iterations, int depth) throws Exception {
        if (op == Op.BULK) {
            return runBulk(sizes, iterations, depth);
        }
        CompletableFuture<SmbDirectConnection> accepted = new CompletableFuture<>();
        CompletableFuture<ByteBuffer> descriptors = new CompletableFuture<>();
        ConnectionHandler server = (c, m, t) -> {
        };
        ConnectionHandler client = new ConnectionHandler() {
            @Override
            public void onMessage(SmbDirectConnection c, ByteBuffer m, OptionalInt t) {
                ByteBuffer copy = ByteBuffer.allocate(m.remaining());
                copy.put(m.duplicate()).flip();
                descriptors.complete(copy);
            }
        };
        long max = sizes.stream().mapToLong(Long::longValue).max().orElse(1);
        try (SmbDirectListener listener = transport.listen(new InetSocketAddress(address, 0), c -> {
            accepted.complete(c);
            return server;
        })) {
            InetSocketAddress at = listener.localAddress();
            if (at == null) {
                throw new SmbDirectException("the listener has no address: no RDMA provider");
            }
            try (SmbDirectConnection c = transport.connect(at, client, stall);
                    SmbDirectConnection s = accepted.get(stall.toMillis(), TimeUnit.MILLISECONDS)) {
                long limit = op == Op.SEND ? c.parameters().maxFragmentedSendSize() : c.parameters().maxReadWriteSize();
                if (max > limit) {
                    throw new UsageException("largest size " + max + " exceeds the connection's "
                            + (op == Op.SEND ? "MaxFragmentedSendSize" : "MaxReadWriteSize") + " of " + limit);
                }
                if (op == Op.READ && !c.parameters().rdmaRead()) {
                    throw new UsageException("the provider " + c.parameters().provider() + " cannot RDMA Read");
                }
                header(op, c, depth);
                ByteBuffer local = ByteBuffer.allocateDirect((int) max);
                Checksum.fill(local, 7);
                List<BufferDescriptorV1> remote = null;
                RegisteredBuffer region = null;
                try {
                    if (op != Op.SEND) {
                        region = s.register(ByteBuffer.allocateDirect((int) max), RemoteAccess.READ_WRITE);
                        s.sendAndWait(region.encodeDescriptors(), stall);
                        ByteBuffer d = descriptors.get(stall.toMillis(), TimeUnit.MILLISECONDS);
                        remote = BufferDescriptorV1.decodeAll(d, d.remaining() / BufferDescriptorV1.SIZE);
                    }
                    List<BufferDescriptorV1> r = remote;
                    List<Row> rows = new java.util.ArrayList<>();
                    for (long size : sizes) {
                        ByteBuffer slice = local.duplicate().position(0).limit((int) size).slice();
                        Row row = measure(size, iterations, depth, () -> {
                            switch (op) {
                                case WRITE:
                                    return c.rdmaWrite(slice, r, 0);
                                case READ:
                                    return c.rdmaRead(slice, r, 0);
                                default:
                                    return c.send(slice);
                            }
                        });
                        out.println(row.format());
                        out.flush();
                        rows.add(row);
                    }
                    out.println(LINE);
                    return rows;
                } finally {
                    if (region != null) {
                        region.close();
                    }
                }
            }
        }
    }

    private List<Row> runBulk(List<Long> sizes, int iterations, int depth) throws Exception {
        if (bulk == null) {
            throw new UsageException("--op bulk needs the bulk-transfer service (bundle org.smbdirect.bulk)");
        }
        BulkHandler sink = (s, d) -> {
        };
        try (BulkListener listener = bulk.listen(new InetSocketAddress(address, 0), s -> sink)) {
            InetSocketAddress at = listener.localAddress();
            if (at == null) {
                throw new SmbDirectException("the listener has no address: no RDMA provider");
            }
            try (BulkSession session = bulk.connect(at, sink, stall)) {
                int d = Math.min(depth, bulk.configuration().maxInFlight());
                header(Op.BULK, session.connection(), d);
                long max = sizes.stream().mapToLong(Long::longValue).max().orElse(1);
                ByteBuffer local = ByteBuffer.allocateDirect((int) max);
                Checksum.fill(local, 7);
                List<Row> rows = new java.util.ArrayList<>();
                for (long size : sizes) {
                    ByteBuffer slice = local.duplicate().position(0).limit((int) size).slice();
                    Row row = measure(size, iterations, d, () -> session.send(slice));
                    out.println(row.format());
                    out.flush();
                    rows.add(row);
                }
                out.println(LINE);
                out.println(" path: " + (session.peerCanRdmaRead() ? "RDMA Read by the receiver" : "RDMA Write by the sender")
                        + " beyond the inline threshold of " + bulk.configuration().inlineThreshold() + " bytes");
                return rows;
            }
        }
    }

    private void header(Op op, SmbDirectConnection c, int depth) {
        out.println(LINE);
        out.println("                    " + op.title + " BW Test (SMB Direct over " + c.parameters().provider() + ")");
        out.println(" Connection: " + c.localAddress() + " -> " + c.remoteAddress() + "   Outstanding: " + depth
                + "   MaxReadWriteSize: " + c.parameters().maxReadWriteSize() + "   MaxFragmentedSendSize: "
                + c.parameters().maxFragmentedSendSize());
        out.println(LINE);
        out.println(HEADER);
        out.flush();
    }

    /** One post of the operation. */
    interface Post {
        CompletionStage<Void> post();
    }

    private Row measure(long size, int iterations, int depth, Post post) throws Exception {
        int warmup = Math.max(1, Math.min(100, iterations / 10));
        run(warmup, depth, post, null);
        long[] done = new long[iterations];
        long start = System.nanoTime();
        run(iterations, depth, post, done);
        long end = done[iterations - 1];
        long total = Math.max(1, end - start);
        int window = Math.max(1, iterations / 10);
        double peak = 0;
        for (int i = 0; i + window < iterations; i++) {
            long t = done[i + window] - done[i];
            if (t > 0) {
                peak = Math.max(peak, size * (double) window / t);
            }
        }
        double average = size * (double) iterations / total;
        if (peak < average) {
            peak = average;
        }
        double toMBps = 1e9 / Units.MIB;
        return new Row(size, iterations, peak * toMBps, average * toMBps, iterations / (total / 1e9) / 1e6);
    }

    /** Posts {@code n} operations with at most {@code depth} outstanding; records completion times in order. */
    private void run(int n, int depth, Post post, long[] times) throws Exception {
        Semaphore slots = new Semaphore(depth);
        AtomicInteger completed = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        for (int i = 0; i < n; i++) {
            if (!slots.tryAcquire(stall.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new TimeoutException("no completion for " + stall.toSeconds() + " s");
            }
            Throwable f = failure.get();
            if (f != null) {
                throw new SmbDirectException(Transfer.describe(f), f);
            }
            post.post().whenComplete((v, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                }
                int k = completed.getAndIncrement();
                if (times != null && k < times.length) {
                    times[k] = System.nanoTime();
                }
                slots.release();
            });
        }
        if (!slots.tryAcquire(depth, stall.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new TimeoutException("no completion for " + stall.toSeconds() + " s");
        }
        Throwable f = failure.get();
        if (f != null) {
            throw new SmbDirectException(Transfer.describe(f), f);
        }
    }
}
