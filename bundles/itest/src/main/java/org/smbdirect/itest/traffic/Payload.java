package org.smbdirect.itest.traffic;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The traffic's messages: a header (magic, stream, sequence number, length) and a body whose every
 * byte depends on the stream, the sequence number and its position, so that a message delivered
 * out of order, twice, truncated or with stale bytes is recognised.
 */
final class Payload {
    static final int MAGIC = 0x4C494645; // "LIFE"
    static final int HEADER = 20;

    private Payload() {
    }

    static ByteBuffer make(int stream, long seq, int size, boolean direct) {
        ByteBuffer b = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        b.putInt(MAGIC).putInt(stream).putLong(seq).putInt(size);
        for (int i = HEADER; i < size; i++) {
            b.put(at(stream, seq, i));
        }
        return b.flip();
    }

    private static byte at(int stream, long seq, int i) {
        return (byte) (i * 31 + seq * 7 + stream);
    }

    /** The receiving end of one stream: checks order and content. */
    static final class Inbound {
        private int stream = -1;
        private long next;

        /** The stream received, or -1 before the first message. */
        synchronized int stream() {
            return stream;
        }

        /** How many messages were accepted: the next sequence number due. */
        synchronized long delivered() {
            return next;
        }

        /**
         * Checks the next message of the stream.
         *
         * @return {@code null} when it is the expected one, intact; else what is wrong
         */
        synchronized String accept(ByteBuffer received) {
            // the transport hands out buffers in its wire order (little-endian); ours is big-endian
            ByteBuffer m = received.duplicate().order(ByteOrder.BIG_ENDIAN);
            int size = m.remaining();
            if (size < HEADER) {
                return "a message of " + size + " bytes, shorter than the header";
            }
            int p = m.position();
            if (m.getInt(p) != MAGIC) {
                return "no magic: " + Integer.toHexString(m.getInt(p));
            }
            int s = m.getInt(p + 4);
            long seq = m.getLong(p + 8);
            int length = m.getInt(p + 16);
            if (stream == -1) {
                stream = s;
            }
            if (s != stream) {
                return "stream " + s + " on the connection of stream " + stream;
            }
            if (seq != next) {
                return "stream " + s + ": message " + seq + " where " + next + " was due";
            }
            if (length != size) {
                return "stream " + s + " message " + seq + ": " + size + " bytes of " + length;
            }
            for (int i = HEADER; i < size; i++) {
                if (m.get(p + i) != at(s, seq, i)) {
                    return "stream " + s + " message " + seq + ": byte " + i + " of " + size + " corrupt";
                }
            }
            next++;
            return null;
        }
    }
}
