package org.smbdirect.protocol.wire.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Constants of MS-SMBD section 2 and little-endian access to buffers of any byte order, without
 * allocating (MS-SMBD 2.2: multiple-byte fields are little-endian).
 */
public final class Wire {
    /** SMBDirect Protocol 1.0 (MS-SMBD 1.7). */
    public static final int VERSION_1 = 0x0100;
    /** STATUS_SUCCESS. */
    public static final int STATUS_SUCCESS = 0;
    /** STATUS_NOT_SUPPORTED ([MS-ERREF] 2.3), sent when the version range excludes 0x0100 (3.1.5.6). */
    public static final int STATUS_NOT_SUPPORTED = 0xC00000BB;
    /** STATUS_INSUFFICIENT_RESOURCES ([MS-ERREF] 2.3), sent when no receive credits can be posted (3.1.5.6). */
    public static final int STATUS_INSUFFICIENT_RESOURCES = 0xC000009A;
    /** SMB_DIRECT_RESPONSE_REQUESTED (MS-SMBD 2.2.3). */
    public static final int SMB_DIRECT_RESPONSE_REQUESTED = 0x0001;
    /** The size of a Data Transfer message without padding or data (MS-SMBD 2.2.3). */
    public static final int DATA_TRANSFER_HEADER_SIZE = 20;
    /** The DataOffset this implementation sends: the header plus 4 bytes of padding (3.1.5.4). */
    public static final int DATA_OFFSET = 24;
    /** The smallest MaxReceiveSize a peer may announce (3.1.5.6, 3.1.5.7). */
    public static final int MIN_RECEIVE_SIZE = 128;
    /** The smallest MaxFragmentedSize a peer may announce (3.1.5.6, 3.1.5.7). */
    public static final int MIN_FRAGMENTED_SIZE = 131072;
    /** The size of the first receive posted before negotiation (3.1.4.1, 3.1.7.2: at least 512). */
    public static final int NEGOTIATION_RECEIVE_SIZE = 512;

    private Wire() {
    }

    /**
     * Reads an unsigned 16-bit little-endian field.
     *
     * @param b the buffer
     * @param index the absolute index
     * @return the value, 0 to 65535
     */
    public static int u16(ByteBuffer b, int index) {
        short v = b.getShort(index);
        return (b.order() == ByteOrder.LITTLE_ENDIAN ? v : Short.reverseBytes(v)) & 0xFFFF;
    }

    /**
     * Reads a 32-bit little-endian field.
     *
     * @param b the buffer
     * @param index the absolute index
     * @return the bits, to be read as unsigned where the field is
     */
    public static int u32(ByteBuffer b, int index) {
        int v = b.getInt(index);
        return b.order() == ByteOrder.LITTLE_ENDIAN ? v : Integer.reverseBytes(v);
    }

    /**
     * Writes a 16-bit little-endian field.
     *
     * @param b the buffer
     * @param index the absolute index
     * @param value the low 16 bits are written
     */
    public static void put16(ByteBuffer b, int index, int value) {
        short v = (short) value;
        b.putShort(index, b.order() == ByteOrder.LITTLE_ENDIAN ? v : Short.reverseBytes(v));
    }

    /**
     * Writes a 32-bit little-endian field.
     *
     * @param b the buffer
     * @param index the absolute index
     * @param value the value
     */
    public static void put32(ByteBuffer b, int index, int value) {
        b.putInt(index, b.order() == ByteOrder.LITTLE_ENDIAN ? value : Integer.reverseBytes(value));
    }

    /**
     * Renders an NTSTATUS for messages.
     *
     * @param status the value
     * @return for example {@code 0xC00000BB (STATUS_NOT_SUPPORTED)}
     */
    public static String statusName(int status) {
        String hex = String.format("0x%08X", status);
        switch (status) {
            case STATUS_SUCCESS:
                return hex + " (STATUS_SUCCESS)";
            case STATUS_NOT_SUPPORTED:
                return hex + " (STATUS_NOT_SUPPORTED)";
            case STATUS_INSUFFICIENT_RESOURCES:
                return hex + " (STATUS_INSUFFICIENT_RESOURCES)";
            default:
                return hex;
        }
    }
}
