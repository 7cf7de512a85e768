package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import org.smbdirect.transport.BufferDescriptorV1;

/**
 * The few fields of SMB2 messages the transport reads and writes itself, at their offsets from the
 * start of the SMB2 header (MS-SMB2 2.2.1.2, 2.2.19 to 2.2.22; all little-endian), and the READ
 * and WRITE requests that carry their data through the RDMA channel.
 */
final class Smb2Messages {
    /** MS-SMB2 2.2.1.2: the header is 64 bytes; the protocol id 0xFE 'S' 'M' 'B'. */
    static final int HEADER_SIZE = 64;
    static final int CREDIT_CHARGE = 6;
    static final int STATUS = 8;
    static final int COMMAND = 12;
    /** CreditRequest in a request, CreditResponse in a response. */
    static final int CREDITS = 14;
    static final int FLAGS = 16;
    static final int NEXT_COMMAND = 20;
    static final int MESSAGE_ID = 24;
    static final int SESSION_ID = 40;
    static final int SIGNATURE = 48;
    static final int SIGNATURE_SIZE = 16;
    static final int SMB2_FLAGS_ASYNC_COMMAND = 0x2;
    static final int SMB2_FLAGS_SIGNED = 0x8;
    static final int STATUS_PENDING = 0x103;
    static final int STATUS_USER_SESSION_DELETED = 0xC0000203;
    static final int COMMAND_SESSION_SETUP = 0x1;
    static final int COMMAND_READ = 0x8;
    static final int COMMAND_WRITE = 0x9;

    /** MS-SMB2 2.2.21 Channel values (also 2.2.19). */
    static final int SMB2_CHANNEL_RDMA_V1 = 0x1;
    static final int SMB2_CHANNEL_RDMA_V1_INVALIDATE = 0x2;

    /** MS-SMB2 2.2.19 and 2.2.21: both fixed parts end 48 bytes after the header, where Buffer starts. */
    static final int BUFFER = HEADER_SIZE + 48;
    /** 2.2.19 READ: Length (4), MinimumCount, Channel, RemainingBytes, ReadChannelInfoOffset/Length. */
    static final int READ_LENGTH = HEADER_SIZE + 4;
    static final int READ_OFFSET = HEADER_SIZE + 8;
    static final int READ_CHANNEL = HEADER_SIZE + 36;
    static final int READ_REMAINING_BYTES = HEADER_SIZE + 40;
    static final int READ_CHANNEL_INFO = HEADER_SIZE + 44;
    /** 2.2.21 WRITE: DataOffset (2), Length (4), Channel, RemainingBytes, WriteChannelInfoOffset/Length. */
    static final int WRITE_DATA_OFFSET = HEADER_SIZE + 2;
    static final int WRITE_LENGTH = HEADER_SIZE + 4;
    static final int WRITE_CHANNEL = HEADER_SIZE + 32;
    static final int WRITE_REMAINING_BYTES = HEADER_SIZE + 36;
    static final int WRITE_CHANNEL_INFO = HEADER_SIZE + 40;
    /** 2.2.20 READ response: DataOffset (1), DataLength (4), DataRemaining (4); Buffer after 16 bytes. */
    static final int READ_RESPONSE_DATA_OFFSET = HEADER_SIZE + 2;
    static final int READ_RESPONSE_DATA_LENGTH = HEADER_SIZE + 4;
    static final int READ_RESPONSE_DATA_REMAINING = HEADER_SIZE + 8;
    static final int READ_RESPONSE_BUFFER = HEADER_SIZE + 16;
    /** 2.2.22 WRITE response: Reserved (2), Count (4), Remaining, WriteChannelInfoOffset/Length; 16 bytes. */
    static final int WRITE_RESPONSE_COUNT = HEADER_SIZE + 4;
    static final int WRITE_RESPONSE_BUFFER = HEADER_SIZE + 16;

    /**
     * What an inline message needs besides the data: the WRITE request's and the READ response's
     * fixed parts (112 and 80 bytes) and room for an SMB2 TRANSFORM_HEADER (52 bytes, 2.2.41).
     */
    static final int WRITE_REQUEST_OVERHEAD = BUFFER + 52;
    static final int READ_RESPONSE_OVERHEAD = HEADER_SIZE + 16 + 52;

    private Smb2Messages() {
    }

    /** Whether the bytes start with an SMB2 header (not a TRANSFORM_HEADER or an SMB1 message). */
    static boolean isSmb2(byte[] m) {
        return m.length >= HEADER_SIZE && (m[0] & 0xff) == 0xfe && m[1] == 'S' && m[2] == 'M' && m[3] == 'B';
    }

