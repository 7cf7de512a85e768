package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import org.smbdirect.transport.BufferDescriptorV1;

/**
 * The control messages of the session protocol (the Windows Sockets Direct session protocol,
 * {@code shared/spec/WSD-session-protocol.ja.txt}) in this implementation's wire format. Each
 * control message travels as one SMB Direct upper-layer message (the engine fragments it when it
 * exceeds MaxSendSize). All integers are little-endian and unsigned.
 *
 * <pre>
 * offset size field
 *  0     1    Type             1 HELLO, 2 DATA, 3 READ_REQUEST, 4 WRITE_REQUEST, 5 TARGET,
 *                              6 COMPLETE, 7 NOBUFS
 *  1     1    Flags            HELLO: 0x01 CAN_RDMA_READ; COMPLETE and NOBUFS: 0x02 FROM_SENDER
 *                              (the transfer's sender sends it, so Sequence numbers a send of
 *                              the message's sender); every other bit is zero
 *  2     2    DescriptorCount  Buffer Descriptor V1 entries after the header
 *  4     4    InlineLength     bytes of payload after the descriptors
 *  8     8    Sequence         the send's number, 1, 2, 3, ... per direction; 0 in HELLO
 * 16     8    TotalLength      the send's total length in bytes (at most 2^31 - 1); see below
 * 24     16*DescriptorCount    descriptors, MS-SMBD 2.2.3.1 encoding (Offset 8, Token 4, Length 4)
 * 24+16n InlineLength          payload
 * </pre>
 *
 * <p>The message is exactly {@code 24 + 16 * DescriptorCount + InlineLength} bytes long.
 *
 * <table>
 * <caption>Types</caption>
 * <tr><th>type</th><th>direction</th><th>descriptors</th><th>inline</th><th>TotalLength</th></tr>
 * <tr><td>HELLO</td><td>both, first</td><td>0</td><td>the 24-byte HELLO body</td><td>0</td></tr>
 * <tr><td>DATA</td><td>sender</td><td>0</td><td>the whole send</td><td>= InlineLength</td></tr>
 * <tr><td>READ_REQUEST</td><td>sender</td><td>&ge; 1, registered for the peer's RDMA Read, covering
 * exactly TotalLength - InlineLength bytes</td><td>the send's first part</td><td>&gt; InlineLength</td></tr>
 * <tr><td>WRITE_REQUEST</td><td>sender</td><td>0</td><td>the send's first part</td><td>&gt; InlineLength</td></tr>
 * <tr><td>TARGET</td><td>receiver</td><td>&ge; 1, registered for the sender's RDMA Write</td><td>0</td>
 * <td>the descriptors' total length (= the request's TotalLength - InlineLength)</td></tr>
 * <tr><td>COMPLETE</td><td>READ path: receiver; WRITE path: sender, FROM_SENDER</td><td>0</td><td>0</td>
 * <td>0</td></tr>
 * <tr><td>NOBUFS</td><td>receiver (refuses a request); sender, FROM_SENDER (cannot write after
 * TARGET)</td><td>0</td><td>0</td><td>0</td></tr>
 * </table>
 *
 * <p>Each direction numbers its sends on its own, so FROM_SENDER tells which direction's
 * transfer a COMPLETE or NOBUFS names.
 *
 * <p>HELLO body: Magic (4, 0x4B4C5542, "BULK"), Version (2, 1), MaxInFlight (2, 1-65535),
 * MaxMessageSize (4, 1 to 2^31 - 1), MaxReadWriteSize (4), ReceiveWindow (4, at least 1),
 * Reserved (4, zero).
 *
 * <p>{@link #decode} checks everything a single message can be checked for; whether a message
 * fits the session's state (sequence, known transfer, limits announced in HELLO) is the
 * session's to check.
 */
final class ControlMessage {
    /** The header's size. */
    static final int HEADER_SIZE = 24;
    /** The HELLO body's size. */
    static final int HELLO_SIZE = 24;
    /** "BULK" read as a little-endian integer. */
    static final int MAGIC = 0x4B4C5542;
    /** The protocol version this implementation speaks. */
    static final int VERSION = 1;
    /** HELLO flag: this side's RDMA provider can RDMA Read. */
    static final int FLAG_CAN_RDMA_READ = 0x01;
    /** COMPLETE and NOBUFS flag: sent by the transfer's sender (else by its receiver). */
    static final int FLAG_FROM_SENDER = 0x02;
    /** The most descriptors one message can name (the count is 16 bits). */
    static final int MAX_DESCRIPTORS = 0xFFFF;

    /** Message types. */
    enum Type {
        /** Capabilities, first message of each side. */
        HELLO(1),
        /** A whole send, inline. */
        DATA(2),
        /** A large send: first part inline, the rest registered for the receiver's RDMA Read. */
        READ_REQUEST(3),
        /** A large send: first part inline, asking the receiver for a buffer to RDMA-write the rest to. */
        WRITE_REQUEST(4),
        /** The receiver's buffer for an RDMA Write. */
        TARGET(5),
        /** The transfer is done: the side that registered deregisters. */
        COMPLETE(6),
        /** Memory could not be allocated or registered: the transfer is abandoned. */
        NOBUFS(7);

