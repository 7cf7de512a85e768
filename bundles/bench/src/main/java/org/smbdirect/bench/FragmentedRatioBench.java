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
 * (c) with the machine's speed taken out: {@link FragmentedBench}'s 1 MiB messages (fragments of
 * 1340 bytes, MS-SMBD 3.1.5.4, reassembled by 3.1.5.8) and {@link MessageBench}'s 1 KiB messages,
 * both open in one JVM and sending in turns. Each invocation moves {@value #TURN} fragments and as
 * many 1 KiB messages, the other side first each time, and counts the nanoseconds each side took
 * ({@link Nanos}); an iteration's figure is fragments per second against messages per second.
 * {@link FragmentedBench} and {@link MessageBench} measure the two in forks run minutes apart, on a
 * machine whose speed changes between them.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class FragmentedRatioBench {
    /** Fragments of a 1 MiB message: MaxSendSize 1364 (the Windows default) carries 1340 bytes. */
    static final int FRAGMENTS = (1048576 + 1339) / 1340;
    /**
     * Fragments (and 1 KiB messages) each side moves in a turn: 64 of {@link FragmentedBench}'s
     * windows of 1 MiB messages, as many as {@value #FRAGMENTS} of {@link MessageBench}'s batches.
     */
    static final int TURN = 64 * FragmentedBench.WINDOW * FRAGMENTS;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private final FragmentedBench fragmented = new FragmentedBench();
    private final MessageBench messages = new MessageBench();
    private boolean messagesFirst;

    /** Nanoseconds each side took, summed over an iteration. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Nanos {
        /** 1 MiB messages, in fragments. */
        public long nanosFragments;
        /** 1 KiB messages. */
        public long nanosMessages;
        /** Fragments (and messages) each side moved. */
        public long each;

        @Setup(Level.Iteration)
        public void clear() {
            nanosFragments = 0;
            nanosMessages = 0;
            each = 0;
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        if (TURN % MessageBench.BATCH != 0 || TURN % (FragmentedBench.WINDOW * FRAGMENTS) != 0) {
            throw new IllegalStateException("a turn is not a whole number of batches on both sides");
        }
        fragmented.size = 1048576;
        fragmented.handlers = handlers;
        fragmented.setUp();
        messages.size = 1024;
        messages.handlers = handlers;
        messages.setUp();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        fragmented.tearDown();
        messages.tearDown();
    }

    @Benchmark
    @OperationsPerInvocation(2 * TURN)
    public void inTurns(Nanos n) {
        messagesFirst = !messagesFirst;
        if (messagesFirst) {
            n.nanosMessages += messages();
            n.nanosFragments += fragments();
        } else {
            n.nanosFragments += fragments();
            n.nanosMessages += messages();
        }
        n.each += TURN;
    }

    private long fragments() {
        long t0 = System.nanoTime();
        for (int i = 0; i < TURN / (FragmentedBench.WINDOW * FRAGMENTS); i++) {
            fragmented.smbDirect();
        }
        return System.nanoTime() - t0;
    }

    private long messages() {
        long t0 = System.nanoTime();
        for (int i = 0; i < TURN / MessageBench.BATCH; i++) {
            messages.smbDirect();
        }
        return System.nanoTime() - t0;
    }
}
