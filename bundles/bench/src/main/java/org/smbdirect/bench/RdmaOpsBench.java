package org.smbdirect.bench;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
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
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * (a) RDMA Read and Write operations per second through the transport (MS-SMBD 3.1.4.5 / 3.1.4.6:
 * descriptors, the pooled local registration, a post, a completion, the stage completed), against
 * the same operations posted straight on the provider API (pre-registered regions, completions
 * taken in the completion queue's notification): same fabric, same sizes, {@value #DEPTH} in
 * flight, same run. What the ratio shows is what the transport adds per operation. At 1 MiB the
 * provider's own rate against {@link RdmaBench#copy()} is what the simulated fabric allows (a) at
 * most: its fabric thread copies each operation's data and delivers its completion.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class RdmaOpsBench {
    static final int DEPTH = RdmaBench.DEPTH;

    /** 1 MiB too: the provider's figure there is the simulated fabric's own ceiling for (a) against a memory copy. */
    @Param({"4096", "65536", "1048576"})
    int size;

    /** Where the handlers run: {@code inline} (non-blocking, on the completion thread) or {@code engine}. */
    @Param({"inline", "engine"})
    String handlers;

    private RdmaLink link;
    // the baseline: two raw endpoints on the same providers, sharing the link's window
    private RawEndpoints raw;

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        link = new RdmaLink(size, DEPTH, handlers);
        raw = new RawEndpoints(link.pair.clientProvider, link.pair.serverProvider, size, link.window);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        raw.close();
        link.close();
    }

    /** Every operation of an iteration is complete before the next iteration (or the trial) starts. */
    @TearDown(Level.Iteration)
    public void drain() {
        link.drain();
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void transportRead() {
        link.read();
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void transportWrite() {
        link.write();
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void providerRead() throws Exception {
        link.window.awaitBatch();
        for (int i = 0; i < link.window.batch; i++) {
            raw.post(true);
        }
    }

    @Benchmark
    @OperationsPerInvocation(DEPTH / 2)
    public void providerWrite() throws Exception {
        link.window.awaitBatch();
        for (int i = 0; i < link.window.batch; i++) {
            raw.post(false);
        }
    }

    /**
     * A connection made straight on the provider API: the client posts RDMA Reads and Writes of a
     * pre-registered buffer into the server's pre-registered one; each completion releases the
     * window from the completion queue's notification.
     */
    static final class RawEndpoints implements AutoCloseable {
        private final CompletionQueue clientCq;
        private final CompletionQueue serverCq;
        private final RdmaListener listener;
        private final Endpoint client;
        private volatile Endpoint server;
        private final MemoryRegion localRegion;
        private final Sge[] sgl;
        private MemoryRegion remoteRegion;
        private final CompletionResult[] results = new CompletionResult[32];
        private final Window window;
        private final Object context = new Object();

        RawEndpoints(RdmaProvider clientProvider, RdmaProvider serverProvider, int size, Window window)
                throws Exception {
            this.window = window;
            for (int i = 0; i < results.length; i++) {
                results[i] = new CompletionResult();
            }
            ConnectionListener quiet = new ConnectionListener() {
                @Override
                public void onEstablished(Endpoint e) {
                }

                @Override
                public void onDisconnected(Endpoint e) {
                }

                @Override
                public void onError(Endpoint e, RdmaStatus s, String r) {
                }
            };
            serverCq = serverProvider.createCompletionQueue(64, q -> { });
            CompletableFuture<MemoryRegion> exposed = new CompletableFuture<>();
            listener = serverProvider.listen(new InetSocketAddress(serverProvider.addresses().get(0), 0), req -> {
                try {
                    Endpoint ep = req.createEndpoint(EndpointOptions.builder(serverCq, serverCq).build(), quiet);
                    MemoryRegion r = ep.register(ByteBuffer.allocateDirect(size),
                            Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
                    req.accept(ep, null, 16, 16);
                    server = ep;
                    exposed.complete(r);
                } catch (RdmaException e) {
                    exposed.completeExceptionally(e);
                }
            });
            clientCq = clientProvider.createCompletionQueue(256, q -> drain());
            CompletableFuture<Void> up = new CompletableFuture<>();
            client = clientProvider.createEndpoint(EndpointOptions.builder(clientCq, clientCq).sendQueueDepth(64)
                    .build(), new ConnectionListener() {
                        @Override
                        public void onEstablished(Endpoint e) {
                            up.complete(null);
                        }

                        @Override
                        public void onDisconnected(Endpoint e) {
                        }

                        @Override
                        public void onError(Endpoint e, RdmaStatus s, String r) {
                            up.completeExceptionally(new IllegalStateException(s + ": " + r));
                        }
                    });
            localRegion = client.register(ByteBuffer.allocateDirect(size), Access.LOCAL_WRITE);
            sgl = new Sge[] {Sge.of(localRegion)};
            client.connect(listener.localAddress(), null, 16, 16);
            up.get(30, TimeUnit.SECONDS);
            remoteRegion = exposed.get(30, TimeUnit.SECONDS);
            clientCq.arm(ArmType.ANY);
        }

        void post(boolean read) throws RdmaException {
            if (read) {
                client.postRead(context, sgl, 1, remoteRegion.remoteOffset(), remoteRegion.token(), 0);
            } else {
                client.postWrite(context, sgl, 1, remoteRegion.remoteOffset(), remoteRegion.token(), 0);
            }
        }

        /** The notification: every completion releases the window; then the queue is armed again. */
        private void drain() {
            int n;
            while ((n = clientCq.getResults(results)) > 0) {
                window.completed(n);
            }
            clientCq.arm(ArmType.ANY);
        }

        @Override
        public void close() {
            client.close();
            if (server != null) {
                server.close();
            }
            listener.close();
            try {
                clientCq.close();
                serverCq.close();
            } catch (RdmaException e) {
                // gone with the provider
            }
        }
    }
}
