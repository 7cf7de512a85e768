package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.smbdirect.transport.BufferDescriptorV1;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2FileId;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.mssmb2.messages.SMB2WriteRequest;
import com.hierynomus.smb.SMBBuffer;
import com.hierynomus.smbj.io.ArrayByteChunkProvider;

/**
 * The RDMA-channel READ and WRITE requests byte for byte against MS-SMB2 2.2.19 and 2.2.21, built
 * from smbj's own serialized requests, and the length of an SMB2 ERROR Response (2.2.2).
 */
class Smb2MessagesTest {
    private static final SMB2FileId FILE = new SMB2FileId(new byte[] {1, 2, 3, 4, 5, 6, 7, 8},
            new byte[] {9, 10, 11, 12, 13, 14, 15, 16});
    private static final List<BufferDescriptorV1> ONE = List.of(new BufferDescriptorV1(0x1122334455667788L, 0xCAFEBABE, 65536));

    private static byte[] serialize(com.hierynomus.mssmb2.SMB2Packet p) {
        p.getHeader().setMessageId(42);
        p.getHeader().setCreditCharge(1);
        SMBBuffer b = new SMBBuffer();
        p.write(b);
        return b.getCompactData();
    }

    /** The expected fixed part, field by field in the order of the specification's tables. */
    private static ByteBuffer expected(byte[] header, int size) {
        ByteBuffer e = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        e.put(header, 0, 64);
        return e;
    }

    @Test
    void writeRequest_rdmaV1Invalidate_2_2_21() {
        byte[] smbj = serialize(new SMB2WriteRequest(SMB2Dialect.SMB_3_0_2, FILE, 7, 3,
                new ArrayByteChunkProvider(new byte[65536], 1 << 20), 65536));
        byte[] m = Smb2Messages.rdmaWriteRequest(smbj, Smb2Messages.SMB2_CHANNEL_RDMA_V1_INVALIDATE, ONE, 65536);
        ByteBuffer e = expected(smbj, 64 + 48 + 16);
        e.putShort((short) 49);              // StructureSize
        e.putShort((short) 0);               // DataOffset: no inline data
        e.putInt(0);                         // Length: no inline data
        e.putLong(1 << 20);                  // Offset
        e.put(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}); // FileId
        e.putInt(2);                         // Channel: SMB2_CHANNEL_RDMA_V1_INVALIDATE
        e.putInt(65536);                     // RemainingBytes: what the server RDMA-reads
        e.putShort((short) 112);             // WriteChannelInfoOffset
        e.putShort((short) 16);              // WriteChannelInfoLength
        e.putInt(0);                         // Flags
        e.putLong(0x1122334455667788L).putInt(0xCAFEBABE).putInt(65536); // MS-SMBD 2.2.3.1
        assertArrayEquals(e.array(), m);
    }

    @Test
    void readRequest_rdmaV1_2_2_19() {
        byte[] smbj = serialize(new SMB2ReadRequest(SMB2Dialect.SMB_3_0, FILE, 7, 3, 4096, 65536));
        byte[] m = Smb2Messages.rdmaReadRequest(smbj, Smb2Messages.SMB2_CHANNEL_RDMA_V1, ONE);
        ByteBuffer e = expected(smbj, 64 + 48 + 16);
        e.putShort((short) 49);              // StructureSize
        e.put((byte) 0);                     // Padding
        e.put((byte) 0);                     // Flags
        e.putInt(65536);                     // Length
        e.putLong(4096);                     // Offset
        e.put(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}); // FileId
        e.putInt(1);                         // MinimumCount, as smbj sets it
        e.putInt(1);                         // Channel: SMB2_CHANNEL_RDMA_V1
        e.putInt(0);                         // RemainingBytes
        e.putShort((short) 112);             // ReadChannelInfoOffset
        e.putShort((short) 16);              // ReadChannelInfoLength
        e.putLong(0x1122334455667788L).putInt(0xCAFEBABE).putInt(65536); // Buffer: the descriptor
        assertArrayEquals(e.array(), m);
    }

    @Test
    void requests_keepSmbjsHeader() {
        byte[] smbj = serialize(new SMB2ReadRequest(SMB2Dialect.SMB_3_1_1, FILE, 0x0102030405060708L, 3, 0, 65536));
        byte[] m = Smb2Messages.rdmaReadRequest(smbj, 2, ONE);
        assertEquals(42, Smb2Messages.u64(m, Smb2Messages.MESSAGE_ID));
        assertEquals(0x0102030405060708L, Smb2Messages.u64(m, Smb2Messages.SESSION_ID));
        assertEquals(Smb2Messages.COMMAND_READ, Smb2Messages.u16(m, Smb2Messages.COMMAND));
    }

    @Test
    void notAnSmb2Request_refused() {
        assertThrows(IllegalArgumentException.class, () -> Smb2Messages.rdmaReadRequest(new byte[200], 1, ONE));
        assertThrows(IllegalArgumentException.class, () -> Smb2Messages.rdmaWriteRequest(new byte[64], 1, ONE, 1));
    }

    private static byte[] response(int status, int structureSize, int byteCount, int trailing) {
        ByteBuffer b = ByteBuffer.allocate(64 + 8 + Math.max(1, byteCount) + trailing).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) 0).putInt(status);
        b.position(64);
        b.putShort((short) structureSize).putShort((short) 0).putInt(byteCount);
        return b.array();
    }

    @Test
    void errorResponseLength_2_2_2() {
        assertEquals(73, Smb2Messages.errorResponseLength(response(0xC00000CC, 9, 0, 80)), "ErrorData of at least 1 byte");
        assertEquals(64 + 8 + 24, Smb2Messages.errorResponseLength(response(0xC0000022, 9, 24, 0)));
        assertEquals(-1, Smb2Messages.errorResponseLength(response(0x80000005, 9, 0, 0)),
                "STATUS_BUFFER_OVERFLOW is a warning: a QUERY_INFO response, also StructureSize 9, follows");
        assertEquals(-1, Smb2Messages.errorResponseLength(response(0, 9, 0, 0)), "success");
        assertEquals(-1, Smb2Messages.errorResponseLength(response(0xC0000011, 17, 0, 0)), "not an error body");
    }
}
