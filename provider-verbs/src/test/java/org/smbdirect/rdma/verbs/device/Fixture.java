package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.rdma.verbs.internal.CompletionQueueProbe;

/**
 * Shared set-up of the device tests: a verbs provider for the device named by {@code RDMA_VM_DEVICE}
 * (else the first one), made through {@link ServiceLoader} as a plain-Java user would, and
 * helpers for connected endpoint pairs on one of its addresses.
 */
final class Fixture implements AutoCloseable {
    /** Generous: under TCG emulation everything is slow. */
    static final long TIMEOUT = 20_000;

    final RdmaProvider provider;
    final InetAddress address;
    private final List<AutoCloseable> resources = new ArrayList<>();

    Fixture() throws RdmaException {
        this(Map.of());
    }

    Fixture(Map<String, ?> configuration) throws RdmaException {
        RdmaProvider chosen = null;
        String wanted = System.getenv("RDMA_VM_DEVICE");
        for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
            if (!"verbs".equals(f.type())) {
                continue;
            }
            for (RdmaProvider p : f.create(configuration)) {
                if (chosen == null && (wanted == null || wanted.equals(p.name()))) {
                    chosen = p;
                } else {
                    p.close();
                }
            }
        }
        if (chosen == null) {
            throw new AssertionError("no verbs provider for device " + (wanted == null ? "(any)" : wanted)
                    + " - these tests need an RDMA device (run them through SoftRoceGuestIT)");
        }
        provider = chosen;
        String ip = System.getenv("RDMA_VM_IP");
        address = pick(provider, ip);
    }

    private static InetAddress pick(RdmaProvider p, String ip) {
        for (InetAddress a : p.addresses()) {
            if (ip == null || a.getHostAddress().equals(ip)) {
                return a;
            }
        }
        return p.addresses().get(0);
    }

    <T extends AutoCloseable> T track(T resource) {
        resources.add(0, resource);
        return resource;
    }

    /** A completion queue whose notifications release a semaphore. */
    Cq cq(int depth) throws RdmaException {
        return cq(depth, null);
    }

    /** A completion queue whose notifications release a semaphore and then call {@code also}. */
    Cq cq(int depth, CompletionNotificationHandler also) throws RdmaException {
        Cq cq = new Cq();
        cq.queue = track(provider.createCompletionQueue(depth, q -> {
            cq.threads.add(Thread.currentThread());
            cq.notifications.release();
            if (also != null) {
                also.onCompletionNotification(q);
            }
        }));
        return cq;
    }

    static ByteBuffer direct(int size) {
        return ByteBuffer.allocateDirect(size);
    }

    /** Waits until every endpoint that used {@code cq} is released, at most {@link #TIMEOUT} ms; fails otherwise. */
    static void awaitReleased(Cq cq) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT);
        while (CompletionQueueProbe.endpoints(cq.queue) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(0, CompletionQueueProbe.endpoints(cq.queue), "released within " + TIMEOUT + " ms");
    }

    /** A listener that hands every request to the test. */
    Listening listen() throws RdmaException {
        Listening l = new Listening();
        l.listener = track(provider.listen(new InetSocketAddress(address, 0), l.requests::add));
        return l;
    }

    @Override
    public void close() {
        for (AutoCloseable r : resources) {
            try {
                r.close();
            } catch (Exception e) {
                // best effort: the provider's close below releases everything anyway
            }
        }
        provider.close();
    }

    /** A completion queue and its notifications. */
    static final class Cq {
        CompletionQueue queue;
        final Semaphore notifications = new Semaphore(0);
        final LinkedBlockingQueue<Thread> threads = new LinkedBlockingQueue<>();

        /** Polls until {@code n} completions were taken or the time is up. */
        List<CompletionResult> take(int n, long timeoutMillis) throws InterruptedException {
            return take(n, timeoutMillis, false);
        }

        List<CompletionResult> take(int n, long timeoutMillis, boolean extended) throws InterruptedException {
            List<CompletionResult> out = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            CompletionResult[] holders = new CompletionResult[n];
            while (out.size() < n) {
                for (int i = 0; i < holders.length; i++) {
                    holders[i] = new CompletionResult();
                }
                int got = extended ? queue.getResultsEx(holders) : queue.getResults(holders);
                for (int i = 0; i < got && out.size() < n; i++) {
                    out.add(holders[i]);
                }
                if (out.size() < n) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("only " + out.size() + " of " + n + " completions within "
                                + timeoutMillis + " ms: " + out);
                    }
                    Thread.sleep(2);
                }
            }
            return out;
        }

        CompletionResult one(long timeoutMillis) throws InterruptedException {
            return take(1, timeoutMillis).get(0);
        }

        /** Asserts the queue stays empty for a while. */
        void expectEmpty(long millis) throws InterruptedException {
            Thread.sleep(millis);
            CompletionResult[] r = {new CompletionResult()};
            int n = queue.getResults(r);
            assertEquals(0, n, () -> "unexpected completion " + r[0]);
        }
    }

    /** A listening endpoint and the requests it received. */
    static final class Listening {
        RdmaListener listener;
        final LinkedBlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();

        ConnectionRequest next(long timeoutMillis) throws InterruptedException {
            ConnectionRequest r = requests.poll(timeoutMillis, TimeUnit.MILLISECONDS);
            if (r == null) {
                throw new AssertionError("no connection request within " + timeoutMillis + " ms");
            }
            return r;
        }
    }

    /** Two connected endpoints with their queues and listeners. */
    static final class Pair {
        Cq clientCq;
        Cq serverCq;
        Endpoint client;
        Endpoint server;
        RecordingListener clientEvents = new RecordingListener();
        RecordingListener serverEvents = new RecordingListener();
        ConnectionRequest request;
    }

    EndpointOptions.Builder options(Cq cq) {
        return EndpointOptions.builder(cq.queue, cq.queue).sendQueueDepth(16).receiveQueueDepth(16).maxSendSge(4)
                .maxReceiveSge(4);
    }

    /**
     * Connects two endpoints, each with its own completion queue; the operators adjust the default
     * options, {@code beforeConnect} may register memory and post receives on both.
     */
    Pair connect(UnaryOperator<EndpointOptions.Builder> clientOptions, UnaryOperator<EndpointOptions.Builder> serverOptions,
            Setup beforeConnect) throws Exception {
        return connect(cq(64), cq(64), clientOptions, serverOptions, beforeConnect);
    }

    /** Connects two endpoints whose completions go to the given queues. */
    Pair connect(Cq clientCq, Cq serverCq, UnaryOperator<EndpointOptions.Builder> clientOptions,
            UnaryOperator<EndpointOptions.Builder> serverOptions, Setup beforeConnect) throws Exception {
        Pair p = new Pair();
        Listening l = listen();
        p.clientCq = clientCq;
        p.serverCq = serverCq;
        p.client = track(provider.createEndpoint(clientOptions.apply(options(p.clientCq)).build(), p.clientEvents));
        if (beforeConnect != null) {
            beforeConnect.client(p);
        }
        p.client.connect(l.listener.localAddress(), new byte[] {1, 2, 3}, 4, 4);
        p.request = l.next(TIMEOUT);
        p.server = track(p.request.createEndpoint(serverOptions.apply(options(p.serverCq)).build(), p.serverEvents));
        if (beforeConnect != null) {
            beforeConnect.server(p);
        }
        p.request.accept(p.server, new byte[] {9, 8, 7}, 4, 4);
        p.clientEvents.expect("ESTABLISHED", TIMEOUT);
        p.serverEvents.expect("ESTABLISHED", TIMEOUT);
        assertTrue(p.client.state() == org.smbdirect.rdma.EndpointState.CONNECTED);
        return p;
    }

    Pair connect(UnaryOperator<EndpointOptions.Builder> clientOptions) throws Exception {
        return connect(clientOptions, b -> b, null);
    }

    Pair connect() throws Exception {
        return connect(b -> b, b -> b, null);
    }

    /** Work done on each endpoint before the connection is established. */
    interface Setup {
        void client(Pair p) throws Exception;

        void server(Pair p) throws Exception;
    }
}
