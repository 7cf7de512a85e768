package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.smbdirect.transport.SmbDirectConnection;

/**
 * (c) Fragmented messages (MS-SMBD 3.1.5.4 / 3.1.5.8: 1340-byte fragments, reassembled) of 64 KiB
 * and 1 MiB, against a memory copy of the same size. Messages per second. The sender keeps
 * {@link #WINDOW} messages queued, as a streaming upper layer does, so the figure is the engine's
 * throughput rather than one message's round of wake-ups.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class FragmentedBench {
    static final int WINDOW = 8;

    @Param({"65536", "1048576"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private SimPair pair;
    private SmbDirectConnection sender;
    private ByteBuffer payload;
    private byte[] sink;
    private byte[] copySource;
    private final AtomicLong received = new AtomicLong();
    private long target;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        pair = new SimPair();
        sink = new byte[size];
        copySource = new byte[size];
        SmbDirectConnection[] c = pair.connect(handlers, (x, m, t) -> { }, (x, m, t) -> {
            m.get(sink, 0, m.remaining());
            received.incrementAndGet();
        });
        sender = c[0];
        payload = ByteBuffer.allocate(size);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pair.close();
    }

    @Benchmark
    @OperationsPerInvocation(WINDOW)
    public void smbDirect() {
        target += WINDOW;
        for (int i = 0; i < WINDOW; i++) {
            sender.send(payload);
        }
        while (received.get() < target) {
            LockSupport.parkNanos(1000);
        }
    }

    /** The baseline: one copy of the message into the receiver's array. */
    @Benchmark
    public void copy() {
        System.arraycopy(copySource, 0, sink, 0, size);
    }
}
