package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
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
 * (e) Aggregate throughput of 1 KiB messages over 1, 4, 16 and 64 connections at once, between
 * the same two transports, each connection with up to {@value #WINDOW} sends in flight. Messages
 * per second in total; the baseline of each row is the best aggregate of the four. An invocation
 * sends {@value #PER_INVOCATION} messages and waits until all have arrived, so that the drain at
 * its end is a small part of it even at 64 connections.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class AggregateBench {
    static final int PER_INVOCATION = 65536;
    /** Sends in flight per connection: below maxPendingSends, above what the credits let through. */
    static final int WINDOW = 512;
    /** Sends completed, per connection (the attachment of a send is its connection's index). */
    private AtomicLongArray completed;
    /** Sends started, per connection. */
    private long[] sent;
    private Integer[] index;
    private final CompletionHandler<Void, Object> onSent = new CompletionHandler<>() {
        @Override
        public void completed(Void result, Object attachment) {
            completed.incrementAndGet((Integer) attachment);
        }

        @Override
        public void failed(Throwable exc, Object attachment) {
            exc.printStackTrace();
        }
    };

    @Param({"1", "4", "16", "64"})
    int connections;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private SimPair pair;
    private SmbDirectConnection[] senders;
    private final ByteBuffer payload = ByteBuffer.allocate(1024);
    private final AtomicLong received = new AtomicLong();
    private long target;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        pair = new SimPair();
        senders = new SmbDirectConnection[connections];
        completed = new AtomicLongArray(connections);
        sent = new long[connections];
        index = new Integer[connections];
        for (int i = 0; i < connections; i++) {
            senders[i] = pair.connect(handlers, (x, m, t) -> { }, (x, m, t) -> received.incrementAndGet())[0];
            index[i] = i;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pair.close();
    }

    @Benchmark
    @OperationsPerInvocation(PER_INVOCATION)
    public void smbDirect() {
        target += PER_INVOCATION;
        int per = PER_INVOCATION / connections;
        for (int i = 0; i < per; i++) {
            for (int c = 0; c < connections; c++) {
                while (sent[c] - completed.get(c) >= WINDOW) {
                    LockSupport.parkNanos(1000);
                }
                senders[c].send(payload, index[c], onSent);
                sent[c]++;
            }
        }
        while (received.get() < target) {
            LockSupport.parkNanos(1000);
        }
    }
}
