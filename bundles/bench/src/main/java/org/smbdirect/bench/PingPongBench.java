package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

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
import org.smbdirect.transport.SmbDirectConnection;

/**
 * (d) 64-byte ping-pong latency through SMB Direct on the sim provider (the server's handler echoes
 * each message), against a ping-pong between two threads that hand a 64-byte message back and
 * forth. Microseconds per round trip.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class PingPongBench {
    private static final int SIZE = 64;
    private static final CompletionHandler<Void, Object> IGNORE = new CompletionHandler<>() {
        @Override
        public void completed(Void result, Object attachment) {
        }

        @Override
        public void failed(Throwable exc, Object attachment) {
            exc.printStackTrace();
        }
    };

    private SimPair pair;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;
    private SmbDirectConnection client;
    private final ByteBuffer ping = ByteBuffer.allocate(SIZE);
    private final ByteBuffer pong = ByteBuffer.allocate(SIZE);
    private volatile long replies;
    private volatile Thread waiter;

    // the baseline: two threads and two single-slot mailboxes
    private Thread echo;
    private volatile byte[] toEcho;
    private volatile byte[] fromEcho;
    private volatile boolean running;
    private final byte[] pingArray = new byte[SIZE];
    private final byte[] pongArray = new byte[SIZE];

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        pair = new SimPair();
        SmbDirectConnection[] c = pair.connect(handlers, (x, m, t) -> {
            replies++;
            LockSupport.unpark(waiter);
        }, (x, m, t) -> x.send(pong, null, IGNORE));
        client = c[0];
        running = true;
        echo = new Thread(() -> {
            while (running) {
                byte[] m = toEcho;
                if (m == null) {
                    LockSupport.park(this);
                    continue;
                }
                toEcho = null;
                System.arraycopy(m, 0, pongArray, 0, SIZE);
                fromEcho = pongArray;
                LockSupport.unpark(waiter);
            }
        }, "pingpong-baseline-echo");
        echo.start();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        running = false;
        LockSupport.unpark(echo);
        echo.join();
        pair.close();
    }

    @Benchmark
    public void smbDirect() {
        waiter = Thread.currentThread();
        long want = replies + 1;
        client.send(ping, null, IGNORE);
        while (replies < want) {
            LockSupport.park(this);
        }
    }

    /** The baseline: the same handoff between two threads, parking and unparking as the engine does. */
    @Benchmark
    public void threads() {
        waiter = Thread.currentThread();
        fromEcho = null;
        toEcho = pingArray;
        LockSupport.unpark(echo);
        while (fromEcho == null) {
            LockSupport.park(this);
        }
    }
}
