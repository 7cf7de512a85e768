package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * (a) with the machine's speed taken out: {@link RdmaBench}'s RDMA Reads and Writes and its memory
 * copy, in one JVM and in turns. Each invocation moves {@value #TURN_BYTES} bytes each way in
 * turn, starting with the next side each time: Reads, then Writes (each side's operations drained
 * before the next starts), then copies. Counters sum each side's nanoseconds ({@link Nanos}); an
 * iteration's figure is a side's rate against the copy's.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RdmaRatioBench {
    /** Bytes each side moves in a turn. */
    static final long TURN_BYTES = 256L << 20;

    /** The sizes of a)'s goal. */
    @Param({"1048576", "8388608"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline"})
    String handlers;

    private RdmaLink link;
    private ByteBuffer copySource;
    private ByteBuffer copyTarget;
    /** Operations each side performs in a turn. */
    private int operations;
    private int first;

    /** Nanoseconds each side took, summed over an iteration. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Nanos {
        /** RDMA Reads. */
        public long nanosRead;
        /** RDMA Writes. */
        public long nanosWrite;
        /** Memory copies. */
        public long nanosCopy;
        /** Operations (of the size) each side performed. */
        public long operationsEach;

        @Setup(Level.Iteration)
        public void clear() {
            nanosRead = 0;
            nanosWrite = 0;
            nanosCopy = 0;
            operationsEach = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        link = new RdmaLink(size, RdmaBench.DEPTH, handlers);
        copySource = ByteBuffer.allocateDirect(size);
        copyTarget = ByteBuffer.allocateDirect(size);
        // whole batches of the window
        operations = (int) Math.max(link.window.batch, TURN_BYTES / size / link.window.batch * link.window.batch);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        link.close();
    }

    /** One turn of each side; the primary score counts turns, the figures come from {@link Nanos}. */
    @Benchmark
    public void inTurns(Nanos n) {
        first = (first + 1) % 3;
        for (int i = 0; i < 3; i++) {
            int side = (first + i) % 3;
            long t0 = System.nanoTime();
            if (side == 0) {
                for (int k = 0; k < operations; k += link.window.batch) {
                    link.read();
                }
                link.drain();
                n.nanosRead += System.nanoTime() - t0;
            } else if (side == 1) {
                for (int k = 0; k < operations; k += link.window.batch) {
                    link.write();
                }
                link.drain();
                n.nanosWrite += System.nanoTime() - t0;
            } else {
                for (int k = 0; k < operations; k++) {
                    copyTarget.put(0, copySource, 0, size);
                }
                n.nanosCopy += System.nanoTime() - t0;
            }
        }
        n.operationsEach += operations;
    }
}
