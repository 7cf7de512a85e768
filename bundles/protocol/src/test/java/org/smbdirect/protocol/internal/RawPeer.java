package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * A peer that speaks raw bytes through the RDMA provider API at the engine: it sends exactly the
 * bytes a test gives it, and hands the test exactly the bytes the engine sent. The engine under
 * test cannot tell it from another SMB Direct implementation.
 */
final class RawPeer implements AutoCloseable {
    static final Duration TIMEOUT = Duration.ofSeconds(20);
    private static final int RECEIVE_SIZE = 64 * 1024;

    private final RdmaProvider provider;
    private CompletionQueue cq;
    Endpoint endpoint;
    private final BlockingQueue<byte[]> received = new LinkedBlockingQueue<>();
    /** For each received message that invalidated a token: {message index, token}. */
    final java.util.List<int[]> invalidations = new java.util.concurrent.CopyOnWriteArrayList<>();
    private int receivedCount;
    private final BlockingQueue<CompletionResult> sendResults = new LinkedBlockingQueue<>();
    private final BlockingQueue<CompletionResult> rdmaResults = new LinkedBlockingQueue<>();
    private final CountDownLatch established = new CountDownLatch(1);
    private final CompletableFuture<String> ended = new CompletableFuture<>();
    private ByteBuffer receiveSlab;
    private MemoryRegion receiveRegion;
    private ByteBuffer sendBuffer;
    private MemoryRegion sendRegion;
    private final int receives;
    private final CompletionResult[] batch = new CompletionResult[16];

    private RawPeer(RdmaProvider provider, int receives) {
        this.provider = provider;
        this.receives = receives;
        for (int i = 0; i < batch.length; i++) {
            batch[i] = new CompletionResult();
        }
    }

    private final ConnectionListener listener = new ConnectionListener() {
        @Override
        public void onEstablished(Endpoint ep) {
            established.countDown();
        }

        @Override
        public void onDisconnected(Endpoint ep) {
            ended.complete("disconnected");
        }

        @Override
        public void onError(Endpoint ep, RdmaStatus status, String reason) {
            ended.complete("error " + status + ": " + reason);
        }
    };

    private EndpointOptions setUp() throws RdmaException {
        cq = provider.createCompletionQueue(4 * receives + 64, q -> drain());
        cq.arm(ArmType.ANY);
        return EndpointOptions.builder(cq, cq).sendQueueDepth(64).receiveQueueDepth(receives).build();
    }

    private void buffers() throws RdmaException {
        receiveSlab = ByteBuffer.allocateDirect(receives * RECEIVE_SIZE);
        receiveRegion = endpoint.register(receiveSlab, Access.LOCAL_WRITE);
        sendBuffer = ByteBuffer.allocateDirect(RECEIVE_SIZE);
        sendRegion = endpoint.register(sendBuffer, 0);
        for (int i = 0; i < receives; i++) {
            postReceive(i);
        }
    }

    private void postReceive(int slot) throws RdmaException {
        endpoint.postReceive(slot, new Sge[] {Sge.of(receiveRegion, slot * RECEIVE_SIZE, RECEIVE_SIZE)}, 1);
    }

    /** Connects to an engine listening at {@code address}, with {@code receives} receives posted. */
    static RawPeer connect(RdmaProvider provider, InetSocketAddress address, byte[] privateData, int receives)
            throws Exception {
        return connect(provider, address, privateData, receives, 4, 4);
    }

    /** Connects offering the given IRD and ORD to the connection manager (rdma_cm's responder resources, initiator depth). */
    static RawPeer connect(RdmaProvider provider, InetSocketAddress address, byte[] privateData, int receives, int ird,
            int ord) throws Exception {
        RawPeer p = new RawPeer(provider, receives);
        try {
            p.endpoint = provider.createEndpoint(p.setUp(), p.listener);
            p.buffers();
            p.endpoint.connect(address, privateData, ird, ord);
            p.awaitEstablished();
            return p;
        } catch (Exception | Error e) {
            // A refused or failed connect releases what it holds: the engine fuzzer tries refused
            // connects by the hundred thousand (leaking them exhausted direct memory).
            p.close();
            throw e;
        }
    }

