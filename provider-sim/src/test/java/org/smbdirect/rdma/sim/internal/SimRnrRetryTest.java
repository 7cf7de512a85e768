package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * rdma_cm's rnr_retry_count on the simulated fabric: with retries left, a send that finds no
 * receive posted waits for the receiver-not-ready timer and is transmitted again; without, it fails
 * RECEIVER_NOT_READY at once.
 */
class SimRnrRetryTest {
    private SimProvider provider;

    @org.junit.jupiter.api.BeforeEach
    void open() throws Exception {
        provider = SimProvider.open(SimSettings.fromMap(Map.of("fabric", "rnr-" + System.nanoTime())));
    }

    @AfterEach
    void close() {
        if (provider != null) {
            provider.close();
        }
    }

    private Endpoint[] connect(int rnrRetryCount, CompletionQueue clientCq, CompletionQueue serverCq)
            throws Exception {
        BlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = provider.listen(new InetSocketAddress(provider.address, 0), requests::add);
        ConnectionListener quiet = new ConnectionListener() {
            @Override
            public void onEstablished(Endpoint ep) {
            }

            @Override
            public void onDisconnected(Endpoint ep) {
            }

            @Override
            public void onError(Endpoint ep, RdmaStatus status, String reason) {
            }
        };
        Endpoint client = provider.createEndpoint(EndpointOptions.builder(clientCq, clientCq)
                .rnrRetryCount(rnrRetryCount).build(), quiet);
        client.connect(listener.localAddress(), null, 1, 1);
        ConnectionRequest r = requests.poll(10, TimeUnit.SECONDS);
        Endpoint server = r.createEndpoint(EndpointOptions.builder(serverCq, serverCq).build(), quiet);
        r.accept(server, null, 1, 1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while ((client.state() != org.smbdirect.rdma.EndpointState.CONNECTED
                || server.state() != org.smbdirect.rdma.EndpointState.CONNECTED) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        return new Endpoint[] {client, server};
    }

    private static CompletionResult next(CompletionQueue cq) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        CompletionResult[] r = {new CompletionResult()};
        while (System.nanoTime() < deadline) {
            if (cq.getResults(r) == 1) {
                return r[0];
            }
            Thread.sleep(1);
        }
        throw new AssertionError("no completion within 10 s");
    }

    @Test
    void rnrRetry7_sendWaitsUntilTheReceiveIsPosted() throws Exception {
        CompletionQueue ccq = cq();
        CompletionQueue scq = cq();
        Endpoint[] eps = connect(7, ccq, scq);
        MemoryRegion out = eps[0].register(ByteBuffer.allocateDirect(16), 0);
        eps[0].postSend("s", new Sge[] {Sge.of(out, 0, 16)}, 1, 0);
        // Several receiver-not-ready timers (0.64 ms) pass with nothing posted: the send is neither
        // lost nor failed. (Waiting here is for the fabric to have tried, not for a protocol timeout.)
        Thread.sleep(20);
        assertEquals(0, ccq.getResults(new CompletionResult[1]), "the send waits while no receive is posted");
        MemoryRegion in = eps[1].register(ByteBuffer.allocateDirect(16), Access.LOCAL_WRITE);
        eps[1].postReceive("r", new Sge[] {Sge.of(in, 0, 16)}, 1);
        assertEquals(RdmaStatus.SUCCESS, next(ccq).status());
        CompletionResult r = next(scq);
        assertEquals(RdmaStatus.SUCCESS, r.status());
        assertEquals(16, r.bytesTransferred());
    }

    @Test
    void rnrRetry0_sendFailsReceiverNotReadyAtOnce() throws Exception {
        CompletionQueue ccq = cq();
        CompletionQueue scq = cq();
        Endpoint[] eps = connect(0, ccq, scq);
        MemoryRegion out = eps[0].register(ByteBuffer.allocateDirect(16), 0);
        eps[0].postSend("s", new Sge[] {Sge.of(out, 0, 16)}, 1, 0);
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, next(ccq).status());
    }

    private CompletionQueue cq() throws Exception {
        return provider.createCompletionQueue(64, cq -> { });
    }
}
