package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

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

/**
 * (a) RDMA Write and RDMA Read through the transport API (MS-SMBD 3.1.4.5 / 3.1.4.6) on the sim
 * provider, against a bulk ByteBuffer copy of the same size: the physical limit in one JVM.
 * Operations per second; bytes per second = operations x size. Like perftest's bandwidth tests,
 * the benchmark keeps {@value #DEPTH} operations outstanding (on one buffer), so the figure is the
 * rate the transport sustains rather than one operation's round trip. The depth (perftest's
 * default is 128) keeps the benchmark thread's own wake-ups out of the figure: waking it costs the
 * completing thread about 9 us on a 2-core VM, once per batch of half the depth.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RdmaBench {
    /** Operations in flight, posted in batches of half as many. */
    static final int DEPTH = 32;

    @Param({"4096", "65536", "1048576", "8388608"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private RdmaLink link;
    private ByteBuffer copySource;
    private ByteBuffer copyTarget;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        link = new RdmaLink(size, DEPTH, handlers);
        copySource = ByteBuffer.allocateDirect(size);
        copyTarget = ByteBuffer.allocateDirect(size);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        link.close();
    }

    /** Every operation of an iteration is complete before the next iteration (or the trial) starts. */
    @TearDown(Level.Iteration)
    public void drain() {
        link.drain();
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void rdmaRead() {
        link.read();
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void rdmaWrite() {
        link.write();
    }

    /** The baseline: the same bytes copied between two direct buffers. */
    @Benchmark
    public void copy() {
        copyTarget.put(0, copySource, 0, size);
    }
}
