package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;

/**
 * Registration and direct placement: MS-SMBD 3.1.4.3 - 3.1.4.6, examples 4.4 and 4.5.
 */
class RdmaTest {
    private static final HexFormat HEX = HexFormat.of();
    private static final int MIB = 1 << 20;

    private Fixture fx;
    private final Recorder upper = new Recorder();

    @BeforeEach
    void setUp() {
        fx = new Fixture();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    private static ByteBuffer direct(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return ByteBuffer.allocateDirect(n).put(b).flip();
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** How the upper layer registers a buffer, for {@link #answerWithDescriptor}. */
    private interface Registering {
        RegisteredBuffer register(SmbDirectConnection c) throws SmbDirectException;
    }

    /**
     * The upper layer's answer to a message: it registers a buffer into {@code reg[0]} and sends a
     * request of {@code size} bytes that starts with the registration's first descriptor.
     */
    private static java.util.function.BiConsumer<SmbDirectConnection, byte[]> answerWithDescriptor(
            RegisteredBuffer[] reg, Registering registering, int size) {
        return (c, m) -> {
            try {
                reg[0] = registering.register(c);
                ByteBuffer request = ByteBuffer.allocate(size);
                reg[0].encodeDescriptors().get(0, request.array(), 0, 16);
                c.send(request);
            } catch (SmbDirectException ex) {
                throw new IllegalStateException(ex);
            }
        };
    }

    /** An engine connection to a raw peer, after the 4.1 exchange (the peer's first message consumed). */
    private Established afterExample41(RdmaProvider engineSide, RdmaProvider peerSide) throws Exception {
        Established e = Established.passive(fx, fx.transport(NegotiationTest.EXAMPLE_41, engineSide), engineSide,
                peerSide, upper, RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
        return e;
    }

    /**
     * Example 4.4: the engine registers 1 MiB for RDMA Read (3.1.4.3), sends a 500-byte upper-layer
     * write request carrying the descriptor, the peer RDMA-reads the data, answers, and the engine
     * deregisters (3.1.4.4), after which the peer can no longer read.
     */
    @Test
    void example44_oneMiBByRdmaRead() throws Exception {
        RdmaProvider engineSide = fx.provider();
        RdmaProvider peerSide = fx.provider();
        ByteBuffer data = direct(MIB, 44);
        RegisteredBuffer[] reg = new RegisteredBuffer[1];
        upper.onMessage = answerWithDescriptor(reg, c -> c.register(data, RemoteAccess.READ), 500);
        try (Established e = afterExample41(engineSide, peerSide)) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[64]));
            byte[] write = e.peer.receive();
            assertEquals("0a00" + "0100" + "0000" + "0000" + "00000000" + "18000000" + "f4010000" + "00000000",
                    HEX.formatHex(Arrays.copyOf(write, 24)));
            BufferDescriptorV1 d = BufferDescriptorV1.decode(ByteBuffer.wrap(write, 24, 16));
            assertEquals(0x00100000, d.length());
            assertEquals(reg[0].descriptors().get(0), d);
            ByteBuffer into = ByteBuffer.allocateDirect(MIB);
            MemoryRegion local = e.peer.register(into, Access.LOCAL_WRITE);
            assertEquals(RdmaStatus.SUCCESS, e.peer.read(local, d.offset(), d.token(), MIB));
            assertArrayEquals(bytes(data), bytes(into));
            upper.onMessage = null;
            e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, new byte[100]));
            upper.message();
            reg[0].deregister();
            assertFalse(reg[0].isRegistered());
            assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, e.peer.read(local, d.offset(), d.token(), 16));
        }
    }

    /**
     * Example 4.5: the engine registers 1 MiB for RDMA Write, sends a 500-byte read request with
     * the descriptor; the peer RDMA-writes the data and answers; the engine finds the data placed.
     */
    @Test
    void example45_oneMiBByRdmaWrite() throws Exception {
        RdmaProvider engineSide = fx.provider();
        RdmaProvider peerSide = fx.provider();
        ByteBuffer target = ByteBuffer.allocateDirect(MIB);
        RegisteredBuffer[] reg = new RegisteredBuffer[1];
        upper.onMessage = answerWithDescriptor(reg, c -> c.register(target, RemoteAccess.WRITE), 500);
        try (Established e = afterExample41(engineSide, peerSide)) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[64]));
            byte[] read = e.peer.receive();
            assertEquals(524, read.length);
            BufferDescriptorV1 d = BufferDescriptorV1.decode(ByteBuffer.wrap(read, 24, 16));
            assertEquals(MIB, d.length());
            ByteBuffer data = direct(MIB, 45);
            MemoryRegion local = e.peer.register(data, 0);
            assertEquals(RdmaStatus.SUCCESS, e.peer.write(local, d.offset(), d.token(), MIB));
            upper.onMessage = null;
            e.peer.send(RawPeer.dataTransfer(10, 1, 0, 0, new byte[100]));
            upper.message();
            assertArrayEquals(bytes(data), bytes(target));
            reg[0].close();
            assertEquals(0, e.connection.statistics().registrationsLive());
        }
    }

    /**
     * 3.1.4.3 with the registration handed to the provider's device together with the next
     * request (an SMB2 READ through the RDMA channel): the descriptors travel in the message sent
     * next, the peer writes through them, and the registration ends as any other.
     */
    @Test
    void registerForNextSend_descriptorsInTheNextMessage_peerWritesThrough() throws Exception {
        RdmaProvider engineSide = fx.provider();
        RdmaProvider peerSide = fx.provider();
        ByteBuffer target = ByteBuffer.allocateDirect(64 * 1024);
        RegisteredBuffer[] reg = new RegisteredBuffer[1];
        upper.onMessage = answerWithDescriptor(reg, c -> c.registerForNextSend(target, RemoteAccess.WRITE), 100);
        try (Established e = afterExample41(engineSide, peerSide)) {
            e.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[64]));
            byte[] read = e.peer.receive();
            BufferDescriptorV1 d = BufferDescriptorV1.decode(ByteBuffer.wrap(read, 24, 16));
            assertEquals(64 * 1024, d.length());
            ByteBuffer data = direct(64 * 1024, 46);
            MemoryRegion local = e.peer.register(data, 0);
            assertEquals(RdmaStatus.SUCCESS, e.peer.write(local, d.offset(), d.token(), 64 * 1024));
            assertArrayEquals(bytes(data), bytes(target));
            reg[0].deregister();
            assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, e.peer.write(local, d.offset(), d.token(), 16));
            assertEquals(0, e.connection.statistics().registrationsLive());
        }
    }

    /**
     * The other side of registerForNextSend's contract: descriptors that reach the peer before the
     * connection posts anything (here: by hand) are not usable yet, on the simulated fabric as on
     * a verbs device whose window bind waits for the next post.
     */
    @Test
    void registerForNextSend_descriptorsPassedAnotherWay_peerRefused() throws Exception {
        RdmaProvider engineSide = fx.provider();
        RdmaProvider peerSide = fx.provider();
        try (Established e = afterExample41(engineSide, peerSide)) {
            RegisteredBuffer reg = e.connection.registerForNextSend(ByteBuffer.allocateDirect(4096), RemoteAccess.WRITE);
            BufferDescriptorV1 d = reg.descriptors().get(0);
            MemoryRegion local = e.peer.register(direct(4096, 3), 0);
            assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, e.peer.write(local, d.offset(), d.token(), 4096));
        }
    }

    /** 3.1.4.3: the registration grants only the access asked for. */
    @Test
    void register_forRead_peerCannotWrite() throws Exception {
        RdmaProvider engineSide = fx.provider();
        RdmaProvider peerSide = fx.provider();
        try (Established e = afterExample41(engineSide, peerSide)) {
            RegisteredBuffer reg = e.connection.register(direct(4096, 1), RemoteAccess.READ);
            BufferDescriptorV1 d = reg.descriptors().get(0);
            MemoryRegion local = e.peer.register(direct(4096, 2), 0);
            assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, e.peer.write(local, d.offset(), d.token(), 4096));
        }
    }

    /** 3.1.4.3: a buffer above the provider's region limit takes several registrations, described in order. */
    @Test
    void register_aboveRegionLimit_givesSeveralDescriptorsInOrder() throws Exception {
        RdmaProvider server = fx.provider(Map.of("maxRegionSize", 65536L));
        RdmaProvider client = fx.provider(Map.of("maxRegionSize", 65536L));
        SmbDirectTransport st = fx.transport(SmbDirectConfig.defaults(), server);
        SmbDirectTransport ct = fx.transport(SmbDirectConfig.defaults(), client);
        Recorder serverUpper = new Recorder();
        SmbDirectListener l = st.listen(fx.anyAddress(server), serverUpper);
        SmbDirectConnection c = ct.connect(l.localAddress(), upper, Fixture.TIMEOUT);
        SmbDirectConnection s = serverUpper.connection();
        ByteBuffer source = direct(200 * 1024, 3);
        RegisteredBuffer reg = c.register(source, RemoteAccess.READ_WRITE);
        List<BufferDescriptorV1> ds = reg.descriptors();
        assertEquals(4, ds.size());
        assertEquals(List.of(65536L, 65536L, 65536L, 8192L), ds.stream().map(BufferDescriptorV1::unsignedLength).toList());
        assertEquals(200 * 1024, reg.length());

        // 3.1.4.6: read 100 KiB starting 50 KiB in: the first element's trailing part, a whole
        // element, and the last element's leading part.
        ByteBuffer into = ByteBuffer.allocateDirect(100 * 1024);
        Fixture.get(s.rdmaRead(into, ds, 50 * 1024).toCompletableFuture());
        assertArrayEquals(Arrays.copyOfRange(bytes(source), 50 * 1024, 150 * 1024), bytes(into));

        // 3.1.4.5: write 70 KiB starting 130 KiB in.
        ByteBuffer patch = direct(70 * 1024, 4);
        Fixture.get(s.rdmaWrite(patch, ds, 130 * 1024).toCompletableFuture());
        assertArrayEquals(bytes(patch), Arrays.copyOfRange(bytes(source), 130 * 1024, 200 * 1024));
        assertEquals(100 * 1024 + 70 * 1024, s.statistics().rdmaReadBytes() + s.statistics().rdmaWriteBytes());
        assertTrue(s.statistics().rdmaReads() >= 3 && s.statistics().rdmaWrites() >= 2);

        // 3.1.4.4 by descriptors.
        c.deregister(ds);
        assertFalse(reg.isRegistered());
        assertEquals(0, c.statistics().registrationsLive());
    }

    /** Misuse of 3.1.4.5/3.1.4.6 and 3.1.4.3 is refused at once and the connection stays usable. */
    @Test
    void rdmaAndRegister_misuse_isRefusedAndConnectionStaysUsable() throws Exception {
        RdmaProvider server = fx.provider();
        RdmaProvider client = fx.provider();
        SmbDirectTransport st = fx.transport(SmbDirectConfig.builder().maxReadWriteSize(65536).build(), server);
        SmbDirectTransport ct = fx.transport(SmbDirectConfig.defaults(), client);
        Recorder serverUpper = new Recorder();
        SmbDirectListener l = st.listen(fx.anyAddress(server), serverUpper);
        SmbDirectConnection c = ct.connect(l.localAddress(), upper, Fixture.TIMEOUT);
        SmbDirectConnection s = serverUpper.connection();
        List<BufferDescriptorV1> ds = c.register(direct(8192, 5), RemoteAccess.READ).descriptors();

        assertThrows(IllegalArgumentException.class, () -> s.rdmaRead(ByteBuffer.allocateDirect(4096), ds, 4097));
        assertThrows(IllegalArgumentException.class, () -> s.rdmaRead(ByteBuffer.allocate(16), ds, 0));
        assertThrows(IllegalArgumentException.class,
                () -> s.rdmaRead(ByteBuffer.allocateDirect(16).asReadOnlyBuffer(), ds, 0));
        assertThrows(IllegalArgumentException.class, () -> s.rdmaRead(ByteBuffer.allocateDirect(16), ds, -1));
        assertThrows(IllegalArgumentException.class,
                () -> s.rdmaWrite(ByteBuffer.allocateDirect(65537), List.of(new BufferDescriptorV1(0, 1, 70000)), 0));
        assertThrows(IllegalArgumentException.class, () -> c.register(ByteBuffer.allocate(16), RemoteAccess.READ));
        assertThrows(IllegalArgumentException.class, () -> c.register(ByteBuffer.allocateDirect(0), RemoteAccess.READ));
        assertThrows(IllegalArgumentException.class,
                () -> c.register(ByteBuffer.allocateDirect(16).asReadOnlyBuffer(), RemoteAccess.WRITE));
        assertThrows(IllegalArgumentException.class, () -> c.deregister(List.of(new BufferDescriptorV1(1, 2, 3))));

        ByteBuffer into = ByteBuffer.allocateDirect(8192);
        Fixture.get(s.rdmaRead(into, ds, 0).toCompletableFuture());
        assertTrue(s.isOpen() && c.isOpen());
    }

    /** A peer whose provider cannot RDMA Read: the operation is refused with a clear error. */
    @Test
    void rdmaRead_providerWithoutRdmaRead_fails() throws Exception {
        RdmaProvider server = fx.provider(Map.of("rdmaRead", false));
        RdmaProvider client = fx.provider(Map.of("rdmaRead", false));
        SmbDirectTransport st = fx.transport(SmbDirectConfig.defaults(), server);
        SmbDirectTransport ct = fx.transport(SmbDirectConfig.defaults(), client);
        Recorder serverUpper = new Recorder();
        SmbDirectListener l = st.listen(fx.anyAddress(server), serverUpper);
        SmbDirectConnection c = ct.connect(l.localAddress(), upper, Fixture.TIMEOUT);
        SmbDirectConnection s = serverUpper.connection();
        assertThrows(SmbDirectException.class, () -> c.register(direct(64, 6), RemoteAccess.READ));
        List<BufferDescriptorV1> ds = c.register(direct(64, 6), RemoteAccess.WRITE).descriptors();
        CompletableFuture<Void> f = s.rdmaRead(ByteBuffer.allocateDirect(64), ds, 0).toCompletableFuture();
        ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(f));
        assertTrue(e.getCause().getMessage().contains("cannot RDMA Read"), e.getCause().getMessage());
        Fixture.get(s.rdmaWrite(direct(64, 7), ds, 0).toCompletableFuture());
        assertTrue(s.isOpen());
    }
}
