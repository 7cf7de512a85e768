package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Random;

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

/**
 * RFC 5042 (MS-SMBD section 5): a peer may touch only memory registered for remote access on its
 * own connection, within the registered bounds and rights, until it is deregistered or
 * invalidated. An attacker connected to the same engine as a victim tries everything else; each
 * attempt fails, ends only the attacker's connection, and the victim's memory is unchanged, byte
 * for byte.
 */
class Rfc5042AttackTest {
    private static final int SIZE = 8192;

    private Fixture fx;
    private RdmaProvider engineSide;
    private RdmaProvider peerSide;
    private SmbDirectTransport engine;
    private Established victim;
    private RegisteredBuffer victimBuffer;
    private ByteBuffer victimMemory;
    private byte[] victimContent;

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        engineSide = fx.provider();
        peerSide = fx.provider();
        engine = fx.transport(SmbDirectConfig.defaults(), engineSide);
        victim = connect(new Recorder());
        victimContent = new byte[SIZE];
        new Random(1).nextBytes(victimContent);
        victimMemory = ByteBuffer.allocateDirect(SIZE).put(victimContent).flip();
        victimBuffer = victim.connection.register(victimMemory, RemoteAccess.READ_WRITE);
    }

    @AfterEach
    void tearDown() {
        victim.close();
        fx.close();
    }

    private Established connect(Recorder upper) throws Exception {
        return Established.passive(fx, engine, engineSide, peerSide, upper,
                RawPeer.negotiateRequest(0x0100, 0x0100, 10, 1024, 1024, 131072));
    }

    /** The victim's memory is untouched and its connection still carries messages. */
    private void assertVictimUnharmed() throws Exception {
        byte[] now = new byte[SIZE];
        victimMemory.duplicate().clear().get(now);
        assertArrayEquals(victimContent, now, "the victim's memory changed");
        assertTrue(victim.connection.isOpen(), "the victim's connection ended");
        assertTrue(victimBuffer.isRegistered());
        // The victim's legitimate peer can still read its buffer.
        BufferDescriptorV1 d = victimBuffer.descriptors().get(0);
        MemoryRegion into = victim.peer.register(ByteBuffer.allocateDirect(SIZE), Access.LOCAL_WRITE);
        assertEquals(RdmaStatus.SUCCESS, victim.peer.read(into, d.offset(), d.token(), SIZE));
    }

    private interface Attack {
        RdmaStatus run(Established attacker) throws Exception;
    }

    /** Runs an attack from a fresh attacker connection and checks the outcome. */
    private void attack(String what, Attack a) throws Exception {
        Recorder attackerUpper = new Recorder();
        try (Established attacker = connect(attackerUpper)) {
            RdmaStatus status = a.run(attacker);
            assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, status, what);
            attacker.peer.awaitEnded();
            attackerUpper.loss();
            assertTrue(!attacker.connection.isOpen(), what + ": the attacker's connection ends");
        }
        assertVictimUnharmed();
    }

    private static MemoryRegion scratch(Established attacker, int size) throws Exception {
        return attacker.peer.register(ByteBuffer.allocateDirect(size), Access.LOCAL_WRITE);
    }

    @Test
    void readWithAnotherConnectionsToken_fails() throws Exception {
        BufferDescriptorV1 d = victimBuffer.descriptors().get(0);
        attack("read another connection's buffer", x -> x.peer.read(scratch(x, SIZE), d.offset(), d.token(), SIZE));
    }

    @Test
    void writeWithAnotherConnectionsToken_fails() throws Exception {
        BufferDescriptorV1 d = victimBuffer.descriptors().get(0);
        attack("write another connection's buffer", x -> {
            MemoryRegion junk = x.peer.register(ByteBuffer.allocateDirect(SIZE), 0);
            return x.peer.write(junk, d.offset(), d.token(), SIZE);
        });
    }

    @Test
    void readUnregisteredMemory_fails() throws Exception {
        attack("read unregistered memory", x -> x.peer.read(scratch(x, 64), 0x10000L, 0x12345678, 64));
    }

    @Test
    void readBeyondRegionBounds_fails() throws Exception {
        attack("read beyond the bounds", x -> {
            BufferDescriptorV1 own = x.connection.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ)
                    .descriptors().get(0);
            return x.peer.read(scratch(x, 4097), own.offset(), own.token(), 4097);
        });
    }

    @Test
    void readBeforeRegionStart_fails() throws Exception {
        attack("read before the region", x -> {
            BufferDescriptorV1 own = x.connection.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ)
                    .descriptors().get(0);
            return x.peer.read(scratch(x, 16), own.offset() - 8, own.token(), 16);
        });
    }

    @Test
    void writeToReadOnlyRegion_fails() throws Exception {
        ByteBuffer own = ByteBuffer.allocateDirect(4096);
        attack("write without the right", x -> {
            BufferDescriptorV1 d = x.connection.register(own, RemoteAccess.READ).descriptors().get(0);
            MemoryRegion junk = x.peer.register(ByteBuffer.allocateDirect(4096).put(0, (byte) 1), 0);
            return x.peer.write(junk, d.offset(), d.token(), 4096);
        });
        assertEquals(0, own.get(0), "the read-only region was not written");
    }

    @Test
    void readWriteOnlyRegion_fails() throws Exception {
        attack("read without the right", x -> {
            BufferDescriptorV1 d = x.connection.register(ByteBuffer.allocateDirect(4096), RemoteAccess.WRITE)
                    .descriptors().get(0);
            return x.peer.read(scratch(x, 4096), d.offset(), d.token(), 4096);
        });
    }

    @Test
    void readAfterDeregistration_fails() throws Exception {
        attack("read after deregistration", x -> {
            RegisteredBuffer b = x.connection.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ);
            BufferDescriptorV1 d = b.descriptors().get(0);
            b.deregister();
            return x.peer.read(scratch(x, 4096), d.offset(), d.token(), 4096);
        });
    }

    @Test
    void readAfterRemoteInvalidation_fails() throws Exception {
        attack("read after remote invalidation", x -> {
            RegisteredBuffer b = x.connection.register(ByteBuffer.allocateDirect(4096), RemoteAccess.READ);
            BufferDescriptorV1 d = b.descriptors().get(0);
            x.peer.send(RawPeer.dataTransfer(10, 10, 0, 0, new byte[] {1}), true, d.token());
            Fixture.await(() -> b.isRegistered() ? null : Boolean.TRUE);
            return x.peer.read(scratch(x, 4096), d.offset(), d.token(), 4096);
        });
    }

    /**
     * Guessed tokens: many attempts, each from a new connection (a failed attempt ends the
     * attacker's connection). None reaches the victim's memory; the sim's tokens carry 32 random
     * bits and its remote offsets 50 more.
     */
    @Test
    void guessedTokens_allFail() throws Exception {
        SecureRandom guesses = new SecureRandom();
        BufferDescriptorV1 real = victimBuffer.descriptors().get(0);
        int attempts = 200;
        for (int i = 0; i < attempts; i++) {
            int token = guesses.nextInt();
            // half of the guesses know the victim's offset exactly, half guess it too
            long offset = i % 2 == 0 ? real.offset() : guesses.nextLong() & ~0xFFFL;
            Recorder attackerUpper = new Recorder();
            try (Established attacker = connect(attackerUpper)) {
                MemoryRegion into = scratch(attacker, 64);
                RdmaStatus s = attacker.peer.read(into, offset, token, 64);
                assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, s, "guess " + i);
                attacker.peer.awaitEnded();
            }
        }
        assertVictimUnharmed();
        System.out.printf("RFC 5042: %d guessed tokens failed; token entropy 32 bits (plus a 50-bit offset)%n", attempts);
    }
}
