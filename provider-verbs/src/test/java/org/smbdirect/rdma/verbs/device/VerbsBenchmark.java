package org.smbdirect.rdma.verbs.device;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaListener;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * The operations perftest measures ({@code ib_write_bw}, {@code ib_read_bw}, {@code ib_send_bw},
 * {@code ib_send_lat}), done through the verbs provider between two endpoints on one device, with
 * perftest's defaults: 128 requests in flight, one completion asked for in 100 requests
 * ({@code --cq-mod}; the others are {@link RequestFlags#SILENT_SUCCESS}), one buffer reused, busy
 * polling, inline sends for the latency test, whose two sides each poll on a thread of their own
 * (perftest's client and server are two processes). Each operation first runs once unreported,
 * so that the measured runs find the Java code compiled. Prints one line per measurement:
 * {@code RESULT <operation> <bytes> <value> <MiB/s|usec>}.
 *
 * <p>Usage: {@code VerbsBenchmark DEVICE IP [OPERATION SIZE ITERATIONS]...}; without runs, the
 * set of the guest suite.
 */
public final class VerbsBenchmark {
    private static final int WINDOW = 128;
    /** One request in this many asks for its completion, as perftest's bandwidth tests do. */
    private static final int CQ_MOD = 100;
    private static final int MAX_SIZE = 1 << 20;
    private static final List<String> DEFAULT_RUNS = List.of(
            "write_bw 4096 2000", "write_bw 65536 500", "write_bw 1048576 40",
            "read_bw 4096 2000", "read_bw 65536 500", "read_bw 1048576 40",
            "send_bw 4096 2000", "send_bw 65536 500", "send_bw 1048576 40",
            "send_lat 64 2000");

    private final CompletionQueue clientCq;
    private final CompletionQueue serverCq;
    private final Endpoint client;
    private final Endpoint server;
    private final MemoryRegion clientMemory;
    private final MemoryRegion serverMemory;
    private final CompletionResult[] results = new CompletionResult[64];
    /** Receives the server has posted and not yet had filled; each takes any message size. */
    private int serverReceives;

    private VerbsBenchmark(RdmaProvider provider, InetAddress address) throws Exception {
        for (int i = 0; i < results.length; i++) {
            results[i] = new CompletionResult();
        }
        clientCq = provider.createCompletionQueue(4096, q -> { });
        serverCq = provider.createCompletionQueue(4096, q -> { });
        int inline = Math.min(64, provider.capabilities().inlineLimit());
        int ord = Math.min(WINDOW, provider.capabilities().maxOrd());
        int ird = Math.min(WINDOW, provider.capabilities().maxIrd());
        LinkedBlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();
        RdmaListener listener = provider.listen(new InetSocketAddress(address, 0), requests::add);
        RecordingListener clientEvents = new RecordingListener();
        RecordingListener serverEvents = new RecordingListener();
        client = provider.createEndpoint(options(clientCq, inline), clientEvents);
        client.connect(listener.localAddress(), null, ird, ord);
        ConnectionRequest request = requests.poll(60, TimeUnit.SECONDS);
        if (request == null) {
            throw new IllegalStateException("no connection request");
        }
        server = request.createEndpoint(options(serverCq, inline), serverEvents);
        request.accept(server, null, ird, ord);
        clientEvents.expect("ESTABLISHED", 60_000);
        serverEvents.expect("ESTABLISHED", 60_000);
        listener.close();
        clientMemory = client.register(ByteBuffer.allocateDirect(MAX_SIZE), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        serverMemory = server.register(ByteBuffer.allocateDirect(MAX_SIZE),
                Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE);
    }

    private static EndpointOptions options(CompletionQueue cq, int inline) {
        return EndpointOptions.builder(cq, cq).sendQueueDepth(WINDOW * 2).receiveQueueDepth(WINDOW * 4)
                .inlineThreshold(inline).build();
    }

    /**
     * Runs the benchmark.
     *
     * @param args device, address, then optionally triples of operation, size and iterations
     * @throws Exception when something fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: VerbsBenchmark DEVICE IP [OPERATION SIZE ITERATIONS]...");
            System.exit(2);
        }
        List<String> runs = DEFAULT_RUNS;
        if (args.length > 2) {
            runs = new java.util.ArrayList<>();
            for (int i = 2; i + 2 < args.length; i += 3) {
                runs.add(args[i] + " " + args[i + 1] + " " + args[i + 2]);
            }
        }
        RdmaProvider provider = null;
        for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
            if ("verbs".equals(f.type())) {
                for (RdmaProvider p : f.create(Map.of("devices", args[0]))) {
                    provider = p;
                }
            }
        }
        if (provider == null) {
            throw new IllegalStateException("no verbs provider for " + args[0]);
        }
        try {
            VerbsBenchmark b = new VerbsBenchmark(provider, InetAddress.getByName(args[1]));
            for (String run : warmup(runs)) {
                b.run(run.split(" "));
            }
            for (String run : runs) {
                String[] r = run.split(" ");
                double value = b.run(r);
                System.out.printf("RESULT %s %s %.2f %s%n", r[0], r[1], value, "send_lat".equals(r[0]) ? "usec" : "MiB/s");
            }
        } finally {
            provider.close();
        }
    }

    /**
     * The runs that warm the JVM up, unreported: each operation once, at its smallest size. A
     * fresh JVM ran the first run of the set (RDMA Write 4 KiB) 15-30% slower than the same run
     * repeated (three rounds in the guest, 2026-11-26): its Java code was not compiled yet.
     * perftest, in C, needs no such warm-up.
     */
    private static List<String> warmup(List<String> runs) {
        Map<String, String> smallest = new LinkedHashMap<>();
        for (String run : runs) {
            String[] r = run.split(" ");
            smallest.merge(r[0], run, (a, b) -> Integer.parseInt(a.split(" ")[1]) <= Integer.parseInt(r[1]) ? a : b);
        }
        return List.copyOf(smallest.values());
    }

    /** One run: operation, size, iterations; MiB/s, or microseconds for the latency test. */
    private double run(String[] r) throws Exception {
        int size = Integer.parseInt(r[1]);
        int iterations = Integer.parseInt(r[2]);
        switch (r[0]) {
            case "write_bw":
                return rdma(true, size, iterations);
            case "read_bw":
                return rdma(false, size, iterations);
            case "send_bw":
                return sendBandwidth(size, iterations);
            case "send_lat":
                return sendLatency(size, iterations);
            default:
                throw new IllegalArgumentException("unknown operation " + r[0]);
        }
    }

    private int poll(CompletionQueue cq) {
        return poll(cq, results);
    }

    private static int poll(CompletionQueue cq, CompletionResult[] into) {
        int n = cq.getResults(into);
        for (int i = 0; i < n; i++) {
            if (into[i].status() != RdmaStatus.SUCCESS) {
                throw new IllegalStateException("request failed: " + into[i]);
            }
        }
        return n;
    }

    /** Polls the client's queue; returns how many requests the reported ones complete (their contexts). */
    private int pollRequests() {
        int n = poll(clientCq);
        int requests = 0;
        for (int i = 0; i < n; i++) {
            requests += (Integer) results[i].requestContext();
        }
        return requests;
    }

    /**
     * Posts the client's next request of a bandwidth run: one in {@link #CQ_MOD}, the last one and
     * the one that fills the window ask for their completion, which carries the number of requests
     * it completes (the silent ones before it and itself); the others are silent.
     *
     * @return the requests posted since the last reported one
     */
    private int postNext(Poster poster, int posted, int completed, int total, int sinceReported) throws RdmaException {
        int n = sinceReported + 1;
        boolean report = (posted + 1) % CQ_MOD == 0 || posted + 1 == total || posted + 1 - completed == WINDOW;
        if (report) {
            poster.post(n, RequestFlags.NONE);
            return 0;
        }
        poster.post(null, RequestFlags.SILENT_SUCCESS);
        return n;
    }

    /** Posts one request of a bandwidth run. */
    private interface Poster {
        void post(Object context, int flags) throws RdmaException;
    }

    /** RDMA Write (or Read) bandwidth, MiB/s: {@code WINDOW} requests in flight. */
    private double rdma(boolean write, int size, int iterations) throws RdmaException {
        Sge[] sgl = {Sge.of(clientMemory, 0, size)};
        Poster poster = write
                ? (context, flags) -> client.postWrite(context, sgl, 1, serverMemory.remoteOffset(),
                        serverMemory.token(), flags)
                : (context, flags) -> client.postRead(context, sgl, 1, serverMemory.remoteOffset(),
                        serverMemory.token(), flags);
        int warmup = Math.min(iterations / 10 + 1, 100);
        long start = 0;
        int measuredFrom = 0;
        int posted = 0;
        int completed = 0;
        int sinceReported = 0;
        int total = iterations + warmup;
        while (completed < total) {
            while (posted < total && posted - completed < WINDOW) {
                sinceReported = postNext(poster, posted, completed, total, sinceReported);
                posted++;
            }
            int before = completed;
            completed += pollRequests();
            if (before < warmup && completed >= warmup) {
                start = System.nanoTime();
                measuredFrom = completed;
                total = Math.max(total, completed + iterations);
            }
        }
        return mibPerSecond((long) (completed - measuredFrom) * size, System.nanoTime() - start);
    }

    private void topUpServerReceives(int count) throws RdmaException {
        Sge[] rx = {Sge.of(serverMemory, 0, MAX_SIZE)};
        while (serverReceives < count) {
            server.postReceive(null, rx, 1);
            serverReceives++;
        }
    }

    /** Send bandwidth, MiB/s: the receiver keeps its receives posted ahead of the sender. */
    private double sendBandwidth(int size, int iterations) throws RdmaException {
        Sge[] tx = {Sge.of(clientMemory, 0, size)};
        Poster poster = (context, flags) -> client.postSend(context, tx, 1, flags);
        int receivesAhead = WINDOW * 4;
        topUpServerReceives(receivesAhead);
        int warmup = Math.min(iterations / 10 + 1, 100);
        int total = iterations + warmup;
        long start = 0;
        int measuredFrom = 0;
        int posted = 0;
        int sent = 0;
        int sinceReported = 0;
        int received = 0;
        while (received < total) {
            while (posted < total && posted - sent < WINDOW && posted - received < receivesAhead - WINDOW) {
                sinceReported = postNext(poster, posted, sent, total, sinceReported);
                posted++;
            }
            sent += pollRequests();
            int n = poll(serverCq);
            serverReceives -= n;
            topUpServerReceives(receivesAhead);
            int before = received;
            received += n;
            if (before < warmup && received >= warmup) {
                start = System.nanoTime();
                measuredFrom = received;
                total = Math.max(total, received + iterations);
            }
        }
        // every send is reported before the next run (the last one asked for its completion)
        while (sent < posted) {
            sent += pollRequests();
        }
        return mibPerSecond((long) (received - measuredFrom) * size, System.nanoTime() - start);
    }

    /**
     * Send latency, microseconds: half the median round trip of a ping-pong. The server side echoes
     * on a thread of its own, busy polling its queue, as perftest's server process does; it posts
     * the receive for the next message before it echoes.
     */
    private double sendLatency(int size, int iterations) throws Exception {
        Sge[] tx = {Sge.of(clientMemory, 0, size)};
        Sge[] echo = {Sge.of(serverMemory, 0, size)};
        Sge[] rx = {Sge.of(clientMemory, MAX_SIZE / 2, size)};
        Sge[] serverRx = {Sge.of(serverMemory, 0, MAX_SIZE)};
        boolean inline = client.options().inlineThreshold() >= size;
        int flags = RequestFlags.SILENT_SUCCESS | (inline ? RequestFlags.INLINE : 0);
        int warmup = Math.min(iterations / 10 + 1, 100);
        int total = warmup + iterations;
        topUpServerReceives(1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        java.util.concurrent.atomic.AtomicReference<Throwable> echoFailed = new java.util.concurrent.atomic.AtomicReference<>();
        Thread echoer = new Thread(() -> {
            CompletionResult[] own = new CompletionResult[results.length];
            for (int i = 0; i < own.length; i++) {
                own[i] = new CompletionResult();
            }
            try {
                for (int i = 0; i < total; i++) {
                    while (poll(serverCq, own) == 0) {
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("no message to echo after 120 s");
                        }
                        Thread.onSpinWait();
                    }
                    server.postReceive(null, serverRx, 1);
                    server.postSend(null, echo, 1, flags);
                }
            } catch (Throwable t) {
                echoFailed.set(t);
            }
        }, "send_lat echo");
        echoer.setDaemon(true);
        echoer.start();
        long[] rtt = new long[iterations];
        for (int i = 0; i < total; i++) {
            client.postReceive(null, rx, 1);
            long t0 = System.nanoTime();
            client.postSend(null, tx, 1, flags);
            while (poll(clientCq) == 0) {
                if (echoFailed.get() != null) {
                    throw new IllegalStateException("the echo failed", echoFailed.get());
                }
                Thread.onSpinWait();
            }
            long t1 = System.nanoTime();
            if (i >= warmup) {
                rtt[i - warmup] = t1 - t0;
            }
        }
        echoer.join(TimeUnit.SECONDS.toMillis(60));
        Arrays.sort(rtt);
        return rtt[iterations / 2] / 2.0 / 1000.0;
    }

    private static double mibPerSecond(long bytes, long nanos) {
        return bytes / (nanos / 1e9) / (1 << 20);
    }
}
