package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.util.List;
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
    /** The operations in flight. */
    final Window window;
    private final SmbDirectConnection reader;
    private final RegisteredBuffer registered;
    private final List<BufferDescriptorV1> remote;
    private final ByteBuffer local;
    private final BiConsumer<Void, Throwable> done;

    RdmaLink(int size, int depth, String handlers) throws Exception {
        window = new Window(depth);
        done = (v, t) -> {
            if (t != null) {
                t.printStackTrace();
            }
            window.completed(1);
        };
        pair = new SimPair();
        SmbDirectConnection[] c = pair.connect(handlers, (x, m, t) -> { }, (x, m, t) -> { });
        registered = c[1].register(ByteBuffer.allocateDirect(size), RemoteAccess.READ_WRITE);
        remote = registered.descriptors();
        reader = c[0];
        local = ByteBuffer.allocateDirect(size);
    }

    /** Starts a batch ({@link Window#batch}) of RDMA Reads of the whole buffer once the window allows. */
    void read() {
        window.awaitBatch();
        for (int i = 0; i < window.batch; i++) {
            reader.rdmaRead(local, remote, 0).whenComplete(done);
        }
    }

    /** Starts a batch of RDMA Writes of the whole buffer once the window allows. */
    void write() {
        window.awaitBatch();
        for (int i = 0; i < window.batch; i++) {
            reader.rdmaWrite(local, remote, 0).whenComplete(done);
        }
    }

    /** Waits until every operation started has completed. */
    void drain() {
        window.drain();
    }

    @Override
    public void close() {
        registered.close();
        pair.close();
    }
}