        final int code;

        Type(int code) {
            this.code = code;
        }

        static Type of(int code) {
            for (Type t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    final Type type;
    final int flags;
    final long sequence;
    final int totalLength;
    final List<BufferDescriptorV1> descriptors;
    /** The payload: a view into the received message, valid as long as that is. */
    final ByteBuffer inline;

    private ControlMessage(Type type, int flags, long sequence, int totalLength, List<BufferDescriptorV1> descriptors,
            ByteBuffer inline) {
        this.type = type;
        this.flags = flags;
        this.sequence = sequence;
        this.totalLength = totalLength;
        this.descriptors = descriptors;
        this.inline = inline;
    }

    /** The bytes sent by RDMA: TotalLength - InlineLength. */
    int rdmaLength() {
        return totalLength - inline.remaining();
    }

    // ================================================================ decoding

    /**
     * Decodes and checks one control message.
     *
     * @param message the message from position to limit; not changed
     * @return the message, whose {@link #inline} is a view into {@code message}
     * @throws MalformedMessageException naming what is wrong
     */
    static ControlMessage decode(ByteBuffer message) throws MalformedMessageException {
        ByteBuffer b = message.slice().order(ByteOrder.LITTLE_ENDIAN);
        int length = b.remaining();
        if (length < HEADER_SIZE) {
            throw new MalformedMessageException("control message of " + length + " bytes is shorter than the "
                    + HEADER_SIZE + "-byte header");
        }
        int code = b.get(0) & 0xFF;
        Type type = Type.of(code);
        if (type == null) {
            throw new MalformedMessageException(String.format("unknown control message type 0x%02X", code));
        }
        int flags = b.get(1) & 0xFF;
        int count = b.getShort(2) & 0xFFFF;
        long inlineLength = Integer.toUnsignedLong(b.getInt(4));
        long sequence = b.getLong(8);
        long total = b.getLong(16);
        long expected = HEADER_SIZE + 16L * count + inlineLength;
        if (expected != length) {
            throw new MalformedMessageException(type + " of " + length + " bytes, but its header announces "
                    + count + " descriptor(s) and " + inlineLength + " inline bytes (" + expected + " bytes)");
        }
        if ((flags & ~allowedFlags(type)) != 0) {
            throw new MalformedMessageException(String.format("%s with undefined flags 0x%02X", type, flags));
        }
        if (total < 0 || total > Integer.MAX_VALUE) {
            throw new MalformedMessageException(type + " with TotalLength " + Long.toUnsignedString(total)
                    + " above 2^31 - 1");
        }
        if (type == Type.HELLO ? sequence != 0 : sequence == 0) {
            throw new MalformedMessageException(type + " with Sequence " + Long.toUnsignedString(sequence)
                    + (type == Type.HELLO ? ", must be 0" : ", must not be 0"));
        }
        b.position(HEADER_SIZE);
        List<BufferDescriptorV1> descriptors = BufferDescriptorV1.decodeAll(b, count);
        ByteBuffer inline = b.slice().order(ByteOrder.LITTLE_ENDIAN);
        ControlMessage m = new ControlMessage(type, flags, sequence, (int) total, descriptors, inline);
        m.check(inlineLength);
        return m;
    }

    private static int allowedFlags(Type type) {
        switch (type) {
            case HELLO:
                return FLAG_CAN_RDMA_READ;
            case COMPLETE:
            case NOBUFS:
                return FLAG_FROM_SENDER;
            default:
                return 0;
        }
    }

    /** Whether a COMPLETE or NOBUFS comes from the transfer's sender. */
    boolean fromSender() {
        return (flags & FLAG_FROM_SENDER) != 0;
    }

    /** The per-type rules of the table in the class description. */
    private void check(long inlineLength) throws MalformedMessageException {
        int count = descriptors.size();
        switch (type) {
            case HELLO:
                require(count == 0, "HELLO with descriptors");
                require(inlineLength == HELLO_SIZE, "HELLO body of " + inlineLength + " bytes, must be " + HELLO_SIZE);
                require(totalLength == 0, "HELLO with TotalLength " + totalLength + ", must be 0");
                break;
            case DATA:
                require(count == 0, "DATA with descriptors");
                require(totalLength == inlineLength, "DATA with TotalLength " + totalLength + " but "
                        + inlineLength + " inline bytes");
                break;
            case READ_REQUEST:
                require(count > 0, "READ_REQUEST without descriptors");
                require(totalLength > inlineLength, "READ_REQUEST with TotalLength " + totalLength
                        + " not above its " + inlineLength + " inline bytes");
                checkDescriptors(totalLength - inlineLength);
                break;
            case WRITE_REQUEST:
                require(count == 0, "WRITE_REQUEST with descriptors");
                require(totalLength > inlineLength, "WRITE_REQUEST with TotalLength " + totalLength
                        + " not above its " + inlineLength + " inline bytes");
                break;
            case TARGET:
                require(count > 0, "TARGET without descriptors");
                require(inlineLength == 0, "TARGET with inline bytes");
                checkDescriptors(totalLength);
                break;
            default: // COMPLETE, NOBUFS
                require(count == 0 && inlineLength == 0 && totalLength == 0,
                        type + " must carry nothing but Type and Sequence");
        }
    }

    private void checkDescriptors(long expectedTotal) throws MalformedMessageException {
        long sum = 0;
        for (BufferDescriptorV1 d : descriptors) {
            require(d.length() != 0, type + " with an empty descriptor " + d);
            sum += d.unsignedLength();
        }
        require(sum == expectedTotal, type + " whose descriptors cover " + sum + " bytes, expected " + expectedTotal);
    }

    private static void require(boolean ok, String reason) throws MalformedMessageException {
        if (!ok) {
            throw new MalformedMessageException(reason);
        }
    }

    /**
     * Reads a HELLO's body.
     *
     * @return the announcement
     * @throws MalformedMessageException for a wrong magic or version or a field out of range
     */
    Hello hello() throws MalformedMessageException {
        ByteBuffer h = inline;
        int magic = h.getInt(0);
        require(magic == MAGIC, String.format("HELLO with magic 0x%08X, expected 0x%08X (the peer does not speak "
                + "this protocol)", magic, MAGIC));
        int version = h.getShort(4) & 0xFFFF;
        require(version == VERSION, "HELLO with version " + version + ", this side speaks " + VERSION);
        int maxInFlight = h.getShort(6) & 0xFFFF;
        require(maxInFlight > 0, "HELLO with MaxInFlight 0");
        long maxMessage = Integer.toUnsignedLong(h.getInt(8));
        require(maxMessage > 0 && maxMessage <= Integer.MAX_VALUE, "HELLO with MaxMessageSize " + maxMessage
                + ", must be 1 to 2^31 - 1");
        long maxReadWrite = Integer.toUnsignedLong(h.getInt(12));
        long window = Integer.toUnsignedLong(h.getInt(16));
        require(window > 0, "HELLO with ReceiveWindow 0");
        require(h.getInt(20) == 0, "HELLO with a non-zero Reserved field");
        return new Hello((flags & FLAG_CAN_RDMA_READ) != 0, maxInFlight, (int) maxMessage,
                (int) Math.min(maxReadWrite, Integer.MAX_VALUE), (int) Math.min(window, Integer.MAX_VALUE));
    }

    // ================================================================ encoding

    /**
     * Encodes a message.
     *
     * @param type the type
     * @param flags the flags
     * @param sequence the sequence
     * @param totalLength the total length
     * @param descriptors the descriptors, possibly empty
     * @param inline the payload from position to limit (not changed), or {@code null}
     * @return a new buffer holding the message, position 0
     */
    static ByteBuffer encode(Type type, int flags, long sequence, long totalLength, List<BufferDescriptorV1> descriptors,
            ByteBuffer inline) {
        int inlineLength = inline == null ? 0 : inline.remaining();
        if (descriptors.size() > MAX_DESCRIPTORS) {
            throw new IllegalArgumentException(descriptors.size() + " descriptors do not fit one control message");
        }
        ByteBuffer b = ByteBuffer.allocate(size(descriptors.size(), inlineLength)).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) type.code).put((byte) flags).putShort((short) descriptors.size()).putInt(inlineLength)
                .putLong(sequence).putLong(totalLength);
        BufferDescriptorV1.encodeAll(descriptors, b);
        if (inline != null) {
            b.put(inline.duplicate());
        }
        return b.flip();
    }

