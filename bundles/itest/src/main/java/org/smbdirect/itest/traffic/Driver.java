package org.smbdirect.itest.traffic;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe.Counter;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectException;

/**
 * One kind of traffic, on its own thread: while the probe says so, it looks the service up and
 * runs rounds on it (listen, connect, send both ways until a bundle cycle or the test ends the
 * round, close everything). It keeps the service object while the service is registered, as a
 * Declarative Services reference would, and looks the service up again once it went.
 *
 * @param <S> the service type
 * @param <L> the type of the service's listeners
 * @param <E> the type of the round's ends; a driver's end class names its supertype in full
 *        ({@code Driver<S, L, End>.Stream}), as javac checks this bound before it resolves a bare
 *        {@code Stream} inherited by the class it is declaring
 */
abstract class Driver<S, L extends AutoCloseable, E extends Driver<S, L, E>.Stream> implements Runnable {
    /** Every wait of a round is bounded by this; nothing here waits for a protocol timer. */
    static final long TIMEOUT_MILLIS = 15_000;

    final BundleContext context;
    final TrafficProbe probe;
    private final Class<S> type;
    private final Thread thread;
    private final Object changes = new Object();
    private volatile boolean running = true;
    private volatile ServiceReference<?> current;
    private volatile boolean currentGone;
    /** How the round's operations are named in problems and expected failures ("bulk " or ""). */
    private final String label;
    /** Where the ends a round opens, and the sends lost with their connections, are counted. */
    private final Counter endsOpened;
    private final Counter lost;
    /** As for {@link Ledger#match}. */
    private final boolean handedOverBeforePeerLoss;
    /** The current round's ends, for {@link #describe()}. */
    private volatile List<E> roundEnds = List.of();

    Driver(BundleContext context, TrafficProbe probe, Class<S> type, String name, String label, Counter endsOpened,
            Counter lost, boolean handedOverBeforePeerLoss) {
        this.context = context;
        this.probe = probe;
        this.type = type;
        this.thread = new Thread(this, "itest-traffic-" + name);
        thread.setDaemon(true);
        this.label = label;
        this.endsOpened = endsOpened;
        this.lost = lost;
        this.handedOverBeforePeerLoss = handedOverBeforePeerLoss;
    }

    void start() {
        thread.start();
    }

    /** Asks the round to end; {@link #stop} waits for it. */
    void halt() {
        running = false;
        wake();
    }

