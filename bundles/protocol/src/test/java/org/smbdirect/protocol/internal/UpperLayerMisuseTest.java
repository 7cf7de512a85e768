package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TerminationReason;

/**
 * Every misuse of the upper-layer API is refused at once with a clear exception, and the
 * connection is left as it was: after each one a message still goes through (or, for use after
 * close, every operation reports the loss).
 */
class UpperLayerMisuseTest {
    private Fixture fx;
    private SmbDirectTransport serverTransport;
    private SmbDirectTransport clientTransport;
    private SmbDirectListener listener;
    private SmbDirectConnection client;
    private SmbDirectConnection server;
    private final Recorder atServer = new Recorder();
    private final Recorder atClient = new Recorder();
    private int probes;

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        RdmaProvider a = fx.provider(Map.of("remoteInvalidate", false));
        RdmaProvider b = fx.provider(Map.of("remoteInvalidate", false));
        serverTransport = fx.transport(SmbDirectConfig.builder().maxReadWriteSize(65536).maxPendingSends(4).build(), a);
        clientTransport = fx.transport(SmbDirectConfig.defaults(), b);
        listener = serverTransport.listen(fx.anyAddress(a), atServer);
        client = clientTransport.connect(listener.localAddress(), atClient, Fixture.TIMEOUT);
        server = atServer.connection();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    /** The connection still works: a message from the client reaches the server intact. */
    private void stillWorks() throws Exception {
        byte[] probe = {(byte) ++probes, 42};
        Fixture.get(client.send(ByteBuffer.wrap(probe)).toCompletableFuture());
        assertArrayEquals(probe, atServer.message().data);
        assertTrue(client.isOpen() && server.isOpen());
    }

    private void refused(Class<? extends Throwable> type, String messagePart, Executable misuse) throws Exception {
        Throwable t = assertThrows(type, misuse);
        if (messagePart != null) {
            assertTrue(String.valueOf(t.getMessage()).contains(messagePart), t.getMessage());
        }
        stillWorks();
    }

    @Test
    void nullArguments_refusedAtTheCall() throws Exception {
        refused(NullPointerException.class, "remote", () -> clientTransport.connect(null, atClient));
        refused(NullPointerException.class, "handler", () -> clientTransport.connect(listener.localAddress(), null));
        refused(NullPointerException.class, "local", () -> serverTransport.listen(null, atServer));
        refused(NullPointerException.class, null, () -> client.send((ByteBuffer) null));
    }

    @Test
    void messageTooLong_refused() throws Exception {
        refused(IllegalArgumentException.class, "MaxFragmentedSendSize",
                () -> client.send(ByteBuffer.allocate(client.parameters().maxFragmentedSendSize() + 1)));
    }

    @Test
    void tooManyPendingSends_refused() throws Exception {
        // The server allows 4 waiting sends. Its engine thread is held in its upper layer, so the
        // sends wait whatever credits it has.
        java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        atServer.onMessage = (c, m) -> {
            try {
                release.await();
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        };
        client.send(ByteBuffer.wrap(new byte[] {99}));
        atServer.message();
        for (int i = 0; i < 4; i++) {
            server.send(ByteBuffer.wrap(new byte[] {(byte) i}));
        }
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> server.send(ByteBuffer.wrap(new byte[1])));
        assertTrue(e.getMessage().contains("maxPendingSends 4"), e.getMessage());
        atServer.onMessage = null;
        release.countDown();
        for (int i = 0; i < 4; i++) {
            assertEquals(i, atClient.message().data[0]);
        }
        stillWorks();
    }

    @Test
    void registrationMisuse_refused() throws Exception {
        refused(IllegalArgumentException.class, "direct", () -> client.register(ByteBuffer.allocate(64),
                RemoteAccess.READ));
        refused(IllegalArgumentException.class, "no bytes", () -> client.register(ByteBuffer.allocateDirect(0),
                RemoteAccess.READ));
        refused(IllegalArgumentException.class, "read-only", () -> client.register(
                ByteBuffer.allocateDirect(64).asReadOnlyBuffer(), RemoteAccess.WRITE));
        refused(IllegalArgumentException.class, "not registered", () -> client.deregister(
                List.of(new BufferDescriptorV1(1, 2, 3))));
        RegisteredBuffer reg = client.register(ByteBuffer.allocateDirect(64), RemoteAccess.READ);
        reg.deregister();
        reg.deregister(); // idempotent
        reg.close();
        assertEquals(0, client.statistics().registrationsLive());
        stillWorks();
    }

