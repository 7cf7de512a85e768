package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.ArrayBlockingQueue;
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
 * (b) One-way messages through SMB Direct on the sim provider, against the same copies handed
 * between two threads by a plain queue. Messages per second. The receiver copies each message
 * out, as an upper layer would; sends use the allocation-free completion-handler form.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class MessageBench {
    static final int BATCH = 512;

    /** 64 B, 1 KiB, and MaxSendSize - 24 (1340 with the Windows defaults). */
    @Param({"64", "1024", "1340"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private SimPair pair;
    private SmbDirectConnection sender;
    private ByteBuffer payload;
    private final AtomicLong received = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final byte[] sink = new byte[65536];
    private long target;
    private final CompletionHandler<Void, Object> onSent = new CompletionHandler<>() {
        @Override
        public void completed(Void result, Object attachment) {
            completed.incrementAndGet();
        }

        @Override
        public void failed(Throwable exc, Object attachment) {
            exc.printStackTrace();
        }
    };

    // the baseline
    private ArrayBlockingQueue<byte[]> queue;
    private ArrayBlockingQueue<byte[]> free;
    private Thread consumer;
    private final AtomicLong consumed = new AtomicLong();
    private volatile boolean running;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        pair = new SimPair();
        SmbDirectConnection[] c = pair.connect(handlers, (x, m, t) -> { }, (x, m, t) -> {
            m.get(sink, 0, m.remaining());
            received.incrementAndGet();
        });
        sender = c[0];
        payload = ByteBuffer.allocate(size);
        queue = new ArrayBlockingQueue<>(BATCH * 2);
        free = new ArrayBlockingQueue<>(BATCH * 2);
        for (int i = 0; i < BATCH * 2; i++) {
            free.add(new byte[size]);
        }
        running = true;
        consumer = new Thread(() -> {
            try {
                while (running) {
                    byte[] b = queue.poll(100, TimeUnit.MILLISECONDS);
                    if (b != null) {
                        System.arraycopy(b, 0, sink, 0, b.length);
                        free.add(b);
                        consumed.incrementAndGet();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "queue-baseline-consumer");
        consumer.start();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        running = false;
        consumer.join();
        pair.close();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void smbDirect() {
        target += BATCH;
        for (int i = 0; i < BATCH; i++) {
            sender.send(payload, null, onSent);
        }
        while (received.get() < target || completed.get() < target) {
            LockSupport.parkNanos(1000);
        }
    }

    /** The baseline: the sender copies each message into a buffer and hands it to a consumer thread. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void queue() throws InterruptedException {
        long goal = consumed.get() + BATCH;
        byte[] src = payload.array();
        for (int i = 0; i < BATCH; i++) {
            byte[] b = free.take();
            System.arraycopy(src, 0, b, 0, size);
            queue.put(b);
        }
        while (consumed.get() < goal) {
            LockSupport.parkNanos(1000);
        }
    }
}
