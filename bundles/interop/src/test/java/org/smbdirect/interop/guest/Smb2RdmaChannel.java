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

    /** A READ or WRITE request whose data moves by RDMA: what both carry besides their fixed fields. */
    private abstract class ChannelRequest extends SMB2MultiCreditPacket {
        final SMB2FileId fileId;
        final long offset;
        final int length;
        private final List<BufferDescriptorV1> descriptors;

        ChannelRequest(SMB2MessageCommandCode command, SMB2FileId fileId, long offset, int length,
                List<BufferDescriptorV1> descriptors) {
            // the credit charge covers the data that moves by RDMA (MS-SMB2 3.1.5.2)
            super(49, dialect, command, session.getSessionId(), treeId, length);
            this.fileId = fileId;
            this.offset = offset;
            this.length = length;
            this.descriptors = descriptors;
        }

        /** Channel, the request's remaining-bytes field, and the offset and length of the channel information. */
        void putChannel(SMBBuffer buffer, int remainingBytes) {
            buffer.putUInt32(channel());
            buffer.putUInt32(remainingBytes);
            buffer.putUInt16(CHANNEL_INFO_OFFSET);
            buffer.putUInt16(BufferDescriptorV1.SIZE * descriptors.size());
        }

        /** The Buffer Descriptor V1 list (MS-SMBD 2.2.3.1), as the engine encodes it. */
        void putDescriptors(SMBBuffer buffer) {
            ByteBuffer encoded = BufferDescriptorV1.encodeAll(descriptors,
                    ByteBuffer.allocate(BufferDescriptorV1.SIZE * descriptors.size()));
            buffer.putRawBytes(encoded.array());
        }
    }

    /** MS-SMB2 2.2.21 with Channel RDMA: Length 0, DataOffset 0, RemainingBytes the length to read from us. */
    private final class RdmaWriteRequest extends ChannelRequest {
        RdmaWriteRequest(SMB2FileId fileId, long offset, int length, List<BufferDescriptorV1> descriptors) {
            super(SMB2MessageCommandCode.SMB2_WRITE, fileId, offset, length, descriptors);
        }

        @Override
        protected void writeTo(SMBBuffer buffer) {
            buffer.putUInt16(structureSize);
            buffer.putUInt16(0); // DataOffset: no inline data
            buffer.putUInt32(0); // Length: no inline data
            buffer.putUInt64(offset);
            fileId.write(buffer);
            putChannel(buffer, length); // RemainingBytes: what the server reads by RDMA
            buffer.putUInt32(0); // Flags
            putDescriptors(buffer);
        }
    }

    /** MS-SMB2 2.2.19 with Channel RDMA: the server RDMA-writes up to Length bytes into our buffer. */
    private final class RdmaReadRequest extends ChannelRequest {
        RdmaReadRequest(SMB2FileId fileId, long offset, int length, List<BufferDescriptorV1> descriptors) {
            super(SMB2MessageCommandCode.SMB2_READ, fileId, offset, length, descriptors);
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
            putChannel(buffer, 0); // RemainingBytes 0
            putDescriptors(buffer);
        }
    }
}
