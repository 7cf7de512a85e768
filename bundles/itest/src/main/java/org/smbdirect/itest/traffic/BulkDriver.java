package org.smbdirect.itest.traffic;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

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
final class BulkDriver extends Driver<BulkTransfer, BulkListener, BulkDriver.End> {
    static final int WINDOW = 4;
    static final int INLINE_SIZE = 3000;
    static final int RDMA_SIZE = 100_000;
    private static final AtomicInteger STREAMS = new AtomicInteger(1 << 20);

    BulkDriver(BundleContext context, TrafficProbe probe) {
        super(context, probe, BulkTransfer.class, "bulk", "bulk ", Counter.BULK_ENDS_OPENED, Counter.BULK_LOST, false);
    }

    /** One end of a session. */
    final class End extends Driver<BulkTransfer, BulkListener, End>.Stream implements BulkHandler {
        volatile BulkSession session;
        volatile boolean closedByUs;
        private volatile boolean closedByOthers;
        private final AtomicInteger closings = new AtomicInteger();

        End(String role, BulkSession session) {
            super(role, STREAMS.incrementAndGet());
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
            ended.complete(loss);
            wake();
        }

        @Override
        int size(long seq) {
            return seq % 2 == 0 ? INLINE_SIZE : RDMA_SIZE;
        }

        @Override
        void post(long seq, ByteBuffer payload) {
            session.send(payload).whenComplete((v, t) -> {
                if (t == null) {
                    sendCompleted(seq);
                } else {
                    sendFailed(seq, "bulk send", t instanceof java.util.concurrent.CompletionException
                            && t.getCause() != null ? t.getCause() : t);
                }
            });
        }

        @Override
        void close() {
            closedByUs = true;
            session.closeAsync();
        }

        @Override
        String sendName(long seq) {
            return "bulk send " + seq;
        }

        @Override
        Counter attemptedCounter() {
            return Counter.BULK_ATTEMPTED;
        }

        @Override
        Counter sentCounter() {
            return Counter.BULK_SENT;
        }

        @Override
        String describe() {
            BulkSession s = session;
            return this + ": " + sendState() + ", closed " + ended.getNow(null) + (s == null ? ""
                    : ", transfers in flight " + s.statistics().transfersInFlight() + ", "
                            + MessageDriver.statistics(s.connection()));
        }

        @Override
        public String toString() {
            BulkSession s = session;
            return "bulk " + role + " end " + (s == null ? "" : s.connection());
        }
    }

    @Override
    BulkListener listen(BulkTransfer bulk, Consumer<End> accepted) throws SmbDirectException {
        return bulk.listen(new InetSocketAddress(0), s -> {
            End e = new End("server", s);
            accepted.accept(e);
            return e;
        });
    }

    @Override
    void carry(BulkTransfer bulk, BulkListener listener, List<End> ends, BlockingQueue<End> accepted)
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
        client.startSending(WINDOW);
        server.startSending(WINDOW);
        while (carryOn() && ends.stream().noneMatch(e -> e.ended.isDone())) {
            pause(50);
        }
    }

    /**
     * The bulk component closed the round's sessions (it was deactivated) and its service is gone:
     * the service object must now refuse, clearly, rather than open sessions nobody will close.
     */
    @Override
    void staleCheck(ServiceReference<BulkTransfer> ref, BulkTransfer bulk, List<End> ends) {
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
