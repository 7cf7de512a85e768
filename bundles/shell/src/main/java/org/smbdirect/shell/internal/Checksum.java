package org.smbdirect.shell.internal;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/** CRC-32C over a stream of buffers, and the generated payloads whose checksum is compared. */
final class Checksum {
    private final CRC32C crc = new CRC32C();
    private long bytes;

    synchronized void update(ByteBuffer data) {
        bytes += data.remaining();
        crc.update(data.duplicate());
    }

    synchronized long value() {
        return crc.getValue();
    }

    synchronized long bytes() {
        return bytes;
    }

    static String hex(long crc) {
        return String.format("%08x", crc);
    }

    static long of(ByteBuffer data) {
        CRC32C c = new CRC32C();
        c.update(data.duplicate());
        return c.getValue();
    }

    /** Fills the buffer (position to limit) with a reproducible pseudo-random pattern. */
    static void fill(ByteBuffer b, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        ByteBuffer d = b.duplicate();
        while (d.remaining() >= 8) {
            d.putLong(r.nextLong());
        }
        while (d.hasRemaining()) {
            d.put((byte) r.nextInt());
        }
    }
}
