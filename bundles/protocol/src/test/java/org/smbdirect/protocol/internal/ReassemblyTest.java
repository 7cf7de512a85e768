package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Connection.FragmentReassemblyBuffer (MS-SMBD 3.1.5.8): fragments in, one message out. */
class ReassemblyTest {

    /** Columns: message length, fragment data length (the last one may be shorter). */
    @ParameterizedTest(name = "{0} bytes in fragments of {1}")
    @CsvSource({"1000, 1000", "1001, 1000", "65536, 1340", "131072, 8136", "5, 1", "0, 1000"})
    void fragments_reassembleInOrder(int total, int fragment) {
        byte[] message = new byte[total];
        for (int i = 0; i < total; i++) {
            message[i] = (byte) (i * 31 + 7);
        }
        Reassembly r = new Reassembly();
        ByteBuffer out = null;
        // the first fragment announces the rest (a zero-length first fragment may announce it all)
        int sent = 0;
        do {
            int n = Math.min(fragment, total - sent);
            ByteBuffer wire = ByteBuffer.allocate(8 + n);
            wire.put(8, message, sent, n);
            long remaining = total - sent - n;
            assertNull(out, "the message completes with its last fragment only");
            out = r.add(wire, 8, n, remaining);
            sent += n;
            assertEquals(remaining, r.remaining());
            assertEquals(remaining > 0, r.inProgress());
        } while (sent < total);
        byte[] got = new byte[out.remaining()];
        out.get(got);
        assertArrayEquals(message, got);
        assertFalse(r.inProgress());
    }

    /** The buffer is reused by the next sequence; one handed over to a holder is not; an idle one goes. */
    @ParameterizedTest(name = "hand over {0}")
    @CsvSource({"false", "true"})
    void buffer_reusedUnlessHandedOver_droppedWhenIdle(boolean handOver) {
        Reassembly r = new Reassembly();
        ByteBuffer first = r.add(ByteBuffer.allocate(100), 0, 50, 50);
        assertNull(first);
        ByteBuffer whole = r.add(ByteBuffer.wrap(filled(100, (byte) 1)), 0, 50, 0);
        byte[] kept = new byte[whole.remaining()];
        whole.duplicate().get(kept);
        if (handOver) {
            r.handOver();
        }
        r.add(ByteBuffer.wrap(filled(100, (byte) 2)), 0, 60, 10);
        byte[] after = new byte[whole.remaining()];
        whole.duplicate().get(after);
        assertEquals(handOver, Arrays.equals(kept, after), "a held message keeps its bytes");
        assertTrue(r.capacity() >= 70);
        r.releaseIfIdle();
        assertTrue(r.capacity() > 0, "kept while a sequence is in progress");
        r.add(ByteBuffer.allocate(10), 0, 10, 0);
        r.releaseIfIdle();
        assertEquals(0, r.capacity());
    }

    private static byte[] filled(int n, byte v) {
        byte[] b = new byte[n];
        Arrays.fill(b, v);
        return b;
    }
}
