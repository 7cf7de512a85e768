package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConnection;

/** An upper layer that records what the engine tells it. */
final class Recorder implements ConnectionHandler, AcceptHandler {
    /** A delivered message: a copy of its bytes and the invalidated token. */
    static final class Message {
        final byte[] data;
        final OptionalInt token;

        Message(byte[] data, OptionalInt token) {
            this.data = data;
            this.token = token;
        }
    }

    final BlockingQueue<Message> messages = new LinkedBlockingQueue<>();
    final BlockingQueue<ConnectionLoss> losses = new LinkedBlockingQueue<>();
    final BlockingQueue<SmbDirectConnection> accepted = new LinkedBlockingQueue<>();
    /** Optional reaction run inside onMessage, e.g. to answer from the handler. */
    volatile BiConsumer<SmbDirectConnection, byte[]> onMessage;

    @Override
    public void onMessage(SmbDirectConnection connection, ByteBuffer message, OptionalInt invalidatedToken) {
        byte[] copy = new byte[message.remaining()];
        message.duplicate().get(copy);
        messages.add(new Message(copy, invalidatedToken));
        BiConsumer<SmbDirectConnection, byte[]> r = onMessage;
        if (r != null) {
            r.accept(connection, copy);
        }
    }

    /** Optional reaction run inside onConnectionLost, to observe the connection at that moment. */
    volatile BiConsumer<SmbDirectConnection, ConnectionLoss> onLoss;

    @Override
    public void onConnectionLost(SmbDirectConnection connection, ConnectionLoss loss) {
        BiConsumer<SmbDirectConnection, ConnectionLoss> r = onLoss;
        if (r != null) {
            r.accept(connection, loss);
        }
        losses.add(loss);
    }

    @Override
    public ConnectionHandler onConnection(SmbDirectConnection connection) {
        accepted.add(connection);
        return this;
    }

    Message message() throws InterruptedException {
        Message m = messages.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(m, "no message delivered");
        return m;
    }

    ConnectionLoss loss() throws InterruptedException {
        ConnectionLoss l = losses.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(l, "no connection loss reported");
        return l;
    }

    SmbDirectConnection connection() throws InterruptedException {
        SmbDirectConnection c = accepted.poll(Fixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(c, "no connection accepted");
        return c;
    }
}
