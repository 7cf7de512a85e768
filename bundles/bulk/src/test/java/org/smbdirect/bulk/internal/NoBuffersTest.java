package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.smbdirect.bulk.NoBuffersException;
import org.smbdirect.bulk.internal.BulkFixture.Pair;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectException;

/**
 * The original's WSAENOBUFS: when memory cannot be registered or allocated, on either side, the
 * send fails with {@link NoBuffersException}, nothing stays registered, and the session goes on.
 * Registration failures are injected by the simulator ({@code faults.registrationFailureEvery}
 * counts every registration on the provider, the engine's own included, so the tests send one
 * large message at a time until one fails).
 */
class NoBuffersTest {
    private static final int EVERY = 7;
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    private static BulkFixture.Side side(boolean rdmaRead) {
        return BulkFixture.side().sim("rdmaRead", rdmaRead);
    }

    /** READ path: the sender cannot register its data for the peer to read. */
    @Test
    void sender_readPath_registrationFails() throws Exception {
        Pair p = fx.pair(side(true), side(true).sim("faults.registrationFailureEvery", EVERY));
        NoBuffersException e = sendUntilNoBuffers(p, 100_000);
        assertTrue(e.getMessage().contains("cannot register"), e.getMessage());
    }

    /** WRITE path: the sender cannot register its data as the source of its RDMA Writes. */
    @Test
    void sender_writePath_registrationFails_receiverReleasesItsTarget() throws Exception {
        Pair p = fx.pair(side(false), side(false).sim("faults.registrationFailureEvery", EVERY));
        NoBuffersException e = sendUntilNoBuffers(p, 100_000);
        assertTrue(e.getMessage().contains("cannot RDMA-write"), e.getMessage());
    }

    /** READ path: the receiver cannot register its buffer for one of the reads (3 per transfer here). */
    @Test
    void receiver_readPath_registrationFails() throws Exception {
        Pair p = fx.pair(side(true).sim("faults.registrationFailureEvery", EVERY), side(true));
        NoBuffersException e = sendUntilNoBuffers(p, 20 * BulkFixture.MIB);
        assertTrue(e.getMessage().contains("the peer could not allocate or register"), e.getMessage());
    }

    /** WRITE path: the receiver cannot register a buffer for the sender to write. */
    @Test
    void receiver_writePath_registrationFails() throws Exception {
        Pair p = fx.pair(side(false).sim("faults.registrationFailureEvery", EVERY), side(false));
        NoBuffersException e = sendUntilNoBuffers(p, 100_000);
        assertTrue(e.getMessage().contains("the peer could not allocate or register"), e.getMessage());
    }

    /** Either path: the receiver cannot allocate the memory for the send. */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void receiver_allocationFails(boolean rdmaRead) throws Exception {
        AtomicBoolean fail = new AtomicBoolean();
        Pair p = fx.pair(side(rdmaRead).allocator(failingWhen(fail)), side(rdmaRead));
        fail.set(true);
        Throwable t = BulkFixture.failure(p.client.send(BulkFixture.data(100_000, 1, true)));
        assertInstanceOf(NoBuffersException.class, t);
        fail.set(false);
        stillUsable(p, 1);
    }

    /** Either path: the sender cannot allocate direct memory to copy a heap buffer into. */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void sender_allocationFailsForAHeapBuffer(boolean rdmaRead) throws Exception {
        AtomicBoolean fail = new AtomicBoolean(true);
        Pair p = fx.pair(side(rdmaRead), side(rdmaRead).allocator(failingWhen(fail)));
        Throwable t = BulkFixture.failure(p.client.send(BulkFixture.data(100_000, 1, false)));
        assertInstanceOf(NoBuffersException.class, t);
        assertTrue(t.getMessage().contains("cannot allocate"), t.getMessage());
        // a direct buffer needs no copy
        BulkFixture.get(p.client.send(BulkFixture.data(100_000, 2, true)));
        assertEquals(BulkFixture.crc(BulkFixture.data(100_000, 2, true)), BulkFixture.crc(p.atServer.next()));
        fail.set(false);
        stillUsable(p, 1);
    }

