package org.smbdirect.shell.internal;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.transport.ConnectionLostException;

/**
 * Sends a file or a generated payload over a bulk session in chunks, several in flight, with a
 * progress bar and a summary (bytes, time, throughput, the path the data took, CRC-32C).
 */
final class Transfer {
    /** Where the bytes come from. */
    interface Source extends AutoCloseable {
        long size();

        /** Fills {@code into} (cleared, limit set to the chunk size) with the next bytes. */
        void next(ByteBuffer into) throws IOException;

        String describe();

        @Override
        void close() throws IOException;
    }

    /** A reproducible pseudo-random payload. */
    static Source generated(long size, long seed) {
        return new Source() {
            private long chunk;

            @Override
            public long size() {
                return size;
            }

            @Override
            public void next(ByteBuffer into) {
                Checksum.fill(into, seed * 1_000_003L + chunk++);
            }

            @Override
            public String describe() {
                return "generated payload of " + Units.bytes(size);
            }

            @Override
            public void close() {
            }
        };
    }

    /**
     * A file, opened at once so that a missing or unreadable one is named before anything else
     * happens.
     */
    static Source file(Path path) throws UsageException {
        Path p = path.toAbsolutePath().normalize();
        if (Files.isDirectory(p)) {
            throw new UsageException("cannot send " + p + ": it is a directory");
        }
        FileChannel ch;
        long size;
        try {
            ch = FileChannel.open(p, StandardOpenOption.READ);
            size = ch.size();
        } catch (NoSuchFileException e) {
            throw new UsageException("file not found: " + p);
        } catch (AccessDeniedException e) {
            throw new UsageException("cannot read " + p + ": permission denied");
        } catch (IOException | SecurityException e) {
            throw new UsageException("cannot read " + p + ": " + e.getMessage());
        }
        return new Source() {
            @Override
            public long size() {
                return size;
            }

            @Override
            public void next(ByteBuffer into) throws IOException {
                while (into.hasRemaining()) {
                    if (ch.read(into) < 0) {
                        throw new IOException(p + " became shorter while it was being sent");
                    }
                }
                into.flip();
            }

            @Override
            public String describe() {
                return p + " (" + Units.bytes(size) + ")";
            }

            @Override
            public void close() throws IOException {
                ch.close();
            }
        };
    }

    /** What a transfer achieved. */
    static final class Result {
        final long bytes;
        final long nanos;
        final long crc;
        final String path;
        final Throwable failure;

        Result(long bytes, long nanos, long crc, String path, Throwable failure) {
            this.bytes = bytes;
            this.nanos = nanos;
            this.crc = crc;
            this.path = path;
            this.failure = failure;
        }
    }

    private Transfer() {
    }

    /**
     * Sends everything from the source, at most {@code depth} chunks in flight.
     *
     * @param stall how long to wait for any chunk to complete before giving up
     */
    static Result run(BulkSession session, Source source, int chunk, int depth, Duration stall, PrintStream out,
            boolean terminal) throws InterruptedException {
        long total = source.size();
        BlockingQueue<ByteBuffer> free = new ArrayBlockingQueue<>(depth);
        for (int i = 0; i < depth; i++) {
            free.add(ByteBuffer.allocateDirect((int) Math.min(chunk, Math.max(1, total))));
        }
        BulkStatistics before = session.statistics();
        AtomicLong done = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Progress progress = new Progress(out, total, terminal);
        CRC32C crc = new CRC32C();
        long start = System.nanoTime();
        long sent = 0;
        try {
            while (sent < total && failure.get() == null) {
                ByteBuffer b = free.poll(stall.toMillis(), TimeUnit.MILLISECONDS);
                if (b == null) {
                    failure.compareAndSet(null, new IOException("no progress for " + stall.toSeconds() + " s"));
                    break;
                }
                if (failure.get() != null) {
                    free.add(b); // back with the others: the wait below counts every buffer
                    break;
                }
                int n = (int) Math.min(b.capacity(), total - sent);
                b.clear().limit(n);
                try {
                    source.next(b);
                } catch (IOException e) {
                    free.add(b);
                    throw e;
                }
                b.position(0).limit(n);
                crc.update(b.duplicate());
                sent += n;
                try {
                    session.send(b).whenComplete((v, e) -> {
                        if (e != null) {
                            failure.compareAndSet(null, unwrap(e));
                        } else {
                            progress.update(done.addAndGet(n));
                        }
                        free.add(b);
                    });
                } catch (RuntimeException e) {
                    failure.compareAndSet(null, e);
                    free.add(b);
                }
            }
            // wait until every chunk is back
            for (int i = 0; i < depth; i++) {
                ByteBuffer b = free.poll(stall.toMillis(), TimeUnit.MILLISECONDS);
                if (b == null) {
                    failure.compareAndSet(null, new IOException("no progress for " + stall.toSeconds() + " s"));
                    break;
                }
            }
        } catch (IOException e) {
            failure.compareAndSet(null, e);
        } finally {
            progress.finish();
        }
        long nanos = System.nanoTime() - start;
        BulkStatistics after = session.statistics();
        return new Result(done.get(), nanos, crc.getValue(), path(session, before, after), failure.get());
    }

    /** Which path the data took, from the session's counters. */
    static String path(BulkSession session, BulkStatistics before, BulkStatistics after) {
        long reads = after.readTransfers() - before.readTransfers();
        long writes = after.writeTransfers() - before.writeTransfers();
        long inline = after.inlineSends() - before.inlineSends();
        StringBuilder s = new StringBuilder();
        if (reads > 0) {
            s.append("RDMA Read by the peer (").append(count(reads, "transfer")).append(')');
        }
        if (writes > 0) {
            s.append(s.length() > 0 ? ", " : "").append("RDMA Write into the peer's memory (")
                    .append(count(writes, "transfer")).append(')');
        }
        if (inline > 0) {
            s.append(s.length() > 0 ? ", " : "").append("inline (").append(count(inline, "send")).append(')');
        }
        if (s.length() == 0) {
            s.append(session.peerCanRdmaRead() ? "RDMA Read by the peer" : "RDMA Write into the peer's memory");
        }
        return s.toString();
    }

    private static String count(long n, String noun) {
        return n + " " + noun + (n == 1 ? "" : "s");
    }

    static Throwable unwrap(Throwable e) {
        while ((e instanceof CompletionException || e instanceof java.util.concurrent.ExecutionException
                || e instanceof java.lang.reflect.InvocationTargetException) && e.getCause() != null) {
            e = e.getCause();
        }
        return e;
    }

    /** A failure as one readable line. */
    static String describe(Throwable e) {
        e = unwrap(e);
        if (e instanceof ConnectionLostException && ((ConnectionLostException) e).loss() != null) {
            return "connection lost: " + ((ConnectionLostException) e).loss().message();
        }
        String m = e.getMessage();
        return m == null || m.isEmpty() ? e.getClass().getSimpleName() : m;
    }
}
