package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.function.BiConsumer;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;

/**
 * One SMB Direct connection on the sim provider whose client reads and writes a buffer the server
 * registered, keeping a window of operations in flight: what the RDMA benchmarks share.
 */
final class RdmaLink implements AutoCloseable {
    final SimPair pair;
    /** The operations in flight: one permit per operation that may start. */
    final Semaphore window;
    private final int depth;
    private final SmbDirectConnection reader;
    private final RegisteredBuffer registered;
    private final List<BufferDescriptorV1> remote;
    private final ByteBuffer local;
    private final BiConsumer<Void, Throwable> done;

    RdmaLink(int size, int depth) throws Exception {
        this.depth = depth;
        window = new Semaphore(depth);
        done = (v, t) -> {
            if (t != null) {
                t.printStackTrace();
            }
            window.release();
        };
        pair = new SimPair();
        SmbDirectConnection[] c = pair.connect((x, m, t) -> { }, (x, m, t) -> { });
        registered = c[1].register(ByteBuffer.allocateDirect(size), RemoteAccess.READ_WRITE);
        remote = registered.descriptors();
        reader = c[0];
        local = ByteBuffer.allocateDirect(size);
    }

    /** Starts one RDMA Read of the whole buffer once the window allows. */
    void read() throws InterruptedException {
        window.acquire();
        reader.rdmaRead(local, remote, 0).whenComplete(done);
    }

    /** Starts one RDMA Write of the whole buffer once the window allows. */
    void write() throws InterruptedException {
        window.acquire();
        reader.rdmaWrite(local, remote, 0).whenComplete(done);
    }

    /** Waits until every operation started has completed. */
    void drain() throws InterruptedException {
        window.acquire(depth);
        window.release(depth);
    }

    @Override
    public void close() {
        registered.close();
        pair.close();
    }
}
