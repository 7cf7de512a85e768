package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;

/**
 * Tokens and remote offsets are unguessable: the stated entropy, and draws whose bits behave as
 * uniform ones (each bit set in 45..55 % of 4096 draws: more than six standard deviations of room,
 * so a false failure has a probability below 1e-8).
 */
class TokenEntropyTest {
    private static final int DRAWS = 4096;

    @Test
    void statedEntropy() {
        assertEquals(32, RegionTable.TOKEN_ENTROPY_BITS);
        assertEquals(50, RegionTable.REMOTE_OFFSET_ENTROPY_BITS);
    }

    @Test
    void tokens_nonZero_distinctAmongLiveRegions_bitsUniform() throws Exception {
        try (SimProvider p = SimProvider.open(SimSettings.fromMap(Map.of("fabric", "entropy")))) {
            CompletionQueue q = p.createCompletionQueue(4, x -> { });
            Endpoint e = p.createEndpoint(EndpointOptions.builder(q, q).build(), new NoEvents());
            ByteBuffer b = ByteBuffer.allocateDirect(64);
            Set<Integer> tokens = new HashSet<>();
            Set<Long> offsets = new HashSet<>();
            int[] tokenBits = new int[32];
            int[] offsetBits = new int[64];
            for (int i = 0; i < DRAWS; i++) {
                MemoryRegion r = e.register(b, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
                assertNotEquals(0, r.token());
                assertTrue(tokens.add(r.token()), "a live token was handed out twice");
                long off = r.remoteOffset();
                assertEquals(0, off & 0xFFF, "remote offsets are page aligned");
                assertTrue(off >= 0 && off < 1L << 62, "remote offsets stay below 2^62");
                offsets.add(off);
                for (int bit = 0; bit < 32; bit++) {
                    tokenBits[bit] += r.token() >>> bit & 1;
                }
                for (int bit = 0; bit < 64; bit++) {
                    offsetBits[bit] += (int) (off >>> bit & 1);
                }
            }
            assertEquals(DRAWS, offsets.size(), "remote offsets differ");
            for (int bit = 0; bit < 32; bit++) {
                assertUniform("token bit " + bit, tokenBits[bit]);
            }
            for (int bit = 12; bit < 62; bit++) {
                assertUniform("remote offset bit " + bit, offsetBits[bit]);
            }
            e.close();
            q.close();
        }
    }

    private static void assertUniform(String what, int ones) {
        double f = ones / (double) DRAWS;
        assertTrue(f > 0.45 && f < 0.55, what + " is set in " + f + " of draws");
    }
}