    /** Ends the current round (closing what it opened) and the thread. */
    void stop() {
        halt();
        try {
            thread.join(3 * TIMEOUT_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            probe.problem(thread.getName() + " did not end within " + 3 * TIMEOUT_MILLIS + " ms", null);
        }
    }

    /** A service came, changed or went, or a connection ended: look again. */
    void wake() {
        synchronized (changes) {
            changes.notifyAll();
        }
    }

    /** The framework is unregistering a service; the round on it must end. */
    void unregistering(ServiceReference<?> ref) {
        if (ref.equals(current)) {
            currentGone = true;
            wake();
        }
    }

    /** Waits for a change, at most {@code millis}: the back-off between rounds and the round's idle loop. */
    void pause(long millis) throws InterruptedException {
        synchronized (changes) {
            changes.wait(millis);
        }
    }

    /** Whether the round should go on. */
    boolean carryOn() {
        ServiceReference<?> ref = current;
        return running && probe.enabled() && !currentGone && ref != null && ref.getBundle() != null;
    }

    boolean running() {
        return running;
    }

    @Override
    public void run() {
        probe.driverRunning(1);
        probe.state(thread.getName(), this::describe);
        ServiceReference<S> ref = null;
        S service = null;
        try {
            while (running) {
                if (service != null && (currentGone || ref.getBundle() == null)) {
                    // (unregistered: also when the UNREGISTERING event came between the lookup
                    // and the getService, before the reference became current)
                    // the service went: let it go, and look again
                    release(ref);
                    ref = null;
                    service = null;
                }
                if (!probe.enabled()) {
                    idle();
                    pause(20);
                    continue;
                }
                if (service == null) {
                    if (!running) {
                        break; // this bundle is stopping: no getService now (SCR fails it with an ERROR event)
                    }
                    ref = context.getServiceReference(type);
                    service = ref == null ? null : context.getService(ref);
                    if (service == null) {
                        if (ref != null) {
                            // its bundle is stopping: look again once the framework says what changed
                            probe.add(TrafficProbe.Counter.SERVICE_GONE_AT_GET, 1);
                        }
                        pause(20);
                        continue;
                    }
                    current = ref;
                    currentGone = false;
                }
                // a consumer keeps the service while it is registered, as a DS reference would
                round(ref, service);
            }
        } catch (InterruptedException e) {
            probe.problem("interrupted", e);
        } catch (RuntimeException | Error e) {
            probe.problem("the driver failed", e);
        } finally {
            if (service != null) {
                release(ref);
            }
            probe.state(thread.getName(), null);
            probe.driverRunning(-1);
        }
    }

    private void release(ServiceReference<S> ref) {
        current = null;
        try {
            context.ungetService(ref);
        } catch (IllegalStateException e) {
            // this bundle is stopping: the framework releases it
        }
    }

    /** What the driver is doing: the round's connections, their state and counters. */
    final String describe() {
        List<E> ends = roundEnds;
        StringBuilder s = new StringBuilder(ends.size() + " ends");
        for (E e : ends) {
            s.append("\n  ").append(e.describe());
        }
        return s.toString();
    }

    /** Called between rounds while traffic is switched off. */
    void idle() throws InterruptedException {
    }

    /**
     * Listens, connects, carries traffic until {@link #carryOn()} turns false or a connection
     * ends, then closes everything it opened and accounts for it.
     */
    final void round(ServiceReference<S> ref, S service) throws InterruptedException {
        List<E> ends = new CopyOnWriteArrayList<>();
        roundEnds = ends;
        BlockingQueue<E> accepted = new LinkedBlockingQueue<>();
        L listener;
        try {
            listener = listen(service, e -> {
                ends.add(e);
                probe.add(endsOpened, 1);
                accepted.add(e);
            });
        } catch (SmbDirectException e) {
            failed(label + "listen", e, SmbDirectException.class); // no provider, or the service is closed
            pause(20);
            return;
        } catch (RuntimeException e) {
            probe.problem(label + "listen threw", e);
            pause(20);
            return;
        }
        probe.driverBusy(1);
        try {
            carry(service, listener, ends, accepted);
        } finally {
            try {
                listener.close();
            } catch (Exception e) {
                probe.problem("closing the " + label + "listener threw", e);
            }
            closeAndAccount(ends, lost, handedOverBeforePeerLoss);
            staleCheck(ref, service, ends);
            probe.driverBusy(-1);
        }
    }

    /** Listens on any port; each end the listener accepts is handed to {@code accepted}. */
    abstract L listen(S service, Consumer<E> accepted) throws SmbDirectException;

    /**
     * Connects to the listener, pairs the ends ({@code ends} holds the accepted ones already;
     * the connecting ones are added here) and lets them send until the round ends.
     */
    abstract void carry(S service, L listener, List<E> ends, BlockingQueue<E> accepted) throws InterruptedException;

    /** After the round: a service object whose service went away must refuse further use. */
    abstract void staleCheck(ServiceReference<S> ref, S service, List<E> ends);

    /** Records an exception a cycle may cause, by kind; anything else is a problem. */
    void failed(String operation, Throwable t, Class<?>... allowed) {
        for (Class<?> a : allowed) {
            if (a.isInstance(t)) {
                probe.expected(operation + ": " + kind(t));
                return;
            }
        }
        probe.problem(operation + " failed unexpectedly", t);
    }

    /** The class and, for a lost connection, its reason; otherwise the message without numbers. */
    static String kind(Throwable t) {
        if (t instanceof ConnectionLostException) {
            ConnectionLoss l = ((ConnectionLostException) t).loss();
            return t.getClass().getSimpleName() + " " + (l == null ? "?" : l.reason());
        }
        String m = String.valueOf(t.getMessage()).replaceAll("/?[0-9][0-9.:]*", "#");
        return t.getClass().getSimpleName() + " " + (m.length() > 70 ? m.substring(0, 70) + "..." : m);
    }

    static long deadline() {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
    }

    static boolean before(long deadline) {
        return System.nanoTime() - deadline < 0;
    }

    /**
     * One end of a round's traffic: it sends one stream of numbered payloads, at most a window of
     * them outstanding, and checks the stream its peer sends. The closing and matching checks
     * ({@link #closeAndAccount}) see ends through it.
     */
    abstract class Stream {
        final String role;
        /** Completes once the end was told that it ended, closed or lost. */
        final CompletableFuture<ConnectionLoss> ended = new CompletableFuture<>();
        /** What this end received from its peer. */
        final Payload.Inbound inbound = new Payload.Inbound();
        /** What this end sent. */
        final Ledger sent = new Ledger();
        /** The stream number this end's payloads carry. */
        final int stream;
        /** The other end, once both are known. */
        volatile Stream peer;
        private int outstanding;
        private boolean sending;
        private boolean sendFailed;

        Stream(String role, int stream) {
            this.role = role;
            this.stream = stream;
        }

        /** The size of payload {@code seq}. */
        abstract int size(long seq);

        /** Sends payload {@code seq}; its completion calls {@link #sendCompleted} or {@link #sendFailed}. */
        abstract void post(long seq, ByteBuffer payload);

        /** Closes the end (a close of ours, not a loss). */
        abstract void close();

        /** How problems name send {@code seq}. */
        abstract String sendName(long seq);

        /** The counters of sends attempted and completed. */
        abstract Counter attemptedCounter();

        abstract Counter sentCounter();

        /** The end's state for a report: sending, closed or lost, its connection's counters. */
        abstract String describe();

        /** Starts sending, {@code window} payloads outstanding at most. */
        final synchronized void startSending(int window) {
            sending = true;
            for (int i = 0; i < window; i++) {
                sendNext();
            }
        }

        /** Stops issuing sends. */
        final synchronized void stopSending() {
            sending = false;
        }

        /** Sends neither completed nor failed yet. */
        final synchronized int outstanding() {
            return outstanding;
        }

        /** What was sent, received and is outstanding, for diagnostics. */
        final synchronized String sendState() {
            return sent + ", received " + inbound.delivered() + ", outstanding " + outstanding + ", sending " + sending
                    + ", send failed " + sendFailed;
        }

        /** Under the lock, so that sequence numbers are sent in order. */
        private void sendNext() {
            if (!sending || sendFailed) {
                return;
            }
            long seq = sent.next();
            ByteBuffer m = Payload.make(stream, seq, size(seq), false);
            outstanding++;
            probe.add(attemptedCounter(), 1);
            try {
                post(seq, m);
            } catch (RuntimeException e) {
                outstanding--;
                sendFailed = true;
                sent.failed(seq);
                probe.problem(this + ": send threw", e);
            }
        }

        final synchronized void sendCompleted(long seq) {
            outstanding--;
            if (!sent.completed(seq)) {
                probe.problem(this + ": " + sendName(seq) + " completed twice", null);
            }
            probe.add(sentCounter(), 1);
            sendNext();
        }

        /** A send failed: no more are issued; a failure other than the connection's loss is a problem. */
        final void sendFailed(long seq, String operation, Throwable t) {
            synchronized (this) {
                outstanding--;
                sendFailed = true;
                if (!sent.failed(seq)) {
                    probe.problem(this + ": " + sendName(seq) + " failed after it completed", null);
                }
            }
            failed(operation, t, ConnectionLostException.class);
            wake();
        }
    }

    /**
     * Closes every end, then checks that each was told that it ended, that every send completed or
     * failed, and that what each end sent was delivered to its peer once, in order, or lost with the
     * connection (the matching check).
     *
     * @param lost where the sends lost with their connection are counted
     * @param handedOverBeforePeerLoss as for {@link Ledger#match}: whether a completed send must have
     *        been delivered when the receiver ended by its peer's disconnect
     */
    final void closeAndAccount(List<? extends Stream> ends, Counter lost, boolean handedOverBeforePeerLoss)
            throws InterruptedException {
        for (Stream e : ends) {
            e.stopSending();
        }
        for (Stream e : ends) {
            try {
                e.close();
            } catch (RuntimeException x) {
                probe.problem("closeAsync threw on " + e, x);
            }
        }
        long deadline = deadline();
        for (Stream e : ends) {
            while (!e.ended.isDone() && before(deadline)) {
                pause(10);
            }
            if (!e.ended.isDone()) {
                probe.problem(e + " was not told that it ended within " + TIMEOUT_MILLIS + " ms of closing it", null);
            }
            while (e.outstanding() > 0 && before(deadline)) {
                pause(10);
            }
            if (e.outstanding() > 0) {
                probe.problem(e + ": " + e.outstanding() + " sends neither completed nor failed", null);
            }
        }
        for (Stream sender : ends) {
            Stream receiver = sender.peer;
            if (receiver == null) {
                if (sender.sent.attempted() > 0) {
                    probe.problem(sender + " sent without a peer", null);
                }
            } else if (sender.ended.isDone() && receiver.ended.isDone() && sender.outstanding() == 0) {
                // (otherwise reported above: not told that it ended, or sends outstanding)
                probe.add(lost, sender.sent.match(sender + " to its peer", sender.stream, receiver.inbound,
                        receiver.ended.getNow(null), handedOverBeforePeerLoss, probe));
            }
        }
    }
}
