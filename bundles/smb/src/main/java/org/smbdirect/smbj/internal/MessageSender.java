package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;

import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.smb.SMBPacket;

/**
 * What the RDMA channel needs of the transport layer it works for: sending a request as the layer
 * sends smbj's own, and saying why one was not sent.
 */
interface MessageSender {

    /**
     * Hands one SMB2 message to the engine as one SMB Direct message, waiting for room where the
     * connection has none.
     *
     * @param c the connection
     * @param message the message, which nothing changes afterwards
     * @param packet smbj's packet it stands for, as messages name it
     * @throws TransportException when it cannot be sent
     */
    void send(SmbDirectConnection c, ByteBuffer message, SMBPacket<?, ?> packet) throws TransportException;

    /**
     * Why a request the connection's end kept from going out was not sent.
     *
     * @param c the connection
     * @param e the engine's exception
     * @param packet smbj's packet
     * @return the exception for smbj
     */
    TransportException lost(SmbDirectConnection c, ConnectionLostException e, SMBPacket<?, ?> packet);
}