    /** A listener whose next request becomes a RawPeer. */
    static final class Acceptor implements AutoCloseable {
        private final RdmaListener listener;
        private final BlockingQueue<RawPeer> peers = new ArrayBlockingQueue<>(4);
        final BlockingQueue<byte[]> requestPrivateData = new LinkedBlockingQueue<>();

        Acceptor(RdmaProvider provider, InetSocketAddress address, int receives, byte[] acceptPrivateData)
                throws RdmaException {
            listener = provider.listen(address, req -> accept(provider, req, receives, acceptPrivateData));
        }

        private void accept(RdmaProvider provider, ConnectionRequest req, int receives, byte[] data) {
            try {
                requestPrivateData.add(req.peerPrivateData());
                RawPeer p = new RawPeer(provider, receives);
                p.endpoint = req.createEndpoint(p.setUp(), p.listener);
                p.buffers();
                req.accept(p.endpoint, data, 4, 4);
                peers.add(p);
            } catch (RdmaException e) {
                throw new IllegalStateException(e);
            }
        }

        InetSocketAddress address() {
            return listener.localAddress();
        }

        RawPeer next() throws Exception {
            RawPeer p = peers.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(p, "no connection arrived");
            p.awaitEstablished();
            return p;
        }

        @Override
        public void close() {
            listener.close();
        }
    }

    void awaitEstablished() throws InterruptedException {
        long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (!established.await(10, TimeUnit.MILLISECONDS)) {
            if (ended.isDone() || System.nanoTime() > deadline) {
                fail("RDMA connection not established: " + ended.getNow("no outcome"));
            }
        }
    }

    private final Object drainLock = new Object();

    private void drain() {
        synchronized (drainLock) {
            drainLocked();
        }
    }

    private void drainLocked() {
        for (;;) {
            int n = cq.getResultsEx(batch);
            if (n == 0) {
                break;
            }
            for (int i = 0; i < n; i++) {
                CompletionResult r = batch[i];
                CompletionResult copy = new CompletionResult().set(r.requestContext(), r.endpoint(), r.type(),
                        r.status(), r.bytesTransferred(), r.solicited(), r.tokenInvalidated(), r.invalidatedToken());
                if (r.type() == OperationType.RECEIVE && r.status() == RdmaStatus.SUCCESS) {
                    int slot = (Integer) r.requestContext();
                    byte[] msg = new byte[r.bytesTransferred()];
                    receiveSlab.get(slot * RECEIVE_SIZE, msg);
                    if (r.tokenInvalidated()) {
                        invalidations.add(new int[] {receivedCount, r.invalidatedToken()});
                    }
                    receivedCount++;
                    received.add(msg);
                    try {
                        postReceive(slot);
                    } catch (RdmaException e) {
                        // disconnected meanwhile
                    }
                } else if (r.type() == OperationType.SEND) {
                    sendResults.add(copy);
                } else if (r.type() == OperationType.READ || r.type() == OperationType.WRITE) {
                    rdmaResults.add(copy);
                }
            }
        }
        cq.arm(ArmType.ANY);
    }

    /** Sends the bytes as one message and waits for the send's completion. */
    RdmaStatus send(byte[] message) throws Exception {
        return send(message, false, 0);
    }

    synchronized RdmaStatus send(byte[] message, boolean invalidate, int token) throws Exception {
        sendBuffer.put(0, message);
        Sge[] sgl = {Sge.of(sendRegion, 0, message.length)};
        if (invalidate) {
            endpoint.postSendAndInvalidate(null, sgl, message.length == 0 ? 0 : 1, 0, token);
        } else {
            endpoint.postSend(null, sgl, message.length == 0 ? 0 : 1, 0);
        }
        CompletionResult r = sendResults.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(r, "send did not complete");
        return r.status();
    }

    /** The next message the engine sent. */
    byte[] receive() throws InterruptedException {
        byte[] m = received.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(m, "nothing received from the engine");
        return m;
    }

