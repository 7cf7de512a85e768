package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * The other end of a bulk session played by the test over a plain SMB Direct connection: it
 * sends control messages of its choosing (well-formed, out of order, or garbage) and sees exactly
 * what the bulk session sends.
 */
final class RawBulkPeer implements ConnectionHandler, AutoCloseable {
    final BlockingQueue<byte[]> messages = new LinkedBlockingQueue<>();
    final BlockingQueue<ConnectionLoss> losses = new LinkedBlockingQueue<>();
    final BlockingQueue<SmbDirectConnection> connections = new LinkedBlockingQueue<>();
    /** The raw side's end. */
    BulkFixture.End raw;
    /** The bulk side's end. */
    BulkFixture.End bulk;
    SmbDirectConnection connection;
    /** The bulk session, once it opened. */
    Session session;
    /** What the bulk session's handler was given. */
    final BulkFixture.Received received = new BulkFixture.Received();
    private AutoCloseable listener;

    /** The raw peer listens; the bulk side connects; the raw peer answers HELLO with {@code hello}. */
    static RawBulkPeer listening(BulkFixture fx, BulkFixture.Side rawSide, BulkFixture.Side bulkSide, Hello hello)
            throws Exception {
        RawBulkPeer p = new RawBulkPeer();
        p.raw = fx.end(rawSide);
        p.bulk = fx.end(bulkSide);
        SmbDirectListener l = p.raw.transport.listen(p.raw.anyAddress(), c -> {
            p.connections.add(c);
            return p;
        });
        p.listener = l;
        CompletionStage<BulkSession> opening = p.bulk.bulk.connect(l.localAddress(), p.received);
        p.connection = p.connections.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(p.connection, "the bulk side did not connect");
        p.expect(Type.HELLO);
        if (hello != null) {
            p.send(ControlMessage.hello(hello));
            p.session = (Session) BulkFixture.get(opening);
        }
        return p;
    }

    /** As above, answering with a HELLO that can read, 4 in flight, 1 GiB, 8 MiB, window 64. */
    static RawBulkPeer listening(BulkFixture fx, BulkFixture.Side rawSide, BulkFixture.Side bulkSide)
            throws Exception {
        return listening(fx, rawSide, bulkSide, new Hello(true, 4, 1 << 30, 8 << 20, 64));
    }

    /** The bulk side listens; the raw peer connects and, when {@code hello} is given, says HELLO. */
    static RawBulkPeer connecting(BulkFixture fx, BulkFixture.Side rawSide, BulkFixture.Side bulkSide, Hello hello)
            throws Exception {
        RawBulkPeer p = new RawBulkPeer();
        p.raw = fx.end(rawSide);
        p.bulk = fx.end(bulkSide);
        BlockingQueue<BulkSession> accepted = new LinkedBlockingQueue<>();
        BulkListener l = p.bulk.bulk.listen(p.bulk.anyAddress(), s -> {
            accepted.add(s);
            return p.received;
        });
        p.listener = l;
        p.connection = p.raw.transport.connect(l.localAddress(), p, BulkFixture.TIMEOUT);
        p.expect(Type.HELLO);
        if (hello != null) {
            p.send(ControlMessage.hello(hello));
            p.session = (Session) accepted.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(p.session, "the bulk listener surfaced no session");
        }
        return p;
    }

    @Override
    public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
        byte[] copy = new byte[message.remaining()];
        message.duplicate().get(copy);
        messages.add(copy);
    }

    @Override
    public void onConnectionLost(SmbDirectConnection c, ConnectionLoss loss) {
        losses.add(loss);
    }

    /** Sends a message and waits until it is sent. */
    void send(ByteBuffer message) throws Exception {
        connection.sendAndWait(message, BulkFixture.TIMEOUT);
    }

    /**
     * Sends a message without waiting: after a message that ends the connection, its own
     * completion may be flushed by the disconnect it caused.
     */
    void sendLast(ByteBuffer message) {
        connection.send(message);
    }

    /** The next message the bulk side sent, which must be of this type. */
    ControlMessage expect(Type type) throws Exception {
        byte[] b = messages.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(b, "no " + type + " from the bulk side");
        ControlMessage m = ControlMessage.decode(ByteBuffer.wrap(b));
        assertEquals(type, m.type, "got " + m);
        return m;
    }

    /** Sends DATA. */
    void data(long sequence, ByteBuffer payload) throws Exception {
        send(ControlMessage.encode(Type.DATA, 0, sequence, payload.remaining(), List.of(), payload));
    }

    /** Sends COMPLETE or NOBUFS. */
    void signal(Type type, long sequence, boolean fromSender) throws Exception {
        send(ControlMessage.signal(type, sequence, fromSender));
    }

    /** Sends a READ_REQUEST for the data: first part inline, the rest as registered here. */
    void readRequest(long sequence, ByteBuffer data, int firstPart, List<BufferDescriptorV1> rest) throws Exception {
        send(ControlMessage.encode(Type.READ_REQUEST, 0, sequence, data.remaining(), rest,
                data.slice(data.position(), firstPart)));
    }

    /** The reason the connection ended, as the raw side saw it. */
    ConnectionLoss awaitLoss() throws InterruptedException {
        ConnectionLoss l = losses.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        assertNotNull(l, "the connection did not end");
        return l;
    }

    @Override
    public void close() throws Exception {
        if (connection != null) {
            connection.close();
        }
        listener.close();
    }
}
