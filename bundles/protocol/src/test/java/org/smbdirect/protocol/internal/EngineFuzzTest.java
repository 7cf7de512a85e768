package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.sim.internal.SimDiagnostics;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;

import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes the engine's receive path through the sim provider: a raw peer sends fuzzed messages at
 * the engine in each role (listener: Negotiate Request; initiator: Negotiate Response) and state
 * (negotiating, or established after a valid negotiation: Data Transfer messages). Properties, for
 * every input: nothing the peer sends makes the engine fail internally (the connection ends, if it
 * ends, for a protocol reason or the peer's disconnect, never {@code LOCAL_RESOURCES}); a bystander
 * connection on the same engine keeps working; when the peer goes away the engine releases the
 * connection and its registrations.
 *
 * <p>Input layout: byte 0 chooses the state (even: fuzz the negotiation message, odd: negotiate
 * validly and fuzz what follows); then messages, each a length byte followed by that many bytes
 * (a length of 255 means "the rest of the input").
 */
class EngineFuzzTest {
    private static final Set<TerminationReason> INTERNAL = EnumSet.of(TerminationReason.LOCAL_RESOURCES);
    private static final AtomicLong EXECUTIONS = new AtomicLong();
    private static Harness harness;

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println(
                "EngineFuzzTest: " + EXECUTIONS.get() + " executions")));
    }

    /** One engine, a bystander connection and the peer side, shared by every input. */
    private static final class Harness {
        final Fixture fx = new Fixture();
        final RdmaProvider engineSide;
        final RdmaProvider peerSide;
        final SmbDirectTransport engine;
        final SmbDirectListener listener;
        /** Keeps nothing: the fuzzer runs millions of inputs. */
        final ConnectionHandler discard = (c, m, t) -> { };
        final Established bystander;
        final RawPeer.Acceptor acceptor;
        /** Live sim endpoints and regions on each side with only the bystander and listeners. */
        final int[] baseline;

        Harness() throws Exception {
            engineSide = fx.provider();
            peerSide = fx.provider();
            // ALWAYS: the section 6 header is read on the simulated RoCE fabric too, so the fuzzer reaches it.
            engine = fx.transport(SmbDirectConfig.builder().receiveCreditMax(16)
                    .irdOrdHeader(org.smbdirect.transport.IrdOrdHeaderPolicy.ALWAYS).build(), engineSide);
            bystander = Established.passive(fx, engine, engineSide, peerSide, new Recorder(),
                    RawPeer.negotiateRequest(0x0100, 0x0100, 16, 1024, 1024, 131072));
            listener = engine.listen(fx.anyAddress(engineSide), c -> discard);
            acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 16, null);
            baseline = simResources();
        }

        int[] simResources() {
            return new int[] {SimDiagnostics.endpoints(engineSide), SimDiagnostics.regions(engineSide),
                SimDiagnostics.endpoints(peerSide), SimDiagnostics.regions(peerSide)};
        }
    }

    private static synchronized Harness harness() throws Exception {
        if (harness == null) {
            harness = new Harness();
        }
        return harness;
    }

    @FuzzTest(maxDuration = "40s")
    void passiveEngine(byte[] input) throws Exception {
        runPassive(input);
    }

    @FuzzTest(maxDuration = "40s")
    void activeEngine(byte[] input) throws Exception {
        runActive(input);
    }

    /**
     * The passive-engine target, also for Jazzer's standalone runner.
     *
     * @param input the fuzzer's bytes
     * @throws Exception on a finding
     */
    public static void fuzzerTestOneInput(byte[] input) throws Exception {
        if (input.length > 0 && (input[0] & 2) != 0) {
            runActive(input);
        } else {
            runPassive(input);
        }
    }

    static void runPassive(byte[] input) throws Exception {
        Harness h = harness();
        EXECUTIONS.incrementAndGet();
        Cursor c = new Cursor(input);
        boolean established = (c.mode() & 1) != 0;
        byte[] privateData = c.privateData();
        org.smbdirect.protocol.wire.internal.IrdOrdHeader header =
                org.smbdirect.protocol.wire.internal.IrdOrdHeader.fromPrivateData(privateData);
        if (header != null && !header.isValid()) {
            // MS-SMBD 6.2: a zero IRD or ORD MUST reject the connection.
            long before = h.engine.statistics().terminations().getOrDefault(TerminationReason.IRD_ORD_ZERO, 0L);
            try {
                RawPeer.connect(h.peerSide, h.listener.localAddress(), privateData, 16).close();
                throw new AssertionError("a zero IRD/ORD header was accepted: " + header);
            } catch (AssertionError refused) {
                if (!String.valueOf(refused.getMessage()).contains("CONNECTION_REFUSED")) {
                    throw refused;
                }
            }
            Fixture.await(() -> h.engine.statistics().terminations()
                    .getOrDefault(TerminationReason.IRD_ORD_ZERO, 0L) > before ? Boolean.TRUE : null);
            check(h);
            return;
        }
        try (RawPeer peer = RawPeer.connect(h.peerSide, h.listener.localAddress(), privateData, 16)) {
            if (established) {
                peer.send(RawPeer.negotiateRequest(0x0100, 0x0100, 16, 1024, 1024, 131072));
                peer.receive();
            }
            sendAll(peer, c);
        }
        check(h);
    }

    static void runActive(byte[] input) throws Exception {
        Harness h = harness();
        EXECUTIONS.incrementAndGet();
        Cursor c = new Cursor(input);
        boolean established = (c.mode() & 1) != 0;
        CompletableFuture<SmbDirectConnection> f = h.engine.connect(h.acceptor.address(), h.discard)
                .toCompletableFuture();
        try (RawPeer peer = h.acceptor.next()) {
            peer.receive(); // the Negotiate Request
            if (established) {
                peer.send(RawPeer.negotiateResponse(0x0100, 16, 16, 0, 1048576, 1024, 1024, 131072));
                f.get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            }
            sendAll(peer, c);
        }
        f.handle((x, t) -> null).get(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        check(h);
    }

    private static void sendAll(RawPeer peer, Cursor c) throws Exception {
        byte[] m;
        while ((m = c.next()) != null && !peer.isEnded()) {
            try {
                peer.send(m);
            } catch (RdmaException e) {
                return; // the engine ended the connection
            }
        }
    }

    /** After the peer is gone: the engine released the connection, for a legitimate reason. */
    private static void check(Harness h) throws Exception {
        long deadline = System.nanoTime() + Fixture.TIMEOUT.toNanos();
        while (h.engine.connectionCount() > 1 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        if (h.engine.connectionCount() != 1) {
            StringBuilder why = new StringBuilder("only the bystander remains; found:");
            for (Connection c : h.engine.debugConnections()) {
                why.append(' ').append(c).append(' ').append(c.inspect(x -> x.lifecycle + "/" + x.model.role + "/"
                        + (x.endpoint == null ? null : x.endpoint.state())).get(5, TimeUnit.SECONDS));
            }
            throw new AssertionError(why.toString());
        }
        // Nothing held on either side of the fabric: a long campaign found the harness's refused
        // connects leaking a megabyte each until direct memory ran out.
        while (!Arrays.equals(h.baseline, h.simResources()) && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(Arrays.toString(h.baseline), Arrays.toString(h.simResources()),
                "sim endpoints and regions (engine side, then peer side) back to what the bystander holds");
        assertEquals(0, h.engine.internalErrors(), "the engine failed internally");
        for (TerminationReason r : INTERNAL) {
            assertFalse(h.engine.statistics().terminations().containsKey(r), "internal failure: " + r);
        }
        assertTrue(h.bystander.connection.isOpen(), "the bystander connection carries on");
        assertEquals(0, h.bystander.connection.statistics().registrationsLive());
    }

    /** Splits the input into the mode, private data, and messages. */
    private static final class Cursor {
        private final byte[] in;
        private int pos;

        Cursor(byte[] in) {
            this.in = in;
        }

        int mode() {
            return pos < in.length ? in[pos++] : 0;
        }

        /** Eight bytes of private data when the next byte's low bit is set (an IRD/ORD header). */
        byte[] privateData() {
            if (pos >= in.length || (in[pos++] & 1) == 0 || pos + 8 > in.length) {
                return null;
            }
            byte[] pd = Arrays.copyOfRange(in, pos, pos + 8);
            pos += 8;
            return pd;
        }

        byte[] next() {
            if (pos >= in.length) {
                return null;
            }
            int n = in[pos++] & 0xFF;
            if (n == 255 || pos + n > in.length) {
                n = in.length - pos;
            }
            byte[] m = Arrays.copyOfRange(in, pos, pos + n);
            pos += n;
            return m;
        }
    }
}
