package org.smbdirect.interop.guest;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.mserref.NtStatus;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2FileId;
import com.hierynomus.mssmb2.SMB2MessageCommandCode;
import com.hierynomus.mssmb2.SMB2MultiCreditPacket;
import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.SMB2PacketHeader;
import com.hierynomus.mssmb2.messages.SMB2ReadResponse;
import com.hierynomus.mssmb2.messages.SMB2WriteResponse;
import com.hierynomus.smb.SMBBuffer;
import com.hierynomus.smbj.session.Session;
import com.hierynomus.smbj.share.DiskShare;
import com.hierynomus.smbj.share.File;

/**
 * SMB2 READ and WRITE through the RDMA channel (MS-SMB2 2.2.19, 2.2.21, 3.2.4.6, 3.2.4.7), which
 * smbj does not build itself: the engine registers the caller's buffer (MS-SMBD 3.1.4.3), the
 * request carries its Buffer Descriptor V1 list (MS-SMBD 2.2.3.1) as channel information, and the
 * server moves the data with RDMA Read (WRITE) or RDMA Write (READ). With
 * SMB2_CHANNEL_RDMA_V1_INVALIDATE (dialect 3.0.2 and later) the server invalidates the
 * registration with its response (Send with Invalidate); otherwise, and when it did not, the
 * registration is deregistered here (MS-SMB2 3.2.5.1: the client invalidates it).
 */
final class Smb2RdmaChannel {
    /** MS-SMB2 2.2.21 Channel values. */
    static final int SMB2_CHANNEL_RDMA_V1 = 0x1;
    static final int SMB2_CHANNEL_RDMA_V1_INVALIDATE = 0x2;
    /** The fixed part of the READ and WRITE requests ends at 64 + 48 bytes: the channel information follows. */
    private static final int CHANNEL_INFO_OFFSET = SMB2PacketHeader.STRUCTURE_SIZE + 48;

    private final Session session;
    private final SmbDirectConnection connection;
    private final SMB2Dialect dialect;
    private final long treeId;
    private long remotelyInvalidated;
    private long locallyDeregistered;

    Smb2RdmaChannel(Session session, DiskShare share, SmbDirectConnection connection) {
        this.session = session;
        this.connection = connection;
        this.dialect = session.getConnection().getNegotiatedProtocol().getDialect();
        this.treeId = share.getTreeConnect().getTreeId();
    }

    /** The channel this dialect uses: MS-SMB2 3.2.4.6 (3.0 has no invalidate channel). */
    int channel() {
        return dialect == SMB2Dialect.SMB_3_0 ? SMB2_CHANNEL_RDMA_V1 : SMB2_CHANNEL_RDMA_V1_INVALIDATE;
    }

    /** Registrations the server invalidated with its response so far. */
    long remotelyInvalidated() {
        return remotelyInvalidated;
    }

    /** Registrations deregistered here because the server had not invalidated them. */
    long locallyDeregistered() {
        return locallyDeregistered;
    }

    /** Writes the source's remaining bytes at the file offset in one WRITE through the RDMA channel. */
    long write(File file, long fileOffset, ByteBuffer source) throws Exception {
        int length = source.remaining();
        RegisteredBuffer reg = connection.register(source.duplicate(), RemoteAccess.READ);
        try {
            RdmaWriteRequest req = new RdmaWriteRequest(file.getFileId(), fileOffset, length, reg.descriptors());
            SMB2WriteResponse rsp = receive(req);
            requireSuccess(rsp, "WRITE");
            return rsp.getBytesWritten();
        } finally {
            release(reg);
        }
    }

    /** Reads into the destination's remaining bytes from the file offset in one READ through the RDMA channel. */
    void read(File file, long fileOffset, ByteBuffer destination) throws Exception {
        int length = destination.remaining();
        RegisteredBuffer reg = connection.register(destination.duplicate(), RemoteAccess.WRITE);
        try {
            RdmaReadRequest req = new RdmaReadRequest(file.getFileId(), fileOffset, length, reg.descriptors());
            SMB2ReadResponse rsp = receive(req);
            requireSuccess(rsp, "READ");
            // MS-SMB2 2.2.20: the data went by RDMA Write; nothing inline.
            if (rsp.getDataLength() != 0) {
                throw new AssertionError("READ through the RDMA channel answered " + rsp.getDataLength() + " bytes inline");
            }
        } finally {
            release(reg);
        }
    }