    /** The next message if one arrives within {@code wait}, else {@code null}. */
    byte[] poll(Duration wait) throws InterruptedException {
        return received.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
    }

    int queued() {
        return received.size();
    }

    /** Waits for the RDMA connection to end. */
    String awaitEnded() throws Exception {
        return ended.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    }

    boolean isEnded() {
        return ended.isDone();
    }

    /** Registers memory on this peer's endpoint. */
    MemoryRegion register(ByteBuffer b, int access) throws RdmaException {
        return endpoint.register(b, access);
    }

    /** RDMA-reads from the engine's memory into {@code local}; returns the completion status. */
    RdmaStatus read(MemoryRegion local, long remoteOffset, int token, int length) throws Exception {
        endpoint.postRead(null, new Sge[] {Sge.of(local, 0, length)}, 1, remoteOffset, token, 0);
        CompletionResult r = rdmaResults.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(r, "read did not complete");
        return r.status();
    }

    /** RDMA-writes {@code local} into the engine's memory; returns the completion status. */
    RdmaStatus write(MemoryRegion local, long remoteOffset, int token, int length) throws Exception {
        endpoint.postWrite(null, new Sge[] {Sge.of(local, 0, length)}, 1, remoteOffset, token, 0);
        CompletionResult r = rdmaResults.poll(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(r, "write did not complete");
        return r.status();
    }

    @Override
    public void close() {
        if (endpoint != null) {
            endpoint.close();
        }
        try {
            if (cq != null) {
                cq.close();
            }
        } catch (RdmaException e) {
            // endpoint still closing
        }
    }

    // ------------------------------------------------------------ message builders

    static byte[] negotiateRequest(int minVersion, int maxVersion, int credits, int preferredSend, int maxReceive,
            int maxFragmented) {
        ByteBuffer b = ByteBuffer.allocate(NegotiateRequest.SIZE);
        new NegotiateRequest(minVersion, maxVersion, credits, preferredSend, maxReceive, maxFragmented).encode(b);
        return b.array();
    }

    static byte[] negotiateResponse(int negotiated, int creditsRequested, int creditsGranted, int status,
            int maxReadWrite, int preferredSend, int maxReceive, int maxFragmented) {
        ByteBuffer b = ByteBuffer.allocate(NegotiateResponse.SIZE);
        new NegotiateResponse(Wire.VERSION_1, Wire.VERSION_1, negotiated, creditsRequested, creditsGranted, status,
                maxReadWrite, preferredSend, maxReceive, maxFragmented).encode(b);
        return b.array();
    }

    /** A Data Transfer message with DataOffset 24 (or an empty one of 20 bytes). */
    static byte[] dataTransfer(int creditsRequested, int creditsGranted, int flags, int remaining, byte[] data) {
        ByteBuffer b = ByteBuffer.allocate(24 + data.length).order(ByteOrder.LITTLE_ENDIAN);
        int total = DataTransferHeader.encode(b, 0, creditsRequested, creditsGranted, flags, remaining, data.length);
        b.put(24 > total ? 0 : 24, data, 0, data.length);
        byte[] out = new byte[total];
        b.get(0, out);
        return out;
    }

    /** A Data Transfer message with every header field chosen by the test. */
    static byte[] rawDataTransfer(int creditsRequested, int creditsGranted, int flags, int remaining, int dataOffset,
            int dataLength, int totalLength) {
        ByteBuffer b = ByteBuffer.allocate(Math.max(totalLength, 20)).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort(0, (short) creditsRequested).putShort(2, (short) creditsGranted).putShort(4, (short) flags)
                .putInt(8, remaining).putInt(12, dataOffset).putInt(16, dataLength);
        byte[] out = new byte[totalLength];
        b.get(0, out, 0, Math.min(totalLength, b.capacity()));
        return out;
    }

    static DataTransferHeader header(byte[] message) {
        assertEquals(true, message.length >= 20, "message shorter than a header: " + message.length);
        return new DataTransferHeader().decode(ByteBuffer.wrap(message), 0, message.length);
    }
}
