package org.smbdirect.smbj.internal;

import com.hierynomus.mssmb2.SMB2MessageCommandCode;
import com.hierynomus.mssmb2.SMB2MessageConverter;
import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.SMB2PacketData;
import com.hierynomus.mssmb2.messages.SMB2NegotiateResponse;
import com.hierynomus.mssmb2.messages.SMB2ReadResponse;
import com.hierynomus.protocol.commons.buffer.Buffer;
import com.hierynomus.smb.SMBPacket;

/**
 * Turns responses into smbj's packets as smbj does, with two differences that the RDMA channel
 * needs: a READ response whose data the server RDMA-wrote carries that data for smbj (MS-SMB2
 * 2.2.20: DataLength is 0, DataRemaining says how much moved), and the NEGOTIATE response's
 * MaxReadSize, MaxWriteSize and MaxTransactSize are reported to smbj no larger than the SMB Direct
 * connection carries, so that smbj sizes its requests for it. The bytes smbj verifies and hashes
 * (SMB 3.1.1 preauthentication integrity) stay the server's.
 */
final class RdmaMessageConverter extends SMB2MessageConverter {
    private final RdmaChannel channel;

    RdmaMessageConverter(RdmaChannel channel) {
        this.channel = channel;
    }

    @Override
    public SMB2Packet readPacket(SMBPacket<?, ?> requestPacket, SMB2PacketData packetData) throws Buffer.BufferException {
        SMB2MessageCommandCode command = packetData.getHeader().getMessage();
        boolean success = packetData.getHeader().getStatusCode() == 0;
        if (command == SMB2MessageCommandCode.SMB2_NEGOTIATE && success) {
            return new LimitedNegotiateResponse(packetData, channel.limits());
        }
        if (command == SMB2MessageCommandCode.SMB2_READ && success) {
            byte[] data = channel.takeRdmaReadData(packetData.getHeader().getMessageId());
            if (data != null) {
                return new RdmaReadResponse(packetData, data);
            }
        }
        return super.readPacket(requestPacket, packetData);
    }

    /** MS-SMB2 2.2.20 with the data that arrived by RDMA Write. */
    private static final class RdmaReadResponse extends SMB2ReadResponse {
        private final byte[] data;

        RdmaReadResponse(SMB2PacketData packetData, byte[] data) throws Buffer.BufferException {
            read(packetData);
            this.data = data;
        }

        @Override
        public int getDataLength() {
            return data.length;
        }

        @Override
        public byte[] getData() {
            return data;
        }
    }

    /** MS-SMB2 2.2.4, its three size limits capped by what the SMB Direct connection carries. */
    private static final class LimitedNegotiateResponse extends SMB2NegotiateResponse {
        private final Limits limits;

        LimitedNegotiateResponse(SMB2PacketData packetData, Limits limits) throws Buffer.BufferException {
            read(packetData);
            this.limits = limits;
        }

        @Override
        public int getMaxReadSize() {
            return limits.maxReadSize(getDialect(), super.getMaxReadSize());
        }

        @Override
        public int getMaxWriteSize() {
            return limits.maxWriteSize(getDialect(), super.getMaxWriteSize());
        }

        @Override
        public int getMaxTransactSize() {
            return limits.maxTransactSize(super.getMaxTransactSize());
        }
    }
}