    /**
     * The encoded size of a message.
     *
     * @param descriptors how many descriptors
     * @param inlineLength how many payload bytes
     * @return bytes
     */
    static int size(int descriptors, int inlineLength) {
        return HEADER_SIZE + BufferDescriptorV1.SIZE * descriptors + inlineLength;
    }

    /**
     * Encodes a HELLO.
     *
     * @param h the announcement
     * @return the message
     */
    static ByteBuffer hello(Hello h) {
        ByteBuffer body = ByteBuffer.allocate(HELLO_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        body.putInt(MAGIC).putShort((short) VERSION).putShort((short) Math.min(h.maxInFlight, 0xFFFF))
                .putInt(h.maxMessageSize).putInt(h.maxReadWriteSize).putInt(h.receiveWindow).putInt(0).flip();
        return encode(Type.HELLO, h.canRdmaRead ? FLAG_CAN_RDMA_READ : 0, 0, 0, List.of(), body);
    }

    /**
     * Encodes a message that names only a transfer: COMPLETE or NOBUFS.
     *
     * @param type COMPLETE or NOBUFS
     * @param sequence the transfer
     * @param fromSender whether the transfer's sender sends it
     * @return the message
     */
    static ByteBuffer signal(Type type, long sequence, boolean fromSender) {
        return encode(type, fromSender ? FLAG_FROM_SENDER : 0, sequence, 0, List.of(), null);
    }

    @Override
    public String toString() {
        return type + (fromSender() ? "[FROM_SENDER, seq=" : "[seq=") + Long.toUnsignedString(sequence) + ", total=" + totalLength + ", inline="
                + inline.remaining() + ", descriptors=" + descriptors.size() + "]";
    }
}
