package org.smbdirect.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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

/**
 * (g) The alternative a user has without RDMA: the same 1 KiB messages and 1 MiB transfers over a
 * loopback TCP socket (java.nio), framed as SMB2 over TCP frames them (a 4-byte prefix: a zero
 * byte and a 24-bit big-endian length, [MS-SMB2] 2.1). A reader thread reassembles each frame into
 * a buffer, as a receiver would. Messages per second.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class TcpBench {
    static final int BATCH = 512;

    @Param({"1024", "1048576"})
    int size;

    private ServerSocketChannel server;
    private SocketChannel out;
    private SocketChannel in;
    private Thread reader;
    private volatile boolean running;
    private final AtomicLong frames = new AtomicLong();
    private ByteBuffer frame;

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        out = SocketChannel.open(server.getLocalAddress());
        out.setOption(StandardSocketOptions.TCP_NODELAY, true);
        in = server.accept();
        frame = ByteBuffer.allocateDirect(4 + size);
        frame.putInt(0, size & 0x00FFFFFF);
        running = true;
        reader = new Thread(this::read, "tcp-baseline-reader");
        reader.start();
    }

    private void read() {
        ByteBuffer header = ByteBuffer.allocateDirect(4);
        ByteBuffer body = ByteBuffer.allocateDirect(size);
        try {
            while (running) {
                header.clear();
                if (!fill(header)) {
                    return;
                }
                body.clear().limit(header.getInt(0) & 0x00FFFFFF);
                if (!fill(body)) {
                    return;
                }
                frames.incrementAndGet();
            }
        } catch (IOException e) {
            if (running) {
                e.printStackTrace();
            }
        }
    }

    private boolean fill(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (in.read(b) < 0) {
                return false;
            }
        }
        return true;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        running = false;
        out.close();
        reader.join();
        in.close();
        server.close();
    }

    @Benchmark
    public void tcp() throws IOException {
        int n = size <= 65536 ? BATCH : 1;
        long goal = frames.get() + n;
        for (int i = 0; i < n; i++) {
            frame.clear();
            while (frame.hasRemaining()) {
                out.write(frame);
            }
        }
        while (frames.get() < goal) {
            LockSupport.parkNanos(1000);
        }
    }
}
