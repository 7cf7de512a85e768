package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A {@link ConnectionListener} that records every event with the thread it ran on, and checks
 * the listener guarantees as events arrive: never concurrently, never on the thread that created
 * the recorder (the test's thread, inside a call it made), nothing after a terminal event.
 */
public final class EventRecorder implements ConnectionListener {

    /** The kind of an event. */
    public enum Kind {
        /** {@link ConnectionListener#onEstablished}. */
        ESTABLISHED,
        /** {@link ConnectionListener#onDisconnected}. */
        DISCONNECTED,
        /** {@link ConnectionListener#onError}. */
        ERROR;

        /**
         * Tells whether this kind ends the connection.
         *
         * @return {@code true} for {@link #DISCONNECTED} and {@link #ERROR}
         */
        public boolean isTerminal() {
            return this != ESTABLISHED;
        }
    }

    /** One recorded event. */
    public static final class Event {
        private final Kind kind;
        private final RdmaStatus status;
        private final String reason;
        private final Endpoint endpoint;
        private final Thread thread;

        Event(Kind kind, RdmaStatus status, String reason, Endpoint endpoint, Thread thread) {
            this.kind = kind;
            this.status = status;
            this.reason = reason;
            this.endpoint = endpoint;
            this.thread = thread;
        }

        /**
         * The kind.
         *
         * @return the kind
         */
        public Kind kind() {
            return kind;
        }

        /**
         * The status of an {@link Kind#ERROR}.
         *
         * @return the status, {@code null} for other kinds
         */
        public RdmaStatus status() {
            return status;
        }

        /**
         * The reason of an {@link Kind#ERROR}.
         *
         * @return the reason, {@code null} for other kinds
         */
        public String reason() {
            return reason;
        }

        /**
         * The endpoint the event was for.
         *
         * @return the endpoint
         */
        public Endpoint endpoint() {
            return endpoint;
        }

        /**
         * The thread the event was delivered on.
         *
         * @return the thread
         */
        public Thread thread() {
            return thread;
        }

        @Override
        public String toString() {
            return kind + (status == null ? "" : "(" + status + ": " + reason + ")");
        }
    }

    private final String name;
    private final Thread owner = Thread.currentThread();
    private final List<Event> events = new ArrayList<>();
    private final List<String> violations = new ArrayList<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private boolean terminal;

    /**
     * Creates a recorder.
     *
     * @param name for messages, for example {@code "client"}
     */
    public EventRecorder(String name) {
        this.name = name;
    }

    @Override
    public void onEstablished(Endpoint endpoint) {
        record(Kind.ESTABLISHED, null, null, endpoint);
    }

    @Override
    public void onDisconnected(Endpoint endpoint) {
        record(Kind.DISCONNECTED, null, null, endpoint);
    }

    @Override
    public void onError(Endpoint endpoint, RdmaStatus status, String reason) {
        record(Kind.ERROR, status, reason, endpoint);
    }

    private void record(Kind kind, RdmaStatus status, String reason, Endpoint endpoint) {
        Thread t = Thread.currentThread();
        if (inFlight.incrementAndGet() != 1) {
            violation(kind + " delivered while another event of the same endpoint was being delivered");
        }
        try {
            synchronized (this) {
                if (t == owner) {
                    violation(kind + " delivered on the test's own thread, from within a call it made");
                }
                if (terminal) {
                    violation(kind + " delivered after the terminal event " + events.get(events.size() - 1));
                }
                if (kind == Kind.ERROR && status == null) {
                    violation("onError without a status");
                }
                events.add(new Event(kind, status, reason, endpoint, t));
                terminal |= kind.isTerminal();
                notifyAll();
            }
        } finally {
            inFlight.decrementAndGet();
        }
    }

    private synchronized void violation(String v) {
        violations.add(name + ": " + v);
    }

    /**
     * Waits for the event at the given position.
     *
     * @param index 0 for the first event
     * @return the event
     */
    public synchronized Event await(int index) {
        long deadline = Tck.deadline();
        while (events.size() <= index) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                fail(name + ": no event #" + index + " within " + Tck.timeout() + "; events so far: " + events);
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
        return events.get(index);
    }

    /**
     * Waits for the first event and checks that it is {@link Kind#ESTABLISHED}.
     *
     * @return the event
     */
    public Event awaitEstablished() {
        Event e = await(0);
        if (e.kind() != Kind.ESTABLISHED) {
            fail(name + ": expected ESTABLISHED first, got " + e);
        }
        return e;
    }

    /**
     * Waits for the terminal event (the first one that is terminal).
     *
     * @return the event
     */
    public Event awaitTerminal() {
        for (int i = 0;; i++) {
            Event e = await(i);
            if (e.kind().isTerminal()) {
                return e;
            }
        }
    }

    /**
     * The events so far.
     *
     * @return a copy
     */
    public synchronized List<Event> events() {
        return new ArrayList<>(events);
    }

    /**
     * The kinds of the events so far.
     *
     * @return a copy
     */
    public synchronized List<Kind> kinds() {
        List<Kind> k = new ArrayList<>();
        for (Event e : events) {
            k.add(e.kind());
        }
        return k;
    }

    /**
     * Broken guarantees seen so far.
     *
     * @return readable descriptions; empty when all is well
     */
    public synchronized List<String> violations() {
        return new ArrayList<>(violations);
    }

    @Override
    public String toString() {
        return "EventRecorder[" + name + ": " + events() + "]";
    }
}
