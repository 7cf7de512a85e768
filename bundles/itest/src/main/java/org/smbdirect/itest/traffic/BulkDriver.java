package org.smbdirect.itest.traffic;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe.Counter;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * Bulk sends both ways on a session made through the {@code BulkTransfer} service: in turn one
 * that travels inline and one that moves by RDMA (with the default configuration: inline up to
 * 8192 bytes, RDMA Read beyond), at most {@link #WINDOW} at a time per side, each side checking
 * what it receives.
 */
final class BulkDriver extends Driver<BulkTransfer> {
    static final int WINDOW = 4;
    static final int INLINE_SIZE = 3000;
    static final int RDMA_SIZE = 100_000;
    private static final AtomicInteger STREAMS = new AtomicInteger(1 << 20);

    /** The current round's ends, for {@link #describe()}. */
    private volatile List<End> roundEnds = List.of();

    BulkDriver(BundleContext context, TrafficProbe probe) {
        super(context, probe, BulkTransfer.class, "bulk");
    }

    @Override
    String describe() {
        StringBuilder s = new StringBuilder(roundEnds.size() + " ends");
        for (End e : roundEnds) {
            s.append("\n  ").append(e.describe());
        }
        return s.toString();
    }

    /** One end of a session. */
    final class End implements BulkHandler, Stream {
        final String role;
        volatile BulkSession session;
        final CompletableFuture<ConnectionLoss> closed = new CompletableFuture<>();
        volatile boolean closedByUs;
        private volatile boolean closedByOthers;
        private final Payload.Inbound inbound = new Payload.Inbound();
        private final AtomicInteger closings = new AtomicInteger();
        private final int stream = STREAMS.incrementAndGet();
        private final Ledger sent = new Ledger();
        /** The other end of the session, once both are known. */
        volatile End peer;
        private int outstanding;
        private boolean sending;
        private boolean sendFailed;

        End(String role, BulkSession session) {
            this.role = role;
            this.session = session;
        }

        @Override
        public void onData(BulkSession s, ByteBuffer data) {
            int size = data.remaining();
            String bad = inbound.accept(data);
            if (bad != null) {
                probe.problem(this + " received a wrong send: " + bad, null);
                return;
            }
            probe.add(size == RDMA_SIZE ? Counter.BULK_RDMA_DELIVERED : Counter.BULK_INLINE_DELIVERED, 1);
            probe.add(Counter.BULK_BYTES, size);
        }

        @Override
        public void onClosed(BulkSession s, ConnectionLoss loss) {
            if (closings.incrementAndGet() > 1) {
                probe.problem(this + " was told twice that it closed: " + loss, null);
                return;
            }
            closedByOthers = !closedByUs && loss.reason() == TerminationReason.LOCAL_CLOSE;
            probe.add(Counter.BULK_ENDS_CLOSED, 1);
            closed.complete(loss);
            wake();
        }

        synchronized void startSending() {
            sending = true;
            for (int i = 0; i < WINDOW; i++) {
                sendNext();
            }
        }

        @Override
        public synchronized void stopSending() {
            sending = false;
        }

        @Override
        public synchronized int outstanding() {
            return outstanding;
        }

        @Override
        public void close() {
            closedByUs = true;
            session.closeAsync();
        }

        @Override
        public CompletableFuture<ConnectionLoss> ended() {
            return closed;
        }

        @Override
        public Stream peer() {
            return peer;
        }

        @Override
        public Ledger sent() {
            return sent;
        }

        @Override
        public int stream() {
            return stream;
        }

        @Override
        public Payload.Inbound inbound() {
            return inbound;
        }

        synchronized String describe() {
            BulkSession s = session;
            return this + ": " + sent + ", received " + inbound.delivered() + ", outstanding " + outstanding + ", sending " + sending
                    + ", send failed " + sendFailed + ", closed " + closed.getNow(null) + (s == null ? ""
                    : ", transfers in flight " + s.statistics().transfersInFlight() + ", "
                            + MessageDriver.statistics(s.connection()));
        }

        private void sendNext() {
            if (!sending || sendFailed) {
                return;
            }
            long seq = sent.next();
            ByteBuffer m = Payload.make(stream, seq, seq % 2 == 0 ? INLINE_SIZE : RDMA_SIZE, false);
            outstanding++;
            probe.add(Counter.BULK_ATTEMPTED, 1);
            try {
                session.send(m).whenComplete((v, t) -> done(seq, t));
            } catch (RuntimeException e) {
                outstanding--;
                sendFailed = true;
                sent.failed(seq);
                probe.problem(this + ": send threw", e);
            }
        }

        private void done(long seq, Throwable t) {
            if (t == null) {
                synchronized (this) {
                    outstanding--;
                    if (!sent.completed(seq)) {
                        probe.problem(this + ": bulk send " + seq + " completed twice", null);
                    }
                    probe.add(Counter.BULK_SENT, 1);
                    sendNext();
                }
                return;
            }
            synchronized (this) {
                outstanding--;
                sendFailed = true;
                if (!sent.failed(seq)) {
                    probe.problem(this + ": bulk send " + seq + " failed after it completed", null);
                }
            }
            Throwable cause = t instanceof java.util.concurrent.CompletionException && t.getCause() != null
                    ? t.getCause() : t;
            failed("bulk send", cause, ConnectionLostException.class);
            wake();
        }

        @Override
        public String toString() {
            BulkSession s = session;
            return "bulk " + role + " end " + (s == null ? "" : s.connection());
        }
    }

    @Override
    void round(ServiceReference<BulkTransfer> ref, BulkTransfer bulk) throws InterruptedException {
        List<End> ends = new CopyOnWriteArrayList<>();
        roundEnds = ends;
        BlockingQueue<End> accepted = new LinkedBlockingQueue<>();
        BulkListener listener;
        try {
            listener = bulk.listen(new InetSocketAddress(0), s -> {
                End e = new End("server", s);
                ends.add(e);
                probe.add(Counter.BULK_ENDS_OPENED, 1);
                accepted.add(e);
                return e;
            });
        } catch (SmbDirectException e) {
            failed("bulk listen", e, SmbDirectException.class);
            pause(20);
            return;
        } catch (RuntimeException e) {
            probe.problem("bulk listen threw", e);
            pause(20);
            return;
        }
        probe.driverBusy(1);
        try {
            carry(bulk, listener, ends, accepted);
        } finally {
            try {
                listener.close();
            } catch (RuntimeException e) {
                probe.problem("closing the bulk listener threw", e);
            }
            closeAndAccount(ends, Counter.BULK_LOST, false);
            staleCheck(ref, bulk, ends);
            probe.driverBusy(-1);
        }
    }

    private void carry(BulkTransfer bulk, BulkListener listener, List<End> ends, BlockingQueue<End> accepted)
            throws InterruptedException {
        InetSocketAddress at = listener.localAddress();
        if (at == null) {
            probe.expected("bulk listen: no provider under the listener");
            pause(20);
            return;
        }
        End client = new End("client", null);
        try {
            client.session = bulk.connect(at, client, Duration.ofMillis(TIMEOUT_MILLIS));
        } catch (SmbDirectException e) {
            failed("bulk connect", e, SmbDirectException.class);
            return;
        } catch (RuntimeException e) {
            probe.problem("bulk connect threw", e);
            return;
        }
        ends.add(client);
        probe.add(Counter.BULK_ENDS_OPENED, 1);
        End server = accepted.poll(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        if (server == null) {
            if (client.session.connection().isOpen()) {
                probe.problem("bulk session to " + at + " opened but the listener never got it", null);
            } else {
                probe.expected("bulk accept: the session ended before the listener got it");
            }
            return;
        }
        probe.add(Counter.GENERATIONS, 1);
        client.peer = server;
        server.peer = client;
        client.startSending();
        server.startSending();
        while (carryOn() && ends.stream().noneMatch(e -> e.closed.isDone())) {
            pause(50);
        }
    }

    /**
     * The bulk component closed the round's sessions (it was deactivated) and its service is gone:
     * the service object must now refuse, clearly, rather than open sessions nobody will close.
     */
    private void staleCheck(ServiceReference<BulkTransfer> ref, BulkTransfer bulk, List<End> ends) {
        if (ref.getBundle() != null || ends.stream().noneMatch(e -> e.closedByOthers)) {
            return;
        }
        probe.add(Counter.STALE_SERVICE_CALLS, 1);
        try {
            BulkListener l = bulk.listen(new InetSocketAddress(0), s -> null);
            l.close();
            probe.problem("BulkTransfer.listen succeeded on the service object of a deactivated component", null);
        } catch (SmbDirectException e) {
            probe.expected("stale BulkTransfer.listen: " + kind(e));
        } catch (RuntimeException e) {
            probe.problem("stale BulkTransfer.listen threw", e);
        }
    }
}
