package org.smbdirect.bench;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.AuxCounters;
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
 * (b) with the machine's speed taken out: {@link MessageBench}'s one-way messages and its queue
 * baseline, both open in one JVM and running in turns. Each invocation sends {@value #TURN}
 * messages through SMB Direct and hands as many through the queue, the other side first each time,
 * and counts the nanoseconds each side took ({@link Nanos}); an iteration's figure is the one
 * rate against the other. {@link MessageBench} measures its two sides in forks run minutes apart,
 * on a machine whose speed changes between them.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class MessageRatioBench {
    /** Messages each side moves in a turn: eight of {@link MessageBench}'s batches. */
    static final int TURN = 8 * MessageBench.BATCH;

    /** 1 KiB, the size of b)'s goal. */
    @Param({"1024"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private final MessageBench load = new MessageBench();
    private boolean queueFirst;

    /** Nanoseconds each side took, summed over an iteration. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Nanos {
        /** Through SMB Direct. */
        public long nanosSmbDirect;
        /** Through the queue. */
        public long nanosQueue;
        /** Messages each side moved. */
        public long messagesEach;

        @Setup(Level.Iteration)
        public void clear() {
            nanosSmbDirect = 0;
            nanosQueue = 0;
            messagesEach = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        load.size = size;
        load.handlers = handlers;
        load.setUp();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        load.tearDown();
    }

    @Benchmark
    @OperationsPerInvocation(2 * TURN)
    public void inTurns(Nanos n) throws InterruptedException {
        queueFirst = !queueFirst;
        if (queueFirst) {
            n.nanosQueue += queue();
            n.nanosSmbDirect += smbDirect();
        } else {
            n.nanosSmbDirect += smbDirect();
            n.nanosQueue += queue();
        }
        n.messagesEach += TURN;
    }

    private long smbDirect() {
        long t0 = System.nanoTime();
        for (int i = 0; i < TURN / MessageBench.BATCH; i++) {
            load.smbDirect();
        }
        return System.nanoTime() - t0;
    }

    private long queue() throws InterruptedException {
        long t0 = System.nanoTime();
        for (int i = 0; i < TURN / MessageBench.BATCH; i++) {
            load.queue();
        }
        return System.nanoTime() - t0;
    }
}