    /**
     * The length of an SMB2 ERROR Response (MS-SMB2 2.2.2: the header, 8 bytes, and ByteCount
     * bytes of ErrorData, at least 1) when the message is one: an error status (severity 3) and
     * StructureSize 9, on its own (no NextCommand); -1 otherwise.
     */
    static int errorResponseLength(byte[] m) {
        if (!isSmb2(m) || m.length < HEADER_SIZE + 9 || i32(m, NEXT_COMMAND) != 0
                || (i32(m, STATUS) & 0xC0000000) != 0xC0000000 || u16(m, HEADER_SIZE) != 9) {
            return -1;
        }
        long byteCount = i32(m, HEADER_SIZE + 4) & 0xffffffffL;
        return (int) Math.min(Integer.MAX_VALUE, HEADER_SIZE + 8 + Math.max(1, byteCount));
    }

    static int u16(byte[] m, int at) {
        return (m[at] & 0xff) | (m[at + 1] & 0xff) << 8;
    }

    static int i32(byte[] m, int at) {
        return (m[at] & 0xff) | (m[at + 1] & 0xff) << 8 | (m[at + 2] & 0xff) << 16 | (m[at + 3] & 0xff) << 24;
    }

    static long u64(byte[] m, int at) {
        return (i32(m, at) & 0xffffffffL) | (long) i32(m, at + 4) << 32;
    }

    static void put16(byte[] m, int at, int v) {
        m[at] = (byte) v;
        m[at + 1] = (byte) (v >>> 8);
    }

    static void put32(byte[] m, int at, int v) {
        put16(m, at, v);
        put16(m, at + 2, v >>> 16);
    }

    /**
     * MS-SMB2 2.2.19 with the RDMA channel (3.2.4.6): the READ request smbj built, with Channel,
     * ReadChannelInfoOffset and ReadChannelInfoLength set and the descriptors as its Buffer; the
     * server RDMA-writes up to Length bytes into them. RemainingBytes stays 0.
     *
     * @param request smbj's serialized READ request (header and fixed part at least)
     * @param channel SMB2_CHANNEL_RDMA_V1 or SMB2_CHANNEL_RDMA_V1_INVALIDATE
     * @param descriptors the registered destination, MS-SMBD 2.2.3.1
     * @return the new request
     */
    static byte[] rdmaReadRequest(byte[] request, int channel, List<BufferDescriptorV1> descriptors) {
        byte[] m = withDescriptors(request, descriptors);
        put32(m, READ_CHANNEL, channel);
        put32(m, READ_REMAINING_BYTES, 0);
        put16(m, READ_CHANNEL_INFO, BUFFER);
        put16(m, READ_CHANNEL_INFO + 2, BufferDescriptorV1.SIZE * descriptors.size());
        return m;
    }

    /**
     * MS-SMB2 2.2.21 with the RDMA channel (3.2.4.7): the WRITE request smbj built without its
     * data: DataOffset and Length 0, RemainingBytes the number of bytes the server RDMA-reads from
     * the descriptors, Channel and WriteChannelInfoOffset/Length set, the descriptors as Buffer.
     *
     * @param request smbj's serialized WRITE request (its data, after the fixed part, is dropped)
     * @param channel SMB2_CHANNEL_RDMA_V1 or SMB2_CHANNEL_RDMA_V1_INVALIDATE
     * @param descriptors the registered source, MS-SMBD 2.2.3.1
     * @param length the number of bytes to write
     * @return the new request
     */
    static byte[] rdmaWriteRequest(byte[] request, int channel, List<BufferDescriptorV1> descriptors, int length) {
        byte[] m = withDescriptors(request, descriptors);
        put16(m, WRITE_DATA_OFFSET, 0);
        put32(m, WRITE_LENGTH, 0);
        put32(m, WRITE_CHANNEL, channel);
        put32(m, WRITE_REMAINING_BYTES, length);
        put16(m, WRITE_CHANNEL_INFO, BUFFER);
        put16(m, WRITE_CHANNEL_INFO + 2, BufferDescriptorV1.SIZE * descriptors.size());
        return m;
    }

    private static byte[] withDescriptors(byte[] request, List<BufferDescriptorV1> descriptors) {
        if (request.length < BUFFER || !isSmb2(request)) {
            throw new IllegalArgumentException("not an SMB2 READ or WRITE request: " + request.length + " bytes");
        }
        byte[] m = new byte[BUFFER + BufferDescriptorV1.SIZE * descriptors.size()];
        System.arraycopy(request, 0, m, 0, BUFFER);
        BufferDescriptorV1.encodeAll(descriptors, ByteBuffer.wrap(m, BUFFER, m.length - BUFFER).order(ByteOrder.LITTLE_ENDIAN));
        return m;
    }
}
