package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.sim.internal.SimDiagnostics;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.HeldMessage;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;

/**
 * The upper layer's view: 3.1.4.7's parameters, a handle that outlives its engine, messages held
 * beyond their delivery, the writability signal, and gathering sends.
 */
class UpperLayerApiTest {
    private Fixture fx;
    private RdmaProvider serverSide;
    private RdmaProvider clientSide;
    private final Recorder upper = new Recorder();

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        serverSide = fx.provider();
        clientSide = fx.provider();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /** Two engines connected; the server's upper layer is {@code serverUpper}. */
    private SmbDirectConnection[] pair(SmbDirectConfig serverConfig, AcceptHandler serverUpper) throws Exception {
        SmbDirectTransport server = fx.transport(serverConfig, serverSide);
        SmbDirectTransport client = fx.transport(SmbDirectConfig.defaults(), clientSide);
        Recorder accepted = new Recorder();
        SmbDirectListener l = server.listen(fx.anyAddress(serverSide), c -> {
            accepted.accepted.add(c);
            return serverUpper.onConnection(c);
        });
        SmbDirectConnection c = client.connect(l.localAddress(), upper, Fixture.TIMEOUT);
        SmbDirectConnection s = accepted.connection();
        l.close();
        return new SmbDirectConnection[] {c, s};
    }

    /**
     * MS-SMBD 3.1.4.7 Query Connection Parameters: each side reads what was negotiated, in its own
     * terms, and still can once the connection has ended.
     */
    @Test
    void queryConnectionParameters_3_1_4_7_eachSideSeesTheNegotiatedValues() throws Exception {
        SmbDirectConnection[] p = pair(SmbDirectConfig.builder().maxSendSize(2048).maxReceiveSize(4096)
                .maxReadWriteSize(1 << 20).maxFragmentedRecvSize(1 << 18).build(), upper);
        ConnectionParameters client = p[0].parameters();
        ConnectionParameters server = p[1].parameters();
        assertTrue(client.initiator());
        assertFalse(server.initiator());
        assertEquals(0x0100, client.protocolVersion());
        assertEquals(0x0100, server.protocolVersion());
        // Each side's sends are bounded by what the other receives; its receives by what the other
        // prefers to send.
        assertEquals(1364, client.maxSendSize(), "the server receives 1364: the client's PreferredSendSize");
        assertEquals(2048, server.maxSendSize(), "the client receives up to 8192");
        assertEquals(2048, client.maxReceiveSize(), "the server's PreferredSendSize");
        assertEquals(1364, server.maxReceiveSize());
        assertEquals(1 << 18, client.maxFragmentedSendSize());
        assertEquals(1 << 20, client.maxReadWriteSize(), "the smaller of the two MaxReadWriteSizes");
        assertEquals(1 << 20, server.maxReadWriteSize());
        assertEquals(Duration.ofSeconds(120), client.keepaliveInterval());
        assertEquals("sim/" + clientSide.name(), client.provider());
        p[0].close();
        assertFalse(p[0].isOpen());
        assertEquals(client.maxSendSize(), p[0].parameters().maxSendSize(), "kept after the end");
    }

