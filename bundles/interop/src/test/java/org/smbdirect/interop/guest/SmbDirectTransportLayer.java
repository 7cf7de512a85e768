package org.smbdirect.interop.guest;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.OptionalInt;

import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

import com.hierynomus.protocol.commons.buffer.Buffer;
import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.protocol.transport.TransportLayer;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.transport.TransportLayerFactory;

/**
 * smbj's transport over an SMB Direct connection of the engine: each SMB2 message smbj writes is
 * one SMB Direct message (no 4-byte Direct TCP header, MS-SMB2 2.1), fragmented by the engine up
 * to the peer's MaxFragmentedSize; each message the engine delivers is handed to smbj's packet
 * factory and receiver. The port smbj asks for is replaced by the engine's default port for its
 * transport type (445 on InfiniBand and RoCE, 5445 on iWARP) when smbj asks for 445, its default.
 *
 * <p>Test code of the interop suite; the product bundle for smbj is issue 14's.
 */
final class SmbDirectTransportLayer implements TransportLayer<SMBPacket<?, ?>>, ConnectionHandler {
    private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(60);

    private final SmbDirect engine;
    private final PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers;
    private volatile SmbDirectConnection connection;
    private volatile boolean closing;

    private SmbDirectTransportLayer(SmbDirect engine, PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers) {
        this.engine = engine;
        this.handlers = handlers;
    }

    /** The factory to give {@code SmbConfig.builder().withTransportLayerFactory(...)}. */
    static TransportLayerFactory<SMBPacketData<?>, SMBPacket<?, ?>> factory(SmbDirect engine, SmbDirectTransportLayer[] last) {
        return (handlers, config) -> {
            SmbDirectTransportLayer t = new SmbDirectTransportLayer(engine, handlers);
            last[0] = t;
            return t;
        };
    }

    /** The SMB Direct connection under smbj's, once connected. */
    SmbDirectConnection connection() {
        return connection;
    }

    @Override
    public void connect(InetSocketAddress remoteAddress) throws IOException {
        int port = remoteAddress.getPort() == 445 ? engine.defaultPort() : remoteAddress.getPort();
        try {
            connection = engine.connect(new InetSocketAddress(remoteAddress.getAddress(), port), this, CONNECT_TIMEOUT);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while connecting to " + remoteAddress, e);
        }
    }

    @Override
    public void write(SMBPacket<?, ?> packet) throws TransportException {
        SmbDirectConnection c = connection;
        if (c == null || !c.isOpen()) {
            throw new TransportException("SMB Direct connection is not open: cannot write " + packet);
        }
        Buffer<?> data = handlers.getSerializer().write(packet);
        try {
            c.sendAndWait(ByteBuffer.wrap(data.array(), data.rpos(), data.available()), SEND_TIMEOUT);
        } catch (SmbDirectException | RuntimeException e) {
            throw new TransportException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException(e);
        }
    }

    @Override
    public void disconnect() throws IOException {
        SmbDirectConnection c = connection;
        closing = true;
        if (c != null) {
            c.close();
        }
    }

    @Override
    public boolean isConnected() {
        SmbDirectConnection c = connection;
        return c != null && c.isOpen();
    }

    @Override
    public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
        byte[] bytes = new byte[message.remaining()];
        message.get(bytes);
        if (Boolean.getBoolean("interop.trace")) {
            ByteBuffer h = ByteBuffer.wrap(bytes).order(java.nio.ByteOrder.LITTLE_ENDIAN);
            System.out.println("smbj <- " + bytes.length + " bytes" + (bytes.length >= 64 ? ", command " + h.getShort(12)
                    + ", status 0x" + Integer.toHexString(h.getInt(8)) + ", flags 0x" + Integer.toHexString(h.getInt(16)) + ", message id " + h.getLong(24) : "")
                    + ", invalidated " + invalidatedToken + " on " + Thread.currentThread().getName());
        }
        try {
            if (!handlers.getPacketFactory().canHandle(bytes)) {
                handlers.getReceiver().handleError(new TransportException("not an SMB message: " + bytes.length + " bytes"));
                return;
            }
            handlers.getReceiver().handle(handlers.getPacketFactory().read(bytes));
        } catch (Exception | LinkageError e) {
            System.out.println("smbj could not take a message from the engine: " + e);
            handlers.getReceiver().handleError(e);
        }
    }

    @Override
    public void onConnectionLost(SmbDirectConnection c, ConnectionLoss loss) {
        if (closing) {
            return;
        }
        handlers.getReceiver().handleError(new TransportException("SMB Direct connection lost: " + loss));
    }
}
