package org.smbdirect.smbj.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.SMB2PacketData;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.mssmb2.messages.SMB2WriteRequest;
import com.hierynomus.protocol.commons.buffer.Buffer;
import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.protocol.transport.TransportLayer;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;

/**
 * One smbj connection over one SMB Direct connection. Every SMB2 message smbj writes is one SMB
 * Direct message (MS-SMB2 2.1: no Direct TCP header; the engine fragments up to the peer's
 * MaxFragmentedSize, MS-SMBD 3.1.5.4), and every message the engine delivers goes to smbj's
 * packet handlers, except that:
 * <ul>
 * <li>a READ or WRITE request of at least the threshold (or too large to travel inline) is sent
 * through the RDMA channel (MS-SMB2 3.2.4.6, 3.2.4.7, {@link RdmaChannel}), which ends its
 * registration when its response arrives, before smbj sees the response, and hands a READ's data
 * to smbj with it;</li>
 * <li>responses are checked before smbj gets them ({@link ResponseChecks}): one with a bad
 * signature ends the connection with an exception saying so, where smbj alone would drop it and
 * leave the caller waiting for its timeout.</li>
 * </ul>
 */
final class SmbDirectTransportLayer
        implements TransportLayer<SMBPacket<?, ?>>, ConnectionHandler, MessageSender, FaultHandler {
    private static final System.Logger LOG = System.getLogger(SmbDirectTransportLayer.class.getName());
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(60);
    /** smbj connects to 445 unless told otherwise: the transport takes it as "SMB Direct's port". */
    private static final int SMB_PORT = 445;

    /** The layers of this layer's SmbjTransport open now: joined once connected, left once closed. */
    private final Set<SmbDirectTransportLayer> open;
    private final SmbDirect transport;
    private final PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers;
    private final SmbConfig config;
    private final SmbjOptions options;
    /** smbj's connection: smbj makes its transport layer in its Connection's constructor. */
    private final Connection smbj;
    private final ResponseChecks checks;
    private final RdmaChannel channel;
    private volatile SmbDirectConnection connection;
    private volatile boolean closing;
    /** The server's message this transport ended at, or {@code null} while it carries on. */
    private volatile Exception broken;

    SmbDirectTransportLayer(SmbDirect transport, SmbjOptions options, Statistics statistics,
            Set<SmbDirectTransportLayer> open, PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers,
            SmbConfig config) {
        this.open = open;
        this.transport = transport;
        this.handlers = handlers;
        this.config = config;
        this.options = options;
        if (handlers.getReceiver() instanceof Connection) {
            SmbjInternals.check();
            smbj = (Connection) handlers.getReceiver();
        } else {
            smbj = null;
        }
        Smb2Signing signing = new Smb2Signing(config.getSecurityProvider());
        SmbjSessions sessions = new SmbjSessions(smbj);
        ResponseSignatures signatures = new ResponseSignatures(signing, options.strictSignatures(),
                statistics.toleratedReadSignatures, this::peer);
        this.checks = new ResponseChecks(handlers, smbj != null, sessions, signing, signatures, statistics, this);
        this.channel = new RdmaChannel(smbj, options, statistics, signing, sessions, checks, this);
        if (smbj != null) {
            // smbj's Connection builds its response chain, with this converter, right after it made its
            // transport layer; what converts READ responses must be in place before the first one.
            smbj.setMessageConverter(new RdmaMessageConverter(channel));
        }
    }

    /** The SMB Direct connection, once connected. */
    SmbDirectConnection connection() {
        return connection;
    }

    /** The server, as the log names it. */
    private String peer() {
        SmbDirectConnection c = connection;
        return c == null ? "(not connected)" : String.valueOf(c.remoteAddress());
    }

    Connection smbjConnection() {
        return smbj;
    }

    /** The RDMA channel (tests). */
    RdmaChannel rdmaChannel() {
        return channel;
    }

    /** Registrations made ahead for the next READ and WRITE (one per part). */
    int registeredAhead() {
        return channel.registeredAhead();
    }

    @Override
    public void connect(InetSocketAddress remoteAddress) throws IOException {
        if (remoteAddress.isUnresolved()) {
            throw new IOException("cannot resolve the host name " + remoteAddress.getHostString());
        }
        // port 0: the engine's default for the provider's transport (445, or 5445 on iWARP)
        int port = remoteAddress.getPort() == SMB_PORT ? 0 : remoteAddress.getPort();
        InetSocketAddress target = new InetSocketAddress(remoteAddress.getAddress(), port);
        String where = remoteAddress.getAddress().getHostAddress() + ":" + (port == 0 ? transport.defaultPort() : port);
        try {
            SmbDirectConnection c = transport.connect(target, this, options.connectTimeout());
            Limits limits = Limits.of(c.parameters(), options, config.isEncryptData());
            channel.connected(c, limits);
            connection = c;
            open.add(this);
            LOG.log(System.Logger.Level.DEBUG, () -> "SMB Direct to " + where + ": " + limits);
        } catch (SmbDirectException e) {
            throw new IOException("no SMB Direct connection to " + where + " over " + transport.provider() + ": "
                    + e.getMessage() + ". Does the server have SMB Direct, and does it listen on this port "
                    + "(445 on InfiniBand and RoCE, 5445 on iWARP)?", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while connecting to " + where, e);
        }
    }

    @Override
    public void write(SMBPacket<?, ?> packet) throws TransportException {
        Exception fault = broken;
        if (fault != null) {
            throw afterFault(fault, "cannot send " + packet);
        }
        SmbDirectConnection c = connection;
        if (c == null) {
            throw new TransportException("the SMB Direct connection is not open: cannot send " + packet);
        }
        if (!c.isOpen()) {
            // a loss smbj has not heard of yet reads as the loss, as it does for a request in flight
            Optional<ConnectionLoss> loss = c.loss().filter(l -> l.reason() != TerminationReason.LOCAL_CLOSE);
            throw loss.isPresent() ? lost(c, loss.get(), packet)
                    : new TransportException("the SMB Direct connection is closed: cannot send " + packet);
        }
        if (packet instanceof SMB2Packet) {
            SMB2Packet inner = ((SMB2Packet) packet).getPacket();
            if (inner instanceof SMB2ReadRequest || inner instanceof SMB2WriteRequest) {
                if (channel.readOrWrite(c, (SMB2Packet) packet, inner)) {
                    return;
                }
            }
        }
        Buffer<?> data = handlers.getSerializer().write(packet);
        if (data.available() > c.parameters().maxFragmentedSendSize()) {
            throw new TransportException(packet + " is " + data.available() + " bytes, more than SMB Direct carries in "
                    + "one message to this server (MaxFragmentedSendSize " + c.parameters().maxFragmentedSendSize() + ")");
        }
        send(c, ByteBuffer.wrap(data.array(), data.rpos(), data.available()), packet);
    }

    /**
     * A request the connection's end kept from going out. When this transport ended the connection
     * after a faulty message from the server, while the request was being sent (between the parts
     * of a split one, say), that message is the reason, as it is for the requests smbj waits on:
     * not the close it caused.
     */
    @Override
    public TransportException lost(SmbDirectConnection c, ConnectionLostException e, SMBPacket<?, ?> packet) {
        Exception fault = broken;
        if (fault != null) {
            return afterFault(fault, packet + " was not sent");
        }
        TransportException t = lost(c, e.loss(), packet);
        t.initCause(e);
        return t;
    }

    private static TransportException afterFault(Exception fault, String what) {
        return new TransportException("the SMB Direct connection was closed after a faulty message from the server ("
                + fault.getMessage() + "): " + what, fault);
    }

    private static TransportException lost(SmbDirectConnection c, ConnectionLoss loss, SMBPacket<?, ?> packet) {
        return new TransportException(lostText(c, loss) + "; " + packet + " was not sent");
    }

    /** What smbj and its callers read when the connection ended other than by this side's close. */
    private static String lostText(SmbDirectConnection c, ConnectionLoss loss) {
        return "the SMB Direct connection to " + c.remoteAddress() + " was lost: " + loss.message();
    }

    /**
     * Hands the message to the engine (a fresh array per packet, which nothing changes afterwards)
     * and returns without waiting for the send to complete, as smbj's TCP transport returns once
     * the socket took the bytes. A send that fails later fails with the connection, which smbj learns
     * of through {@link #onConnectionLost}. When the connection already holds maxPendingSends
     * messages, the caller waits for room (within {@link #SEND_TIMEOUT}).
     */
    @Override
    public void send(SmbDirectConnection c, ByteBuffer message, SMBPacket<?, ?> packet) throws TransportException {
        try {
            for (;;) {
                if (!c.isWritable()) {
                    c.writable().toCompletableFuture().get(SEND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                }
                try {
                    c.send(message).whenComplete((v, e) -> {
                        if (e != null) {
                            LOG.log(System.Logger.Level.DEBUG, () -> "sending " + packet + " failed: " + e);
                        }
                    });
                    return;
                } catch (IllegalStateException full) {
                    // another thread took the room meanwhile: wait again
                }
            }
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ConnectionLostException) {
                throw lost(c, (ConnectionLostException) e.getCause(), packet);
            }
            throw new TransportException("sending " + packet + " over SMB Direct failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new TransportException("no room to send " + packet + " within " + SEND_TIMEOUT.toSeconds() + " s: "
                    + "the SMB Direct connection to " + c.remoteAddress() + " does not drain", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("interrupted while sending " + packet, e);
        }
    }

    /**
     * Non-blocking: a response is copied, checked and handed to smbj, which completes the waiting
     * request's promise; the RDMA channel's registration is deregistered (a system call, no
     * waiting). So responses are taken on the thread that takes the completions, without a
     * hand-over to an engine thread. (smbj hands server notifications such as oplock breaks to its
     * event bus's listeners on this thread too: they must not block either.)
     */
    @Override
    public boolean nonBlocking() {
        return true;
    }

    @Override
    public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
        if (broken != null) {
            return; // what arrives after a faulty message is not looked at
        }
        byte[] received = new byte[message.remaining()];
        message.get(received);
        byte[] bytes = ResponseChecks.withoutTrailingBytes(received);
        PendingRequest later = null; // a request whose registration ends once smbj has the response
        try {
            boolean merged = false; // a split request's response, made here from parts checked one by one
            if (Smb2Messages.isSmb2(bytes)) {
                long messageId = Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID);
                PendingRequest p = channel.pending(messageId);
                if (Smb2Messages.i32(bytes, Smb2Messages.NEXT_COMMAND) != 0) {
                    channel.compounded(bytes, invalidatedToken);
                } else if (p != null && p.split != null) {
                    bytes = channel.partArrived(p, bytes, invalidatedToken);
                    if (bytes == null) {
                        return;
                    }
                    merged = true;
                    if (p.endsAfterHandOver) {
                        later = p; // the last part's, with the split's buffer
                    }
                } else if (p != null && channel.regionsOfTheirOwn()) {
                    later = channel.completed(messageId, p, bytes);
                } else if (p != null) {
                    channel.answered(messageId, p, bytes, invalidatedToken);
                }
            }
            if (!handlers.getPacketFactory().canHandle(bytes)) {
                fault(new TransportException("the server sent " + bytes.length + " bytes that are no SMB message"));
                return;
            }
            SMBPacketData<?> data = handlers.getPacketFactory().read(bytes);
            if (data instanceof SMB2PacketData && !merged) {
                data = checks.checked((SMB2PacketData) data, bytes);
                if (data == null) {
                    // a bad signature: the READ's data, if any, is dropped with the response
                    channel.takeRdmaReadData(Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID));
                    return;
                }
            }
            handlers.getReceiver().handle(data);
        } catch (Exception | LinkageError e) {
            LOG.log(System.Logger.Level.WARNING, "a message from the server could not be handled: " + e, e);
            fault(e instanceof Exception ? (Exception) e : new TransportException(e.toString(), e));
        } finally {
            if (later != null) {
                channel.endAfterHandOver(later, invalidatedToken);
            }
        }
    }

    /**
     * A message from the server this transport cannot go on after (not SMB, malformed, a bad
     * signature, data it cannot have moved): the transport stops there, as smbj's TCP transport
     * stops reading at such a message. Later sends fail saying why, {@link #isConnected()} is
     * false, the SMB Direct connection ends (and with it every registration), and smbj fails its
     * waiting requests with the reason, once.
     */
    @Override
    public void fault(Exception e) {
        if (broken != null) {
            return;
        }
        broken = e;
        SmbDirectConnection c = connection;
        if (c != null) {
            c.closeAsync(); // this is the connection's completion thread: no waiting here
        }
        handlers.getReceiver().handleError(e);
    }

    @Override
    public void onConnectionLost(SmbDirectConnection c, ConnectionLoss loss) {
        channel.releaseAll();
        open.remove(this);
        if (!closing && broken == null) {
            handlers.getReceiver().handleError(new TransportException(lostText(c, loss)));
        }
    }

    @Override
    public void disconnect() throws IOException {
        closing = true;
        SmbDirectConnection c = connection;
        if (c != null) {
            c.close();
        }
        channel.releaseAll();
        open.remove(this);
    }

    /**
     * Ends the SMB Direct connection under smbj, which learns it as a lost connection: its waiting
     * requests fail at once (the transport service is going away).
     */
    void shutDown() {
        SmbDirectConnection c = connection;
        if (c != null) {
            c.close();
        }
    }

    @Override
    public boolean isConnected() {
        SmbDirectConnection c = connection;
        return broken == null && c != null && c.isOpen();
    }
}