    /**
     * A closed connection releases its provider endpoint, its registered buffers and its engine at
     * once, even while the upper layer still holds the connection: what the handle keeps is why it
     * ended, its parameters and its last statistics.
     */
    @Test
    void closedConnection_releasesEverythingAtOnce_whileTheUpperLayerHoldsIt() throws Exception {
        int endpointsBefore = SimDiagnostics.endpoints(clientSide);
        int regionsBefore = SimDiagnostics.regions(clientSide);
        SmbDirectConnection[] p = pair(SmbDirectConfig.defaults(), upper);
        SmbDirectConnection held = p[0];
        held.send(ByteBuffer.wrap(new byte[] {1, 2, 3}));
        upper.message();
        WeakReference<Connection> engine = new WeakReference<>(Fixture.impl(held).engine());
        assertTrue(SimDiagnostics.regions(clientSide) > regionsBefore);
        held.close();
        assertNull(Fixture.impl(held).engine(), "the handle let go of the engine");
        assertEquals(endpointsBefore, SimDiagnostics.endpoints(clientSide), "the endpoint is gone");
        assertEquals(regionsBefore, SimDiagnostics.regions(clientSide), "every registered buffer is gone");
        assertEquals(TerminationReason.LOCAL_CLOSE, held.loss().orElseThrow().reason());
        assertEquals(1, held.statistics().messagesSent());
        assertInstanceOf(ConnectionLostException.class, assertThrows(ExecutionException.class,
                () -> held.send(ByteBuffer.wrap(new byte[1])).toCompletableFuture().get()).getCause());
        long deadline = System.nanoTime() + Fixture.TIMEOUT.toNanos();
        while (engine.get() != null && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(10);
        }
        assertNull(engine.get(), "nothing keeps the ended engine reachable while the handle is held");
        assertNotNull(held.parameters());
    }

