package org.smbdirect.bench;

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
 * (e) Aggregate throughput of 1 KiB messages over 1, 4, 16 and 64 connections at once, between
 * the same two transports, each connection with up to {@value AggregateSet#WINDOW} sends in flight.
 * Messages per second in total; the baseline of each row is the best aggregate of the four. An
 * invocation sends {@value #PER_INVOCATION} messages and waits until all have arrived, so that the
 * drain at its end is a small part of it even at 64 connections.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class AggregateBench {
    static final int PER_INVOCATION = 65536;

    @Param({"1", "4", "16", "64"})
    int connections;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private AggregateSet set;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        set = new AggregateSet(connections, handlers);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        set.close();
    }

    @Benchmark
    @OperationsPerInvocation(PER_INVOCATION)
    public void smbDirect() {
        set.send(PER_INVOCATION);
    }
}
