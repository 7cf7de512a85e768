package org.smbdirect.rdma.verbs.device;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaStatus;

/** Records an endpoint's connection events, with the thread each arrived on. */
final class RecordingListener implements ConnectionListener {

    /** One event. */
    static final class Event {
        final String kind;
        final RdmaStatus status;
        final String reason;
        final Thread thread;

        Event(String kind, RdmaStatus status, String reason) {
            this.kind = kind;
            this.status = status;
            this.reason = reason;
            this.thread = Thread.currentThread();
        }

        @Override
        public String toString() {
            return kind + (status != null ? " " + status + " (" + reason + ")" : "");
        }
    }

    private final LinkedBlockingQueue<Event> queue = new LinkedBlockingQueue<>();
    final List<Event> all = new CopyOnWriteArrayList<>();

    @Override
    public void onEstablished(Endpoint endpoint) {
        add(new Event("ESTABLISHED", null, null));
    }

    @Override
    public void onDisconnected(Endpoint endpoint) {
        add(new Event("DISCONNECTED", null, null));
    }

    @Override
    public void onError(Endpoint endpoint, RdmaStatus status, String reason) {
        add(new Event("ERROR", status, reason));
    }

    private void add(Event e) {
        all.add(e);
        queue.add(e);
    }

    /** Waits for the next event. */
    Event next(long timeoutMillis) throws InterruptedException {
        Event e = queue.poll(timeoutMillis, TimeUnit.MILLISECONDS);
        if (e == null) {
            throw new AssertionError("no connection event within " + timeoutMillis + " ms; so far " + all);
        }
        return e;
    }

    /** Waits for the next event and checks its kind. */
    Event expect(String kind, long timeoutMillis) throws InterruptedException {
        Event e = next(timeoutMillis);
        if (!e.kind.equals(kind)) {
            throw new AssertionError("expected " + kind + " but got " + e + "; all events " + all);
        }
        return e;
    }

    /** Asserts that no further event arrives within the time given. */
    void expectNothing(long millis) throws InterruptedException {
        Event e = queue.poll(millis, TimeUnit.MILLISECONDS);
        if (e != null) {
            throw new AssertionError("unexpected event " + e + "; all events " + all);
        }
    }
}