    /**
     * An upper layer that holds messages slows its peer through the credits it stops granting
     * (3.1.5.9): no more than the receive buffers are delivered while everything is held; released,
     * the rest follows, in order, and nothing was lost.
     */
    @Test
    void heldMessages_throttleThePeer_andTheRestFlowsOnRelease() throws Exception {
        int max = 8;
        ConcurrentLinkedQueue<HeldMessage> held = new ConcurrentLinkedQueue<>();
        List<Byte> order = new ArrayList<>();
        boolean[] sameTwice = {true};
        ConnectionHandler holder = new ConnectionHandler() {
            @Override
            public void onMessage(SmbDirectConnection c, ByteBuffer m, OptionalInt t) {
                synchronized (order) {
                    order.add(m.get(m.position()));
                }
                HeldMessage h = c.holdMessage();
                sameTwice[0] &= c.holdMessage() == h;
                held.add(h);
            }
        };
        SmbDirectConnection[] p = pair(SmbDirectConfig.builder().receiveCreditMax(max).build(), c -> holder);
        List<CompletableFuture<Void>> sends = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            sends.add(p[0].send(ByteBuffer.wrap(new byte[] {(byte) i})).toCompletableFuture());
        }
        // Every receive buffer held, none posted, the client without a credit: nothing more can come.
        Fixture.await(() -> held.size() == max && p[1].statistics().receiveCredits() == 0
                && p[0].statistics().sendCredits() == 0 ? Boolean.TRUE : null);
        assertEquals(max, held.size(), "no more than ReceiveCreditMax messages while all are held");
        assertFalse(sends.get(39).toCompletableFuture().isDone());
        assertTrue(sameTwice[0], "holding twice in one delivery gives the same held message");
        assertThrows(IllegalStateException.class, () -> p[1].holdMessage(), "only inside onMessage");
        long deadline = System.nanoTime() + Fixture.TIMEOUT.toNanos();
        int released = 0;
        while (released < 40 && System.nanoTime() < deadline) {
            HeldMessage h = held.poll();
            if (h == null) {
                Thread.onSpinWait();
                continue;
            }
            h.release();
            released++;
        }
        assertEquals(40, released);
        CompletableFuture.allOf(sends.toArray(new CompletableFuture<?>[0])).get();
        for (int i = 0; i < 40; i++) {
            assertEquals((byte) i, order.get(i));
        }
        assertTrue(p[0].isOpen() && p[1].isOpen());
    }

    /**
     * The writability signal: with maxPendingSends messages waiting for credits, the connection is
     * not writable and says when it is again, instead of the caller retrying on an exception.
     */
    @Test
    void writable_signalsWhenThereIsRoomAgain() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.builder().maxPendingSends(4).build(), serverSide);
        try (Established e = Established.active(fx, t, clientSide, upper,
                RawPeer.negotiateResponse(0x0100, 10, 1, 0, 1048576, 1024, 1024, 131072))) {
            assertTrue(e.connection.isWritable());
            assertTrue(e.connection.writable().toCompletableFuture().isDone());
            for (int i = 0; i < 4; i++) {
                e.connection.send(ByteBuffer.wrap(new byte[] {(byte) i}));
            }
            assertFalse(e.connection.isWritable(), "four messages wait for credits");
            CompletableFuture<Void> room = e.connection.writable().toCompletableFuture();
            assertFalse(room.isDone());
            assertThrows(IllegalStateException.class, () -> e.connection.send(ByteBuffer.wrap(new byte[1])));
            e.peer.send(RawPeer.dataTransfer(10, 8, 0, 0, new byte[0])); // credits: the messages go
            Fixture.get(room);
            assertTrue(e.connection.isWritable());
            for (int i = 0; i < 4; i++) {
                assertEquals(i, e.peer.receive()[24], "in order");
            }
        }
    }

    /** A gathering send: the parts, in order, are one upper-layer message, fragmented as one. */
    @ParameterizedTest(name = "parts {0}")
    @CsvSource({"1;2;3", "1000;1000;1000", "1;65536;1;1339", "100000"})
    void sendGathering_partsArriveAsOneMessage(String sizes) throws Exception {
        SmbDirectConnection[] p = pair(SmbDirectConfig.defaults(), upper);
        String[] s = sizes.split(";");
        ByteBuffer[] parts = new ByteBuffer[s.length];
        ByteBuffer expected = ByteBuffer.allocate(java.util.Arrays.stream(s).mapToInt(Integer::parseInt).sum());
        byte v = 0;
        for (int i = 0; i < s.length; i++) {
            byte[] b = new byte[Integer.parseInt(s[i])];
            for (int j = 0; j < b.length; j++) {
                b[j] = v++;
            }
            expected.put(b);
            // a part with bytes before its position and after its limit, which are not sent
            ByteBuffer framed = ByteBuffer.allocate(b.length + 10).position(5);
            framed.put(b).flip().position(5);
            parts[i] = framed;
        }
        Fixture.get(p[1].sendGathering(parts).toCompletableFuture());
        assertArrayEquals(expected.array(), upper.message().data, "what the client received");
        assertEquals(5, parts[0].position(), "the parts' positions are not changed");
        assertThrows(IllegalArgumentException.class, () -> p[1].sendGathering(ByteBuffer.allocate(0)));
    }

    /** What reaches the raw peer of a gathering send: 3.1.5.4's fragments over the parts. */
    @Test
    void sendGathering_fragmentsAcrossPartBoundaries_3_1_5_4() throws Exception {
        SmbDirectTransport t = fx.transport(SmbDirectConfig.defaults(), serverSide);
        try (Established e = Established.active(fx, t, clientSide, upper,
                RawPeer.negotiateResponse(0x0100, 10, 10, 0, 1048576, 1024, 1024, 131072))) {
            byte[] a = new byte[700];
            byte[] b = new byte[700];
            java.util.Arrays.fill(a, (byte) 1);
            java.util.Arrays.fill(b, (byte) 2);
            e.connection.sendGathering(ByteBuffer.wrap(a), ByteBuffer.wrap(b));
            byte[] first = e.peer.receive();
            byte[] second = e.peer.receive();
            DataTransferHeader h1 = RawPeer.header(first);
            DataTransferHeader h2 = RawPeer.header(second);
            assertEquals(1000, h1.dataLength(), "MaxSendSize 1024 - 24");
            assertEquals(400, h1.remainingDataLength());
            assertEquals(400, h2.dataLength());
            assertEquals(0, h2.remainingDataLength());
            assertEquals(1, first[24 + 699]);
            assertEquals(2, first[24 + 700]);
            assertEquals(2, second[24 + 399]);
        }
    }
}
