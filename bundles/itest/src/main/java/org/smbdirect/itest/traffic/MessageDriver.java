package org.smbdirect.itest.traffic;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.itest.lifecycle.probe.TrafficProbe.Counter;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;
import org.smbdirect.transport.TransportStatistics;

/**
 * SMB Direct messages both ways on {@link #PAIRS} connections made through the {@code SmbDirect}
 * service, both ends on this transport: each end sends one stream of numbered messages (small,
 * and larger than MaxSendSize so that they travel in fragments), at most {@link #WINDOW} at a time,
 * and checks the stream it receives.
 */
final class MessageDriver extends Driver<SmbDirect, SmbDirectListener, MessageDriver.End> {
    static final int PAIRS = 2;
    static final int WINDOW = 8;
    /** Sizes in turn: one fragment, one fragment, 3 and 7 fragments of the default MaxSendSize. */
    static final int[] SIZES = {64, 1000, 3000, 9000};
    private static final AtomicInteger STREAMS = new AtomicInteger();

    MessageDriver(BundleContext context, TrafficProbe probe) {
        super(context, probe, SmbDirect.class, "messages", "", Counter.CONNECTION_ENDS_OPENED, Counter.MESSAGES_LOST, true);
    }

    /** One end of a connection: checks the peer's stream, sends its own. */
    final class End extends Driver<SmbDirect, SmbDirectListener, End>.Stream
            implements ConnectionHandler, CompletionHandler<Void, Long> {
        volatile SmbDirectConnection connection;
        private final AtomicInteger losses = new AtomicInteger();

        End(String role, SmbDirectConnection connection) {
            super(role, STREAMS.incrementAndGet());
            this.connection = connection;
        }

        @Override
        public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
            int size = message.remaining();
            String bad = inbound.accept(message);
            if (bad != null) {
                probe.problem(this + " received a wrong message: " + bad, null);
                return;
            }
            probe.add(Counter.MESSAGES_DELIVERED, 1);
            probe.add(Counter.MESSAGE_BYTES, size);
        }

        @Override
        public void onConnectionLost(SmbDirectConnection c, ConnectionLoss l) {
            if (losses.incrementAndGet() > 1) {
                probe.problem(this + " was told of its loss twice: " + l, null);
                return;
            }
            probe.add(Counter.CONNECTION_ENDS_LOST, 1);
            ended.complete(l);
            wake();
        }

        @Override
        int size(long seq) {
            return SIZES[(int) (seq % SIZES.length)];
        }

        @Override
        void post(long seq, ByteBuffer payload) {
            connection.send(payload, seq, this);
        }

        @Override
        void close() {
            connection.closeAsync();
        }

        @Override
        String sendName(long seq) {
            return "the send of message " + seq;
        }

        @Override
        Counter attemptedCounter() {
            return Counter.MESSAGES_ATTEMPTED;
        }

        @Override
        Counter sentCounter() {
            return Counter.MESSAGES_SENT;
        }

        @Override
        public void completed(Void v, Long seq) {
            sendCompleted(seq);
        }

        @Override
        public void failed(Throwable t, Long seq) {
            sendFailed(seq, "send", t);
        }

        @Override
        String describe() {
            SmbDirectConnection c = connection;
            return this + ": open " + (c != null && c.isOpen()) + ", " + sendState() + ", loss "
                    + ended.getNow(null) + (c == null ? "" : ", " + statistics(c));
        }

