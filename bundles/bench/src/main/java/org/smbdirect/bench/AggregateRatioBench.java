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
 * (e) with the machine's speed taken out: {@link AggregateBench}'s load over 4, 16 and 64
 * connections, the three sets open in one JVM and sending in turns. Each invocation sends
 * {@value AggregateBench#PER_INVOCATION} messages over each set, starting with the next set each
 * time, and counts the nanoseconds each set took ({@link Nanos}). The figure of an iteration is 64
 * connections' rate against the better of 4 and 16 (where {@link AggregateBench} finds its best
 * aggregate; one connection never is): a machine that changes speed, as the CI's does between forks
 * and within them, meets all sides of it alike, where {@link AggregateBench}'s rows come from forks
 * run minutes apart.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class AggregateRatioBench {
    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private final AggregateSet[] sets = new AggregateSet[3];
    private int first;

    /** Nanoseconds each set took to send its messages, summed over an iteration. */
    @AuxCounters(AuxCounters.Type.EVENTS)
    @State(Scope.Thread)
    public static class Nanos {
        /** Over 4 connections. */
        public long nanos4;
        /** Over 16 connections. */
        public long nanos16;
        /** Over 64 connections. */
        public long nanos64;
        /** Messages each set sent. */
        public long messagesEach;

        @Setup(Level.Iteration)
        public void clear() {
            nanos4 = 0;
            nanos16 = 0;
            nanos64 = 0;
            messagesEach = 0;
        }

        void add(int set, long nanos) {
            if (set == 0) {
                nanos4 += nanos;
            } else if (set == 1) {
                nanos16 += nanos;
            } else {
                nanos64 += nanos;
            }
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        sets[0] = new AggregateSet(4, handlers);
        sets[1] = new AggregateSet(16, handlers);
        sets[2] = new AggregateSet(64, handlers);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        for (AggregateSet s : sets) {
            s.close();
        }
    }

    @Benchmark
    @OperationsPerInvocation(3 * AggregateBench.PER_INVOCATION)
    public void inTurns(Nanos n) {
        first = (first + 1) % sets.length;
        for (int i = 0; i < sets.length; i++) {
            int s = (first + i) % sets.length;
            long t0 = System.nanoTime();
            sets[s].send(AggregateBench.PER_INVOCATION);
            n.add(s, System.nanoTime() - t0);
        }
        n.messagesEach += AggregateBench.PER_INVOCATION;
    }
}
