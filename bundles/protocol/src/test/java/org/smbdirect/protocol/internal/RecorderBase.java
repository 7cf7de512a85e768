package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConnection;

/** An upper layer that hands each message's bytes to {@link #record}. */
abstract class RecorderBase implements ConnectionHandler, AcceptHandler {
    final BlockingQueue<SmbDirectConnection> connections = new LinkedBlockingQueue<>();

    abstract void record(byte[] data);

    @Override
    public void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken) {
        byte[] copy = new byte[message.remaining()];
        message.get(copy);
        record(copy);
    }

    @Override
    public ConnectionHandler onConnection(SmbDirectConnection connection) {
        connections.add(connection);
        return this;
    }
}