        @Override
        public String toString() {
            return role + " end " + connection;
        }
    }

    @Override
    SmbDirectListener listen(SmbDirect transport, Consumer<End> accepted) throws SmbDirectException {
        return transport.listen(new InetSocketAddress(0), c -> {
            End e = new End("passive", c);
            accepted.accept(e);
            return e;
        });
    }

    @Override
    void carry(SmbDirect transport, SmbDirectListener listener, List<End> ends, BlockingQueue<End> accepted)
            throws InterruptedException {
        InetSocketAddress at = listener.localAddress();
        if (at == null) {
            probe.expected("listen: no provider under the listener");
            pause(20);
            return;
        }
        for (int i = 0; i < PAIRS && carryOn(); i++) {
            End active = new End("active", null);
            try {
                active.connection = transport.connect(at, active, Duration.ofMillis(TIMEOUT_MILLIS));
            } catch (SmbDirectException e) {
                failed("connect", e, SmbDirectException.class);
                break;
            } catch (RuntimeException e) {
                probe.problem("connect threw", e);
                break;
            }
            ends.add(active);
            probe.add(Counter.CONNECTION_ENDS_OPENED, 1);
            End passive = accepted.poll(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            if (passive == null) {
                if (active.connection.isOpen()) {
                    probe.problem("connected to " + at + " but the listener's upper layer never got the connection", null);
                } else {
                    probe.expected("accept: the connection ended before the listener's upper layer got it");
                }
                break;
            }
            active.peer = passive;
            passive.peer = active;
            active.startSending(WINDOW);
            passive.startSending(WINDOW);
        }
        if (ends.isEmpty()) {
            pause(20); // nothing connected: the round is over, try again
            return;
        }
        probe.add(Counter.GENERATIONS, 1);
        while (carryOn() && ends.stream().noneMatch(e -> e.ended.isDone())) {
            pause(50);
        }
    }

    /**
     * The transport shut down under the round (its bundle stopped): the service object this round
     * used must now refuse, clearly, rather than make connections nobody will close.
     */
    @Override
    void staleCheck(ServiceReference<SmbDirect> ref, SmbDirect transport, List<End> ends) {
        boolean shutDown = ends.stream().map(e -> e.ended.getNow(null))
                .anyMatch(l -> l != null && l.reason() == TerminationReason.TRANSPORT_SHUTDOWN);
        if (!shutDown || ref.getBundle() != null) {
            return;
        }
        probe.add(Counter.STALE_SERVICE_CALLS, 1);
        try {
            SmbDirectListener l = transport.listen(new InetSocketAddress(0), c -> null);
            l.close();
            probe.problem("SmbDirect.listen succeeded on the service object of a transport that shut down", null);
        } catch (SmbDirectException e) {
            probe.expected("stale SmbDirect.listen: " + kind(e));
        } catch (RuntimeException e) {
            probe.problem("stale SmbDirect.listen threw", e);
        }
        CompletableFuture<SmbDirectConnection> f = transport.connect(new InetSocketAddress(
                InetAddress.getLoopbackAddress(), 445), new End("stale", null)).toCompletableFuture();
        if (!f.isCompletedExceptionally()) {
            f.thenAccept(SmbDirectConnection::close);
            probe.problem("SmbDirect.connect on the service object of a transport that shut down did not fail at once",
                    null);
        } else {
            f.exceptionally(t -> {
                failed("stale SmbDirect.connect", t, SmbDirectException.class);
                return null;
            });
        }
    }

    static String statistics(SmbDirectConnection c) {
        org.smbdirect.transport.ConnectionStatistics s = c.statistics();
        return "messages sent " + s.messagesSent() + " received " + s.messagesReceived() + ", fragments sent "
                + s.fragmentsSent() + " received " + s.fragmentsReceived() + ", send credits " + s.sendCredits()
                + ", receive credits " + s.receiveCredits() + ", credit stalls " + s.creditStalls()
                + ", credits granted " + s.creditsGranted() + " received " + s.creditsReceived();
    }

    /** While traffic is off: what the transport reports once everything is closed. */
    @Override
    void idle() throws InterruptedException {
        CompletableFuture<Map<String, Object>> request = probe.takeAuditRequest();
        if (request == null) {
            return;
        }
        Map<String, Object> report = new LinkedHashMap<>();
        ServiceReference<SmbDirect> ref = context.getServiceReference(SmbDirect.class);
        SmbDirect transport = ref == null ? null : context.getService(ref);
        if (transport == null) {
            report.put("service", "absent");
            request.complete(report);
            return;
        }
        try {
            long deadline = deadline();
            while (before(deadline) && !(transport.connections().isEmpty()
                    && transport.statistics().connectionsOpen() == 0
                    && transport.statistics().registrationsLive() == 0)) {
                pause(10);
            }
            TransportStatistics s = transport.statistics();
            report.put("provider", String.valueOf(transport.provider()));
            report.put("connections", transport.connections().size());
            report.put("connectionsOpen", s.connectionsOpen());
            report.put("registrationsLive", s.registrationsLive());
            report.put("connectionsEstablished", s.connectionsEstablished());
            report.put("connectionsFailed", s.connectionsFailed());
            report.put("terminated", s.terminations().values().stream().mapToLong(Long::longValue).sum());
            report.put("terminations", s.terminations().toString());
            report.put("messagesSent", s.messagesSent());
            report.put("messagesReceived", s.messagesReceived());
            request.complete(report);
        } catch (RuntimeException e) {
            request.completeExceptionally(e);
        } finally {
            context.ungetService(ref);
        }
    }
}
