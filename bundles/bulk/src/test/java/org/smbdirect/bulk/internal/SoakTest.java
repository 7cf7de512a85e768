package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.NoBuffersException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.sim.internal.SimDiagnostics;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * Fault-injection soak (issue 7): {@value #DEFAULT_SESSIONS} bulk sessions at a time exchange
 * messages of mixed sizes both ways, inline and by RDMA Read and RDMA Write, for a bounded time,
 * while the simulated fabric resets connections, finds receivers not ready, delays completions
 * and fails registrations. A session that ends is replaced by a new one until the time is up.
 *
 * <p>Checked continuously: every delivered message is the next one of its direction, intact byte
 * by byte; no send, connect or close waits past its bound; the engine keeps its fixed threads.
 * Checked when a session has ended on both sides: every message was delivered exactly once and
 * in order, or its send failed (a refused one never arrives), or the connection was lost after
 * it (an undelivered message is never followed by a delivered one); a session that closed because
 * its work was done delivered everything. Checked at the end: no endpoint, registration,
 * connection or session is left, the threads are the fixed pool, heap and direct memory are back
 * to their baseline, nothing was logged as an error and no exception escaped.
 *
 * <p>CI-sized by default; a long run: {@code -Dsoak.seconds=3600} (see {@code tools/soak.sh}).
 */
class SoakTest {
    static final int DEFAULT_SESSIONS = 64;
    private static final long SECONDS = Long.getLong("soak.seconds", 90);
    private static final int SESSIONS = Integer.getInteger("soak.sessions", DEFAULT_SESSIONS);
    private static final long SEED = Long.getLong("soak.seed", 20261121L);
    /** The bound on any send, close or drain: far beyond what a healthy run needs. */
    private static final Duration CALL_BOUND = Duration.ofSeconds(60);
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(20);
    /** How much slack a blocking connect may take beyond its timeout before it counts as hung. */
    private static final long CONNECT_SLACK_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int WINDOW = 6; // sends in flight per direction
    private static final int HEADER = 16; // session id, direction, index
    private static final int MAX_MESSAGE = 2 * BulkFixture.MIB;
    private static final byte[] POOL = new byte[MAX_MESSAGE + BulkFixture.MIB];
    private static final int UP = 0;
    private static final int DOWN = 1;

    // outcomes of a message's send
    private static final byte NOT_SENT = 0;
    private static final byte ISSUED = 1;
    private static final byte OK = 2;
    private static final byte NO_BUFFERS = 3;
    private static final byte LOST = 4;
    private static final byte OTHER = 5;

    static {
        new SplittableRandom(7).nextBytes(POOL);
    }

    private BulkFixture fx;
    private final ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
    private final Map<Integer, Run> runs = new ConcurrentHashMap<>();
    /**
     * Runs settled although no server side bound to them (the session ended before its first
     * message arrived): kept by id only, so that a long soak does not hold every such session.
     */
    private final Set<Integer> settledUnbound = ConcurrentHashMap.newKeySet();
    private static final Duration UNBOUND_GRACE = Duration.ofSeconds(10);
    private final Set<ServerSide> serverSides = ConcurrentHashMap.newKeySet();
    private final AtomicInteger nextId = new AtomicInteger();
    private ExecutorService driver;
    private volatile boolean stopping;
    private final List<Thread> launchers = new ArrayList<>();
    private Semaphore slots;
    private final LogCounter logs = new LogCounter();
    private final Logger smbdirectLogger = Logger.getLogger("org.smbdirect");

    // figures
    private final AtomicLong connectAttempts = new AtomicLong();
    private final AtomicLong connectFailures = new AtomicLong();
    private final Map<String, AtomicLong> connectFailureKinds = new ConcurrentHashMap<>();
    private final AtomicLong runsCompleted = new AtomicLong();
    private final AtomicLong runsLost = new AtomicLong();
    private final AtomicLong messagesDelivered = new AtomicLong();
    private final AtomicLong bytesDelivered = new AtomicLong();
    private final AtomicLong sendsOk = new AtomicLong();
    private final AtomicLong sendsNoBuffers = new AtomicLong();
    private final AtomicLong sendsLost = new AtomicLong();
    private final AtomicLong undeliveredAfterLoss = new AtomicLong();
    private final AtomicLong longestCallNanos = new AtomicLong();

    @BeforeEach
    void setUp() {
        fx = new BulkFixture();
        smbdirectLogger.addHandler(logs);
        smbdirectLogger.setUseParentHandlers(false); // thousands of expected loss warnings stay out of the log
    }

    @AfterEach
    void tearDown() throws InterruptedException {
        stopping = true;
        for (Thread t : launchers) {
            t.join(CONNECT_TIMEOUT.toMillis() + 10_000);
        }
        if (driver != null) {
            driver.shutdownNow();
            driver.awaitTermination(10, TimeUnit.SECONDS);
        }
        fx.close();
        smbdirectLogger.removeHandler(logs);
        smbdirectLogger.setUseParentHandlers(true);
    }

    @Test
    void soak_faultsInjected_nothingLostSilently_nothingLeaks() throws Exception {
        ConcurrentLinkedQueue<Throwable> escaped = new ConcurrentLinkedQueue<>();
        Thread.UncaughtExceptionHandler previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> escaped.add(e));
        try {
            soak(escaped);
        } finally {
            Thread.setDefaultUncaughtExceptionHandler(previous);
        }
    }

    private void soak(ConcurrentLinkedQueue<Throwable> escaped) throws Exception {
        SmbDirectConfig smb = SmbDirectConfig.builder().engineThreads(2).build();
        // Registration failures on every provider; connection faults are decided by the connecting side's.
        BulkFixture.End readServer = fx.end(faulty(BulkFixture.side()).sim("rdmaRead", true).smb(smb));
        BulkFixture.End writeServer = fx.end(faulty(BulkFixture.side()).sim("rdmaRead", false).smb(smb));
        BulkFixture.End client = fx.end(faulty(BulkFixture.side()).smb(smb)
                .sim("faults.disconnectProbability", 0.0005)
                .sim("faults.receiverNotReadyProbability", 0.0003)
                .sim("faults.delayProbability", 0.01)
                .sim("faults.delayMillis", 5)
                .bulk(BulkConfig.builder().maxInFlight(3).build()));
        List<RdmaProvider> providers = List.of(readServer.provider, writeServer.provider, client.provider);
        List<BulkFixture.End> ends = List.of(readServer, writeServer, client);
        BulkListener readListener = readServer.bulk.listen(readServer.anyAddress(), this::accepted);
        BulkListener writeListener = writeServer.bulk.listen(writeServer.anyAddress(), this::accepted);
        driver = Executors.newFixedThreadPool(2, r -> new Thread(r, "soak-driver"));

        // Warm up so that the threads started on first use (timers) belong to the baseline.
        slots = new Semaphore(SESSIONS);
        for (int i = 0; i < 8; i++) {
            slots.acquire();
            launch(client, i % 2 == 0 ? readListener : writeListener);
        }
        awaitQuiet(Duration.ofSeconds(60));
        Map<Thread, String> engineBaseline = threads("smbdirect-engine-", "smbdirect-timers");
        int simThreadLimit = providers.size() * (2 + 1); // fabric threads and one timer per provider
        Map<RdmaProvider, Integer> regionBaseline = new IdentityHashMap<>();
        for (RdmaProvider p : providers) {
            regionBaseline.put(p, SimDiagnostics.regions(p));
        }
        long heapBaseline = usedHeapAfterGc();
        long directBaseline = directMemory();

        long start = System.nanoTime();
        long deadline = start + TimeUnit.SECONDS.toNanos(SECONDS);
        for (int l = 0; l < 4; l++) {
            Thread t = new Thread(() -> {
                try {
                    while (System.nanoTime() - deadline < 0 && !stopping) {
                        if (slots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                            launch(client, nextId.get() % 2 == 0 ? readListener : writeListener);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "soak-launcher-" + l);
            t.start();
            launchers.add(t);
        }
        long nextReport = start;
        while (System.nanoTime() - deadline < 0) {
            checkContinuously(engineBaseline, simThreadLimit);
            if (System.nanoTime() - nextReport >= 0) {
                System.out.printf("soak %3ds: %d sessions, %d completed, %d lost, %d messages, %,d MB, faults %s; "
                        + "live: %s%n",
                        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start), nextId.get(), runsCompleted.get(),
                        runsLost.get(), messagesDelivered.get(), bytesDelivered.get() >> 20,
                        SimDiagnostics.faults(client.provider), live(ends) + ", " + openRuns());
                nextReport += TimeUnit.SECONDS.toNanos(15);
            }
            assertTrue(problems.isEmpty(), () -> report("while running"));
            settleUnbound();
            Thread.sleep(200); // the watchdog's sampling period, not a protocol wait
        }
        for (Thread t : launchers) {
            t.join(CONNECT_TIMEOUT.toMillis() + 10_000);
            assertTrue(!t.isAlive(), t.getName() + " still connecting");
        }
        long elapsed = System.nanoTime() - start;

        // Drain: the sessions still running finish their work or end; nothing may hang.
        awaitQuiet(CALL_BOUND.plusSeconds(60));
        readListener.close();
        writeListener.close();
        await("every endpoint closed", Duration.ofSeconds(30),
                () -> providers.stream().allMatch(p -> SimDiagnostics.endpoints(p) == 0));
        for (Run r : new ArrayList<>(runs.values())) {
            settle(r); // a client whose server side never learnt its session (lost before the first message)
        }
        for (ServerSide side : serverSides) {
            synchronized (side) {
                if (side.closed == 0) {
                    problems.add("a server side was never told its session closed: " + side.session);
                }
            }
        }
        driver.shutdown();
        assertTrue(driver.awaitTermination(30, TimeUnit.SECONDS), "the soak's send driver did not finish");
        assertTrue(problems.isEmpty(), () -> report("after the drain"));

        // Nothing left behind.
        for (RdmaProvider p : providers) {
            assertEquals(0, SimDiagnostics.endpoints(p), p + ": endpoints (their queues and work requests)");
            assertEquals(regionBaseline.get(p), SimDiagnostics.regions(p), p + ": live registrations");
        }
        for (BulkFixture.End e : ends) {
            assertEquals(List.of(), e.transport.connections(), "connections of " + e.provider);
            assertEquals(0, e.transport.statistics().connectionsOpen(), "open connections of " + e.provider);
            assertTrue(e.bulk.sessions().isEmpty(), "bulk sessions of " + e.provider + ": " + e.bulk.sessions());
        }
        assertEquals(engineBaseline.keySet(), threads("smbdirect-engine-", "smbdirect-timers").keySet(),
                "the engine's fixed threads");
        assertTrue(threads("smbdirect-sim-").size() <= simThreadLimit, () -> "simulator threads "
                + threads("smbdirect-sim-").values());
        long heap = usedHeapAfterGc();
        long direct = directMemory();
        for (int i = 0; i < 20 && direct > directBaseline + 16 * BulkFixture.MIB; i++) {
            Thread.sleep(100); // direct buffers are freed by a cleaner thread after the collection
            heap = usedHeapAfterGc();
            direct = directMemory();
        }

        Map<String, Long> faults = new TreeMap<>();
        for (RdmaProvider p : providers) {
            SimDiagnostics.faults(p).forEach((k, v) -> faults.merge(k, v, Long::sum));
        }
        System.out.printf("soak: %d s, %d connects (at most %d sessions at once), %d sessions completed, %d ended"
                + " by a fault, %d connects failed %s; %,d messages (%,d MB) delivered; sends: %,d ok, %,d refused for lack"
                + " of buffers, %,d failed with the connection, %,d completed but undelivered when the receiver's"
                + " connection was lost; faults injected %s; longest send/connect/close %d ms; heap %+,d KB,"
                + " direct %+,d KB; log records %s%n",
                TimeUnit.NANOSECONDS.toSeconds(elapsed), connectAttempts.get(), SESSIONS, runsCompleted.get(), runsLost.get(),
                connectFailures.get(), new TreeMap<>(connectFailureKinds), messagesDelivered.get(),
                bytesDelivered.get() >> 20, sendsOk.get(), sendsNoBuffers.get(), sendsLost.get(),
                undeliveredAfterLoss.get(), faults, TimeUnit.NANOSECONDS.toMillis(longestCallNanos.get()),
                (heap - heapBaseline) >> 10, (direct - directBaseline) >> 10, logs.levels);

        long heapAfter = heap;
        assertTrue(heap - heapBaseline < 32L * BulkFixture.MIB, () -> "heap after the soak " + (heapAfter >> 20)
                + " MiB, baseline " + (heapBaseline >> 20) + " MiB; what holds it:\n" + histogram());
        assertTrue(direct - directBaseline < 16L * BulkFixture.MIB,
                "direct memory after the soak " + (direct >> 20) + " MiB, baseline " + (directBaseline >> 20) + " MiB");
        assertEquals(List.of(), new ArrayList<>(escaped), "exceptions escaped to a thread's handler");
        assertEquals(List.of(), logs.bad, "errors logged by the engine, the bulk layer or the simulator");
        // Not vacuous: work was done, and every kind of fault hit it.
        assertTrue(runsCompleted.get() >= SESSIONS, "sessions that completed their work: " + runsCompleted.get());
        assertTrue(runsLost.get() > 0, "no session was ended by a fault");
        assertTrue(sendsNoBuffers.get() > 0, "no send was refused for lack of buffers");
        for (String kind : List.of("DISCONNECT", "RECEIVER_NOT_READY", "DELAY", "REGISTRATION_FAILURE")) {
            assertTrue(faults.getOrDefault(kind, 0L) > 0, "no " + kind + " fault injected: " + faults);
        }
    }

    private static BulkFixture.Side faulty(BulkFixture.Side s) {
        return s.sim("faults.seed", SEED).sim("faults.registrationFailureProbability", 0.01);
    }

    // ---- sessions ----

    /** One session's plan: the sizes of the messages each way. */
    private static final class Plan {
        final int id;
        final int[][] sizes = new int[2][];

        Plan(int id) {
            this.id = id;
            SplittableRandom r = new SplittableRandom(SEED ^ (id * 0x9E3779B97F4A7C15L));
            for (int dir = UP; dir <= DOWN; dir++) {
                sizes[dir] = new int[1 + r.nextInt(40)];
                for (int i = 0; i < sizes[dir].length; i++) {
                    sizes[dir][i] = dir == UP && i == 0 ? HEADER : size(r);
                }
            }
        }

        /** Mostly small, the inline threshold's neighbourhood, RDMA sizes, a few megabytes. */
        private static int size(SplittableRandom r) {
            double x = r.nextDouble();
            int inline = BulkConfig.defaults().inlineThreshold();
            if (x < 0.35) {
                return r.nextInt(HEADER, 513);
            } else if (x < 0.60) {
                return r.nextInt(513, inline + 1);
            } else if (x < 0.65) {
                return r.nextInt(inline - 2, inline + 3);
            } else if (x < 0.90) {
                return r.nextInt(inline + 1, 256 * 1024 + 1);
            }
            return r.nextInt(256 * 1024 + 1, MAX_MESSAGE + 1);
        }
    }

    /** One direction of a session: its sender's view and its receiver's. Guarded by the run. */
    private final class Flow {
        final Run run;
        final int dir;
        final int[] sizes;
        final byte[] outcome;
        final long[] started;
        BulkSession sender;
        int next;
        int inFlight;
        boolean stopped;
        final BitSet delivered = new BitSet();
        int last = -1;

        Flow(Run run, int dir, int[] sizes) {
            this.run = run;
            this.dir = dir;
            this.sizes = sizes;
            this.outcome = new byte[sizes.length];
            this.started = new long[sizes.length];
        }

        /**
         * Issues sends up to the window; on a driver thread. The flow's lock keeps the sends in
         * index order across the driver threads (the bulk layer numbers them in call order).
         */
        synchronized void pump() {
            while (true) {
                int i;
                BulkSession s;
                synchronized (run) {
                    if (stopped || sender == null || next >= sizes.length || inFlight >= WINDOW) {
                        return;
                    }
                    i = next++;
                    inFlight++;
                    outcome[i] = ISSUED;
                    started[i] = System.nanoTime();
                    s = sender;
                }
                ByteBuffer m = message(run.plan.id, dir, i, sizes[i]);
                CompletionStage<Void> f;
                try {
                    f = s.send(m);
                } catch (RuntimeException e) {
                    completed(i, e);
                    continue;
                }
                f.whenComplete((v, t) -> completed(i, t));
            }
        }

        private void completed(int i, Throwable t) {
            Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
            byte o = c == null ? OK : c instanceof NoBuffersException ? NO_BUFFERS
                    : c instanceof ConnectionLostException ? LOST : OTHER;
            if (o == OTHER) {
                violation(run, "send " + i + " " + direction(dir) + " failed with " + c);
            } else {
                (o == OK ? sendsOk : o == NO_BUFFERS ? sendsNoBuffers : sendsLost).incrementAndGet();
            }
            synchronized (run) {
                inFlight--;
                outcome[i] = o;
                noteCall(System.nanoTime() - started[i]);
                if (o == LOST || o == OTHER) {
                    stopped = true; // what was never sent needs no account
                }
            }
            progress(run);
            driver.execute(this::pump);
        }

        /** Checks and records a delivered message; on an engine thread. */
        void deliver(ByteBuffer data) {
            String bad = check(data, run.plan, dir, this);
            if (bad != null) {
                violation(run, bad);
                return;
            }
            messagesDelivered.incrementAndGet();
            bytesDelivered.addAndGet(data.remaining());
            progress(run);
        }

        boolean allFinal() {
            for (int i = 0; i < sizes.length; i++) {
                if (outcome[i] != OK && outcome[i] != NO_BUFFERS) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * One session, from both sides. The server side learns which session it serves from the first
     * upward message (always a bare header, inline, so it cannot be refused for lack of buffers),
     * and only then starts its downward flow. Guarded by itself.
     */
    private final class Run {
        final Plan plan;
        final Flow[] flows;
        BulkSession client;
        BulkSession server;
        ConnectionLoss clientLoss;
        ConnectionLoss serverLoss;
        int clientClosed;
        int serverClosed;
        boolean closeRequested;
        boolean closeDone;
        long closeStarted;
        boolean slotReleased;
        /** When the client side was over (nanoTime), for runs whose server side never bound. */
        long clientDoneAt;
        boolean settled;

        Run(Plan plan) {
            this.plan = plan;
            this.flows = new Flow[] {new Flow(this, UP, plan.sizes[UP]), new Flow(this, DOWN, plan.sizes[DOWN])};
        }

        boolean clientDone() {
            return client != null && clientClosed > 0 && flows[UP].inFlight == 0 && (!closeRequested || closeDone);
        }

        boolean serverDone() {
            return server != null && serverClosed > 0 && flows[DOWN].inFlight == 0;
        }

        @Override
        public synchronized String toString() {
            StringBuilder b = new StringBuilder("session " + plan.id + " client="
                    + (client == null ? "-" : clientClosed + "x closed " + clientLoss) + " server="
                    + (server == null ? "-" : serverClosed + "x closed " + serverLoss) + " close requested="
                    + closeRequested + " done=" + closeDone);
            for (Flow f : flows) {
                b.append("\n  ").append(direction(f.dir)).append(" next=").append(f.next).append(" in flight=")
                        .append(f.inFlight).append(" outcomes=");
                for (byte o : f.outcome) {
                    b.append(o);
                }
                b.append(" delivered=").append(f.delivered).append(" sizes=").append(java.util.Arrays.toString(f.sizes));
            }
            return b.toString();
        }
    }

    /** The client side's handler. */
    private final class ClientSide implements BulkHandler {
        private final Run run;

        ClientSide(Run run) {
            this.run = run;
        }

        @Override
        public void onData(BulkSession session, ByteBuffer data) {
            run.flows[DOWN].deliver(data);
        }

        @Override
        public void onClosed(BulkSession session, ConnectionLoss loss) {
            synchronized (run) {
                run.clientClosed++;
                run.clientLoss = loss;
            }
            progress(run);
        }
    }

    /** The server side's handler: bound to its run by the first upward message. */
    private final class ServerSide implements BulkHandler {
        private final BulkSession session;
        private Run run; // guarded by this
        private int closed; // guarded by this

        ServerSide(BulkSession session) {
            this.session = session;
        }

        @Override
        public void onData(BulkSession s, ByteBuffer data) {
            Run r;
            synchronized (this) {
                if (closed > 0) {
                    problems.add("data after onClosed at " + s);
                    return;
                }
                if (run == null) {
                    int id = data.remaining() >= HEADER ? data.getInt(data.position()) : -1;
                    run = runs.get(id);
                    if (run == null) {
                        problems.add(settledUnbound.contains(id)
                                ? "the first message of session " + id + " reached its server side more than "
                                        + UNBOUND_GRACE.toSeconds() + " s after its client's session was over"
                                : "a first message naming no running session (" + id + ") at " + s);
                        return;
                    }
                    synchronized (run) {
                        if (run.settled) { // settled as unbound just now
                            problems.add("the first message of session " + id + " reached its server side more than "
                                    + UNBOUND_GRACE.toSeconds() + " s after its client's session was over");
                            run = null;
                            return;
                        }
                        if (run.server != null) {
                            problems.add("session " + id + " has a second server side: " + s);
                        }
                        run.server = session;
                        run.flows[DOWN].sender = session;
                    }
                    serverSides.remove(this); // its run accounts for it from now on
                    driver.execute(run.flows[DOWN]::pump);
                }
                r = run;
            }
            r.flows[UP].deliver(data);
        }

        @Override
        public void onClosed(BulkSession s, ConnectionLoss loss) {
            Run r;
            synchronized (this) {
                closed++;
                r = run;
                if (r == null && closed == 1) {
                    serverSides.remove(this); // never bound: nothing more to account for
                    return;
                }
            }
            if (r == null) {
                problems.add("onClosed called more than once at an unbound " + s);
                return;
            }
            synchronized (r) {
                r.serverClosed++;
                r.serverLoss = loss;
            }
            progress(r);
        }
    }

    /**
     * Connects one session (blocking, bounded) and starts its upward flow; on a launcher thread
     * holding a slot, which the run gives back when its client side is over.
     */
    private void launch(BulkFixture.End client, BulkListener target) throws InterruptedException {
        Run r = new Run(new Plan(nextId.getAndIncrement()));
        runs.put(r.plan.id, r);
        connectAttempts.incrementAndGet();
        long t0 = System.nanoTime();
        BulkSession s;
        try {
            s = client.bulk.connect(target.localAddress(), new ClientSide(r), CONNECT_TIMEOUT);
        } catch (SmbDirectException e) {
            connectFailures.incrementAndGet();
            connectFailureKinds.computeIfAbsent(e.getClass().getSimpleName(), k -> new AtomicLong())
                    .incrementAndGet();
            runs.remove(r.plan.id); // no message was sent
            slots.release();
            return;
        } finally {
            long took = System.nanoTime() - t0;
            noteCall(took);
            if (took > CONNECT_TIMEOUT.toNanos() + CONNECT_SLACK_NANOS) {
                problems.add("connect took " + TimeUnit.NANOSECONDS.toMillis(took) + " ms, timeout " + CONNECT_TIMEOUT);
            }
        }
        synchronized (r) {
            r.client = s;
            r.flows[UP].sender = s;
        }
        driver.execute(r.flows[UP]::pump);
        progress(r);
    }

    /** The listeners' accept handler: the server side of a session, bound to its run later. */
    private BulkHandler accepted(BulkSession s) {
        ServerSide side = new ServerSide(s);
        serverSides.add(side);
        return side;
    }

    /**
     * After any event of a run: the client closes once both directions' work is done (every send
     * completed or refused, every completed one delivered); a run ended on both sides is settled.
     */
    private void progress(Run r) {
        BulkSession close = null;
        boolean releaseSlot = false;
        synchronized (r) {
            if (r.settled) {
                return;
            }
            if (r.client != null && !r.closeRequested && r.clientClosed == 0 && r.flows[UP].allFinal() && r.flows[DOWN].allFinal()) {
                Flow down = r.flows[DOWN];
                boolean all = true;
                for (int i = 0; i < down.sizes.length; i++) {
                    all &= down.outcome[i] != OK || down.delivered.get(i);
                }
                if (all) {
                    r.closeRequested = true;
                    r.closeStarted = System.nanoTime();
                    close = r.client;
                }
            }
            if (r.clientDone() && !r.slotReleased) {
                r.slotReleased = true;
                r.clientDoneAt = System.nanoTime();
                releaseSlot = true;
            }
            if (r.clientDone() && r.serverDone()) {
                settle(r); // under the run's lock: no send may start between the decision and the checks
            }
        }
        if (releaseSlot) {
            slots.release();
        }
        if (close != null) {
            close.closeAsync().whenComplete((v, t) -> {
                synchronized (r) {
                    r.closeDone = true;
                    noteCall(System.nanoTime() - r.closeStarted);
                }
                progress(r);
            });
        }
    }

    /** The checks once a run is over on every side it had. */
    private void settle(Run r) {
        synchronized (r) {
            if (r.settled) {
                return;
            }
            r.settled = true;
            if (r.clientClosed > 1 || r.serverClosed > 1) {
                violation(r, "onClosed called more than once");
            }
            if (r.client != null && r.clientClosed == 0 || r.server != null && r.serverClosed == 0) {
                violation(r, "a side was never told its session closed");
            }
            int before = problems.size();
            for (Flow f : r.flows) {
                f.stopped = true;
                checkAccount(r, f);
            }
            if (problems.size() > before) {
                problems.add(r.toString());
            }
            if (r.client != null) {
                (r.closeRequested ? runsCompleted : runsLost).incrementAndGet();
            }
        }
        runs.remove(r.plan.id);
    }

    /** Exactly once, in order, or the send failed, or the connection was lost after it. */
    private void checkAccount(Run r, Flow f) {
        for (int i = 0; i < f.sizes.length; i++) {
            byte o = f.outcome[i];
            boolean d = f.delivered.get(i);
            if (o == ISSUED) {
                violation(r, direction(f.dir) + " send " + i + " never completed");
            } else if (d && o != OK && o != LOST) {
                violation(r, direction(f.dir) + " message " + i + " delivered although its send " + (o == NOT_SENT
                        ? "was never made" : "failed (" + o + ")"));
            } else if (!d && o == OK) {
                // Only a close that ended the session vouches for every send. A fault may end it
                // after the close was asked for: a message waiting at the server for order behind a
                // send the client abandoned (its NOBUFS still on the way) is then lost like any other.
                if (r.closeRequested && f.dir == UP && r.clientLoss != null
                        && r.clientLoss.reason() == TerminationReason.LOCAL_CLOSE) {
                    violation(r, "upward message " + i + " completed but not delivered in a session closed"
                            + " after all its work");
                } else if (f.delivered.nextSetBit(i + 1) >= 0) {
                    violation(r, direction(f.dir) + " message " + i + " completed but not delivered, a later"
                            + " one was");
                } else {
                    undeliveredAfterLoss.incrementAndGet();
                }
            }
        }
    }

    /** Null when {@code data} is the flow's next message, intact; records it as delivered. */
    private static String check(ByteBuffer data, Plan plan, int dir, Flow f) {
        if (data.remaining() < HEADER) {
            return direction(dir) + ": a message of " + data.remaining() + " bytes";
        }
        ByteBuffer d = data.duplicate();
        int id = d.getInt();
        int dr = d.getInt();
        long index = d.getLong();
        if (id != plan.id || dr != dir) {
            return direction(dir) + ": a message of session " + id + " direction " + dr + " arrived";
        }
        synchronized (f.run) {
            if (index <= f.last || index >= f.sizes.length) {
                return direction(dir) + " message " + index + " arrived after " + f.last + " (duplicate or"
                        + " out of order)";
            }
            if (data.remaining() != f.sizes[(int) index]) {
                return direction(dir) + " message " + index + ": " + data.remaining() + " bytes, sent "
                        + f.sizes[(int) index];
            }
            f.last = (int) index;
            f.delivered.set((int) index);
        }
        int off = offset(plan.id, dir, (int) index, data.remaining());
        int mismatch = ByteBuffer.wrap(POOL, off, data.remaining() - HEADER).mismatch(d);
        return mismatch < 0 ? null : direction(dir) + " message " + index + " differs at byte " + (HEADER + mismatch);
    }

    private static ByteBuffer message(int id, int dir, int index, int size) {
        boolean direct = ((id + index) & 1) == 0;
        ByteBuffer b = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        b.putInt(id).putInt(dir).putLong(index);
        b.put(POOL, offset(id, dir, index, size), size - HEADER);
        return b.flip();
    }

    private static int offset(int id, int dir, int index, int size) {
        long h = (id * 31L + dir) * 1_000_003L + index;
        h ^= h >>> 17;
        h *= 0xBF58476D1CE4E5B9L;
        return (int) Math.floorMod(h ^ (h >>> 31), (long) (POOL.length - size + HEADER + 1));
    }

    private static String direction(int dir) {
        return dir == UP ? "upward" : "downward";
    }

    private void violation(Run r, String what) {
        problems.add("session " + r.plan.id + ": " + what);
    }

    private void noteCall(long nanos) {
        longestCallNanos.accumulateAndGet(nanos, Math::max);
    }

    // ---- watchdog and end checks ----

    /** No call older than its bound, the engine's threads unchanged. */
    private void checkContinuously(Map<Thread, String> engineBaseline, int simThreadLimit) {
        long now = System.nanoTime();
        for (Run r : runs.values()) {
            synchronized (r) {
                for (Flow f : r.flows) {
                    for (int i = 0; i < f.sizes.length; i++) {
                        if (f.outcome[i] == ISSUED && now - f.started[i] > CALL_BOUND.toNanos()) {
                            violation(r, direction(f.dir) + " send " + i + " pending for more than " + CALL_BOUND);
                            f.started[i] = Long.MAX_VALUE / 2; // reported once
                        }
                    }
                }
                if (r.closeRequested && !r.closeDone && now - r.closeStarted > CALL_BOUND.toNanos()) {
                    violation(r, "closeAsync pending for more than " + CALL_BOUND);
                    r.closeDone = true;
                }
            }
        }
        Map<Thread, String> engine = threads("smbdirect-engine-", "smbdirect-timers");
        if (!engine.keySet().equals(engineBaseline.keySet())) {
            problems.add("engine threads changed: " + engine.values() + ", at the start " + engineBaseline.values());
        }
        Map<Thread, String> sim = threads("smbdirect-sim-");
        if (sim.size() > simThreadLimit) {
            problems.add("simulator threads beyond its fixed set: " + sim.values());
        }
    }

    /** Waits until every run that has begun on the client side is over there and on its server side. */
    private void awaitQuiet(Duration bound) throws InterruptedException {
        long end = System.nanoTime() + bound.toNanos();
        while (true) {
            List<Run> busy = runs.values().stream().filter(r -> {
                synchronized (r) {
                    return r.client != null && !r.clientDone() || r.server != null && !r.serverDone();
                }
            }).collect(Collectors.toList());
            if (busy.isEmpty() && slots.availablePermits() == SESSIONS) {
                return;
            }
            if (System.nanoTime() - end > 0) {
                throw new AssertionError(busy.size() + " sessions did not end within " + bound + ":\n"
                        + busy.stream().limit(10).map(Run::toString).collect(Collectors.joining("\n"))
                        + (problems.isEmpty() ? "" : "\n" + report("meanwhile")));
            }
            Thread.sleep(50);
        }
    }

    private static void await(String what, Duration bound, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + bound.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError(what + ": not within " + bound);
            }
            Thread.sleep(20);
        }
    }

    private String report(String when) {
        return "invariants broken " + when + ":\n" + problems.stream().limit(20).collect(Collectors.joining("\n"));
    }

    /**
     * Settles the runs whose client side has been over for {@link #UNBOUND_GRACE} while no server
     * side ever bound (its session ended before the first upward message arrived): their checks
     * run now rather than at the end, and the soak stops holding their sessions.
     */
    private void settleUnbound() {
        long now = System.nanoTime();
        for (Run r : runs.values()) {
            synchronized (r) {
                if (r.server == null && r.slotReleased && now - r.clientDoneAt > UNBOUND_GRACE.toNanos()) {
                    settledUnbound.add(r.plan.id);
                    settle(r);
                }
            }
        }
    }

    /** The runs not settled yet, by what they wait for. */
    private String openRuns() {
        int noServer = 0;
        int serverOpen = 0;
        int clientOpen = 0;
        for (Run r : runs.values()) {
            synchronized (r) {
                if (!r.clientDone()) {
                    clientOpen++;
                } else if (r.server == null) {
                    noServer++;
                } else if (!r.serverDone()) {
                    serverOpen++;
                }
            }
        }
        return "runs open " + runs.size() + " (client not done " + clientOpen + ", no server side " + noServer
                + ", server not done " + serverOpen + ")";
    }

    /** Per end: its transport (with its connection count), sim endpoints and bulk sessions. */
    private static String live(List<BulkFixture.End> ends) {
        StringBuilder b = new StringBuilder();
        for (BulkFixture.End e : ends) {
            b.append(b.length() == 0 ? "" : ", ").append(e.transport).append(" endpoints ")
                    .append(SimDiagnostics.endpoints(e.provider)).append(" sessions ").append(e.bulk.sessions().size());
        }
        return b.toString();
    }

    private static Map<Thread, String> threads(String... prefixes) {
        Map<Thread, String> m = new LinkedHashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            for (String p : prefixes) {
                if (t.isAlive() && t.getName().startsWith(p)) {
                    m.put(t, t.getName());
                }
            }
        }
        return m;
    }

    private static long usedHeapAfterGc() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** The largest classes on the heap, from the JDK's jcmd, to say what a leak holds. */
    private static String histogram() {
        try {
            Process p = new ProcessBuilder(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "jcmd")
                    .toString(), Long.toString(ProcessHandle.current().pid()), "GC.class_histogram")
                    .redirectErrorStream(true).start();
            try (java.io.BufferedReader r = p.inputReader()) {
                return r.lines().limit(30).collect(Collectors.joining("\n"));
            }
        } catch (java.io.IOException e) {
            return "(no histogram: " + e + ")";
        }
    }

    private static long directMemory() {
        return ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
    }

    /** Counts the org.smbdirect log records by level; keeps errors and internal errors. */
    private static final class LogCounter extends Handler {
        final Map<String, AtomicLong> levels = new ConcurrentHashMap<>();
        final List<String> bad = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public void publish(LogRecord r) {
            levels.computeIfAbsent(r.getLevel().getName(), k -> new AtomicLong()).incrementAndGet();
            String m = String.valueOf(r.getMessage());
            if (r.getLevel().intValue() >= Level.SEVERE.intValue() || m.contains("internal error")
                    || m.contains("broke the bulk session protocol")) {
                if (bad.size() < 20) {
                    bad.add(r.getLevel() + " " + r.getLoggerName() + ": " + m
                            + (r.getThrown() == null ? "" : " " + r.getThrown()));
                }
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