    private <T extends SMB2Packet> T receive(SMB2Packet request) throws Exception {
        return session.<T>send(request).get(Integer.getInteger("interop.smb2Timeout", 120), TimeUnit.SECONDS);
    }

    private static void requireSuccess(SMB2Packet rsp, String what) {
        long status = rsp.getHeader().getStatusCode();
        if (status != NtStatus.STATUS_SUCCESS.getValue()) {
            throw new AssertionError(what + " through the RDMA channel failed: status 0x" + Long.toHexString(status)
                    + " (" + rsp.getHeader().getStatusCode() + ")");
        }
    }

    /** Remote access ends with the response either way; the local resources go here in both cases. */
    private void release(RegisteredBuffer reg) throws Exception {
        if (reg.isRegistered()) {
            locallyDeregistered++;
        } else {
            remotelyInvalidated++;
        }
        reg.deregister();
    }

    /** MS-SMB2 2.2.21 with Channel RDMA: Length 0, DataOffset 0, RemainingBytes the length to read from us. */
    private final class RdmaWriteRequest extends SMB2MultiCreditPacket {
        private final SMB2FileId fileId;
        private final long offset;
        private final int length;
        private final List<BufferDescriptorV1> descriptors;

        RdmaWriteRequest(SMB2FileId fileId, long offset, int length, List<BufferDescriptorV1> descriptors) {
            super(49, dialect, SMB2MessageCommandCode.SMB2_WRITE, session.getSessionId(), treeId, length);
            this.fileId = fileId;
            this.offset = offset;
            this.length = length;
            this.descriptors = descriptors;
        }

        @Override
        protected void writeTo(SMBBuffer buffer) {
            buffer.putUInt16(structureSize);
            buffer.putUInt16(0); // DataOffset: no inline data
            buffer.putUInt32(0); // Length: no inline data
            buffer.putUInt64(offset);
            fileId.write(buffer);
            buffer.putUInt32(channel());
            buffer.putUInt32(length); // RemainingBytes: what the server reads by RDMA
            buffer.putUInt16(CHANNEL_INFO_OFFSET);
            buffer.putUInt16(BufferDescriptorV1.SIZE * descriptors.size());
            buffer.putUInt32(0); // Flags
            putDescriptors(buffer, descriptors);
        }
    }

    /** MS-SMB2 2.2.19 with Channel RDMA: the server RDMA-writes up to Length bytes into our buffer. */
    private final class RdmaReadRequest extends SMB2MultiCreditPacket {
        private final SMB2FileId fileId;
        private final long offset;
        private final int length;
        private final List<BufferDescriptorV1> descriptors;

        RdmaReadRequest(SMB2FileId fileId, long offset, int length, List<BufferDescriptorV1> descriptors) {
            super(49, dialect, SMB2MessageCommandCode.SMB2_READ, session.getSessionId(), treeId, length);
            this.fileId = fileId;
            this.offset = offset;
            this.length = length;
            this.descriptors = descriptors;
        }

        @Override
        protected void writeTo(SMBBuffer buffer) {
            buffer.putUInt16(structureSize);
            buffer.putByte((byte) 0); // Padding
            buffer.putByte((byte) 0); // Flags
            buffer.putUInt32(length);
            buffer.putUInt64(offset);
            fileId.write(buffer);
            buffer.putUInt32(length); // MinimumCount: all of it (the file is long enough)
            buffer.putUInt32(channel());
            buffer.putUInt32(0); // RemainingBytes
            buffer.putUInt16(CHANNEL_INFO_OFFSET);
            buffer.putUInt16(BufferDescriptorV1.SIZE * descriptors.size());
            putDescriptors(buffer, descriptors);
        }
    }

    /** MS-SMBD 2.2.3.1, little-endian, one after the other. */
    private static void putDescriptors(SMBBuffer buffer, List<BufferDescriptorV1> descriptors) {
        for (BufferDescriptorV1 d : descriptors) {
            buffer.putUInt64(d.offset());
            buffer.putUInt32(Integer.toUnsignedLong(d.token()));
            buffer.putUInt32(Integer.toUnsignedLong(d.length()));
        }
    }
}