    /**
     * Registrations of 1 KiB (the provider's limit) and control messages of at most 128 KiB (the
     * peer's MaxFragmentedSize): a 10 MiB buffer needs 10,240 descriptors, more than a control
     * message carries; the side that registered refuses (sender: READ, receiver: WRITE).
     */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void tooManyDescriptors(boolean rdmaRead) throws Exception {
        SmbDirectConfig small = SmbDirectConfig.builder().maxSendSize(1024).maxReceiveSize(1024)
                .maxFragmentedRecvSize(131072).build();
        BulkFixture.Side receiver = side(rdmaRead).smb(small).sim("maxRegionSize", 1024L);
        BulkFixture.Side sender = side(rdmaRead).smb(small).sim("maxRegionSize", 1024L);
        Pair p = fx.pair(receiver, sender);
        Throwable t = BulkFixture.failure(p.client.send(BulkFixture.data(10 * BulkFixture.MIB, 1, true)));
        assertInstanceOf(NoBuffersException.class, t);
        assertTrue(rdmaRead ? t.getMessage().contains("descriptors") : t.getMessage().contains("the peer could not"),
                t.getMessage());
        stillUsable(p, 1);
        // what fits goes
        BulkFixture.get(p.client.send(BulkFixture.data(BulkFixture.MIB, 3, true)));
        assertEquals(BulkFixture.crc(BulkFixture.data(BulkFixture.MIB, 3, true)), BulkFixture.crc(p.atServer.next()));
        p.assertNothingRegistered();
    }

    /**
     * Sends {@code size}-byte messages one at a time until one fails; checks it failed with
     * NoBuffersException, counted once, that the receiver got every other one in order, that
     * nothing stayed registered, and that the session still works.
     */
    private static NoBuffersException sendUntilNoBuffers(Pair p, int size) throws Exception {
        List<Integer> delivered = new ArrayList<>();
        NoBuffersException failure = null;
        for (int i = 0; i < 3 * EVERY && failure == null; i++) {
            try {
                p.client.sendAndWait(BulkFixture.data(size, i, i % 2 == 0), BulkFixture.TIMEOUT);
                delivered.add(i);
            } catch (SmbDirectException e) {
                failure = assertInstanceOf(NoBuffersException.class, e, "failed otherwise: " + e);
            }
        }
        assertNotNull(failure, "no registration failed");
        assertEquals(1, p.client.statistics().noBuffers());
        for (int i : delivered) {
            assertEquals(BulkFixture.crc(BulkFixture.data(size, i, false)), BulkFixture.crc(p.atServer.next()),
                    "send " + i);
        }
        stillUsable(p, 1);
        return failure;
    }

    /** The session still carries sends both ways; nothing is registered on either side. */
    private static void stillUsable(Pair p, long noBuffers) throws Exception {
        ByteBuffer after = BulkFixture.data(200_000, 99, true);
        p.client.sendAndWait(after, BulkFixture.TIMEOUT);
        assertEquals(BulkFixture.crc(after), BulkFixture.crc(p.atServer.next()));
        p.server.sendAndWait(ByteBuffer.wrap(new byte[] {1}), BulkFixture.TIMEOUT);
        assertEquals(1, p.atClient.next().get(0));
        assertTrue(p.client.connection().isOpen() && p.server.connection().isOpen());
        assertEquals(noBuffers, p.client.statistics().noBuffers());
        assertTrue(p.atServer.data.isEmpty(), "the failed send was not delivered");
        p.assertNothingRegistered();
    }

    private static Allocator failingWhen(AtomicBoolean fail) {
        return n -> {
            if (fail.get()) {
                throw new OutOfMemoryError("Cannot reserve " + n + " bytes of direct buffer memory (test)");
            }
            return ByteBuffer.allocateDirect(n);
        };
    }
}