    @Test
    void rdmaMisuse_refused() throws Exception {
        List<BufferDescriptorV1> d = client.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ_WRITE)
                .descriptors();
        refused(IllegalArgumentException.class, "beyond", () -> server.rdmaRead(ByteBuffer.allocateDirect(16), d, 4090));
        refused(IllegalArgumentException.class, "negative", () -> server.rdmaRead(ByteBuffer.allocateDirect(16), d, -1));
        refused(IllegalArgumentException.class, "direct", () -> server.rdmaRead(ByteBuffer.allocate(16), d, 0));
        refused(IllegalArgumentException.class, "writable", () -> server.rdmaRead(
                ByteBuffer.allocateDirect(16).asReadOnlyBuffer(), d, 0));
        refused(IllegalArgumentException.class, "MaxReadWriteSize", () -> server.rdmaWrite(
                ByteBuffer.allocateDirect(65537), List.of(new BufferDescriptorV1(0, 1, 70000)), 0));
        Fixture.get(server.rdmaRead(ByteBuffer.allocateDirect(4096), d, 0).toCompletableFuture());
        stillWorks();
    }

    /** MS-SMBD 3.1.5.1: without remote invalidate in the provider the token MAY be ignored; it is, and the message goes. */
    @Test
    void sendAndInvalidate_withoutProviderSupport_sendsAndIgnoresTheToken() throws Exception {
        RegisteredBuffer reg = server.register(ByteBuffer.allocateDirect(64), RemoteAccess.WRITE);
        Fixture.get(client.sendAndInvalidate(ByteBuffer.wrap(new byte[] {7}), reg.descriptors().get(0).token())
                .toCompletableFuture());
        Recorder.Message m = atServer.message();
        assertArrayEquals(new byte[] {7}, m.data);
        assertEquals(OptionalInt.empty(), m.token);
        assertTrue(reg.isRegistered());
        stillWorks();
    }

    @Test
    void blockingCallsOnAnEngineThread_refused() throws Exception {
        CompletableFuture<Throwable> fromHandler = new CompletableFuture<>();
        atServer.onMessage = (c, m) -> {
            try {
                c.sendAndWait(ByteBuffer.wrap(new byte[1]), Duration.ofSeconds(1));
                fromHandler.complete(null);
            } catch (Throwable t) {
                fromHandler.complete(t);
            }
        };
        Fixture.get(client.send(ByteBuffer.wrap(new byte[] {1})).toCompletableFuture());
        assertInstanceOf(IllegalStateException.class, Fixture.get(fromHandler));
        atServer.message();
        atServer.onMessage = null;
        stillWorks();
    }

    /** Use after close: every operation reports the loss; close is idempotent. */
    @Test
    void useAfterClose_reportsTheLoss() throws Exception {
        client.close();
        client.close();
        assertEquals(TerminationReason.LOCAL_CLOSE, atClient.loss().reason());
        ExecutionException send = assertThrows(ExecutionException.class,
                () -> Fixture.get(client.send(ByteBuffer.wrap(new byte[1])).toCompletableFuture()));
        assertInstanceOf(ConnectionLostException.class, send.getCause());
        assertThrows(ConnectionLostException.class,
                () -> client.register(ByteBuffer.allocateDirect(16), RemoteAccess.READ));
        ExecutionException read = assertThrows(ExecutionException.class, () -> Fixture.get(client.rdmaRead(
                ByteBuffer.allocateDirect(16), List.of(new BufferDescriptorV1(0, 1, 16)), 0).toCompletableFuture()));
        assertInstanceOf(ConnectionLostException.class, read.getCause());
        assertThrows(SmbDirectException.class, () -> client.sendAndWait(ByteBuffer.wrap(new byte[1]), Duration.ofSeconds(1)));
        assertEquals(TerminationReason.LOCAL_CLOSE, client.loss().orElseThrow().reason());
    }

    /** Listening twice on one address is refused; the first listener keeps working. */
    @Test
    void listenOnAnAddressInUse_refused() throws Exception {
        InetSocketAddress taken = listener.localAddress();
        SmbDirectException e = assertThrows(SmbDirectException.class, () -> serverTransport.listen(taken, atServer));
        assertTrue(e.getMessage().contains("ADDRESS_IN_USE"), e.getMessage());
        SmbDirectConnection second = clientTransport.connect(taken, new Recorder(), Fixture.TIMEOUT);
        assertTrue(second.isOpen());
        atServer.connection();
        stillWorks();
    }
}
