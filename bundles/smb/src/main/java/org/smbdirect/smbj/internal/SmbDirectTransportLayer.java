package org.smbdirect.smbj.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import javax.crypto.SecretKey;

import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

import com.hierynomus.mssmb2.SMB2DecryptedPacketData;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.SMB2PacketData;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.mssmb2.messages.SMB2WriteRequest;
import com.hierynomus.protocol.commons.buffer.Buffer;
import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.protocol.transport.TransportLayer;
import com.hierynomus.security.SecurityException;
import com.hierynomus.smb.SMBBuffer;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.PacketEncryptor;
import com.hierynomus.smbj.connection.PacketSignatory;
import com.hierynomus.smbj.connection.SessionTable;
import com.hierynomus.smbj.session.Session;

/**
 * One smbj connection over one SMB Direct connection. Every SMB2 message smbj writes is one SMB
 * Direct message (MS-SMB2 2.1: no Direct TCP header; the engine fragments up to the peer's
 * MaxFragmentedSize, MS-SMBD 3.1.5.4), and every message the engine delivers goes to smbj's
 * packet handlers, except that:
 * <ul>
 * <li>a READ or WRITE request of at least the threshold (or too large to travel inline) is sent
 * through the RDMA channel (MS-SMB2 3.2.4.6, 3.2.4.7): its data is copied into a registered
 * buffer (MS-SMBD 3.1.4.3), the request carries the buffer's descriptors instead of inline data,
 * and is signed here as smbj would have signed it;</li>
 * <li>when the response to such a request arrives, the registration ends before smbj sees the
 * response: the server invalidated it (Send with Invalidate), or this side deregisters it, which
 * invalidates it (MS-SMBD 3.1.4.4); a READ's data is handed to smbj with the response;</li>
 * <li>signed responses are verified here too (MS-SMB2 3.2.5.1.3, {@link ResponseSignatures}), so
 * that one with a bad signature ends the connection with an exception saying so, where smbj alone
 * would drop it and leave the caller waiting for its timeout; ksmbd's signature of a READ
 * response without data is accepted unless the options are strict; an answer
 * STATUS_USER_SESSION_DELETED, which the server cannot sign, is taken unverified and signed here
 * for smbj, so the caller gets that status at once.</li>
 * </ul>
 */
final class SmbDirectTransportLayer implements TransportLayer<SMBPacket<?, ?>>, ConnectionHandler {
    private static final System.Logger LOG = System.getLogger(SmbDirectTransportLayer.class.getName());
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(60);
    /** smbj connects to 445 unless told otherwise: the transport takes it as "SMB Direct's port". */
    private static final int SMB_PORT = 445;

    private final SmbjTransportImpl owner;
    private final SmbDirect transport;
    private final PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers;
    private final SmbConfig config;
    private final SmbjOptions options;
    private final Statistics statistics;
    private final Smb2Signing signing;
    private final ResponseSignatures signatures;
    /** smbj's connection: smbj makes its transport layer in its Connection's constructor. */
    private final Connection smbj;
    private final Map<Long, PendingRequest> pending = new ConcurrentHashMap<>();
    private final Map<Long, byte[]> rdmaReadData = new ConcurrentHashMap<>();
    private final BufferPool buffers = new BufferPool();
    private final RegistrationAhead ahead = new RegistrationAhead(buffers);
    /**
     * Whether registrations are memory regions of their own (the provider has no memory windows
     * and cannot send with invalidate): then registering and deregistering are system calls, so
     * registrations are made ahead ({@link #registerAhead}) and a request's end after smbj has its
     * response.
     */
    private volatile boolean regionsOfTheirOwn;
    /** Whether registrations are made ahead: where they are regions of their own, unless the options say not. */
    private volatile boolean registerAhead;
    /** smbj's session table (see {@link SmbjInternals#sessionTable}), once needed. */
    private volatile SessionTable sessions;
    private volatile SmbDirectConnection connection;
    private volatile Limits limits;
    private volatile boolean closing;
    /** The server's message this transport ended at, or {@code null} while it carries on. */
    private volatile Exception broken;
    /** Tests only: runs after each part of a split request is sent, before the next. */
    volatile Runnable afterPartSent;

    SmbDirectTransportLayer(SmbjTransportImpl owner, PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers,
            SmbConfig config) {
        this.owner = owner;
        this.transport = owner.transport();
        this.handlers = handlers;
        this.config = config;
        this.options = owner.options();
        this.statistics = owner.counters();
        this.signing = new Smb2Signing(config.getSecurityProvider());
        this.signatures = new ResponseSignatures(signing, options.strictSignatures(), statistics.toleratedReadSignatures,
                this::peer);
        if (handlers.getReceiver() instanceof Connection) {
            SmbjInternals.check();
            smbj = (Connection) handlers.getReceiver();
            // smbj's Connection builds its response chain, with this converter, right after it made its
            // transport layer; what converts READ responses must be in place before the first one.
            smbj.setMessageConverter(new RdmaMessageConverter(this));
        } else {
            smbj = null;
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

    /** What the connection carries; set when connected, before smbj's NEGOTIATE. */
    Limits limits() {
        return limits;
    }

    /** Registrations made ahead for the next READ and WRITE (one per part). */
    int registeredAhead() {
        return ahead.count();
    }

    /** The data the server RDMA-wrote for a READ request, once its response arrived. */
    byte[] takeRdmaReadData(long messageId) {
        return rdmaReadData.remove(messageId);
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
            limits = Limits.of(c.parameters(), options, config.isEncryptData());
            regionsOfTheirOwn = !c.parameters().remoteInvalidate();
            registerAhead = regionsOfTheirOwn && options.registerAhead();
            connection = c;
            owner.opened(this);
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
                if (readOrWrite(c, (SMB2Packet) packet, inner)) {
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
     * Sends a READ or WRITE through the RDMA channel where it should go there; returns {@code false}
     * when it goes inline (after checking that it fits).
     */
    private boolean readOrWrite(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner) throws TransportException {
        boolean read = inner instanceof SMB2ReadRequest;
        int length = payload(inner);
        boolean encrypted = packet instanceof PacketEncryptor.EncryptedPacketWrapper;
        SMB2Dialect dialect = smbj == null ? SMB2Dialect.UNKNOWN : smbj.getNegotiatedProtocol().getDialect();
        Limits l = limits;
        boolean possible = !encrypted && smbj != null && (read ? l.rdmaReads(dialect) : l.rdmaWrites(dialect));
        int inline = read ? l.inlineRead : l.inlineWrite;
        if (possible && (length >= l.threshold || length > inline)) {
            rdmaChannel(c, packet, inner, read, l.channel(dialect));
            return true;
        }
        if (length > inline) {
            throw new TransportException(String.format("%s of %d bytes %s inline, and SMB Direct carries at most %d bytes "
                    + "of %s data in one message to this server%s", read ? "READ" : "WRITE", length,
                    encrypted ? "on an encrypted session must travel" : "would travel", inline, read ? "READ" : "WRITE",
                    encrypted ? " (MS-SMB2 2.2.43: no RDMA channel for an encrypted session without RDMA transforms); "
                            + "build smbj's SmbConfig withEncryptData(true) so that smbj sizes its requests for that" : ""));
        }
        (read ? statistics.inlineReads : statistics.inlineWrites).incrementAndGet();
        (read ? statistics.inlineReadBytes : statistics.inlineWriteBytes).addAndGet(length);
        return false;
    }

    /** SMB2MultiCreditPacket: the data is the payload the granted credits cover (MS-SMB2 3.1.5.2). */
    private static int payload(SMB2Packet inner) {
        return Math.min(inner.getMaxPayloadSize(),
                SMB2Packet.SINGLE_CREDIT_PAYLOAD_SIZE * Math.max(1, inner.getHeader().getCreditCharge()));
    }

    /** MS-SMB2 3.2.4.6 / 3.2.4.7 over MS-SMBD 3.1.4.3: register, describe, sign, send. */
    private void rdmaChannel(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner, boolean read, int channel)
            throws TransportException {
        // smbj's own request, serialized once: a WRITE takes its data from smbj's chunk provider here,
        // straight into the buffer
        int payload = payload(inner);
        // only where registrations are regions of their own are they made ahead (unless the options
        // say not); a WRITE's data goes straight into the buffer registered ahead for it
        RegistrationAhead.Ready made = !read && registerAhead ? ahead.take(false, payload) : null;
        ByteBuffer buffer = made != null ? made.buffer() : buffers.take(payload);
        byte[] request;
        int length;
        try {
            RequestCapture capture = new RequestCapture(read ? null : buffer);
            inner.write(capture);
            request = capture.head();
            length = Smb2Messages.i32(request, read ? Smb2Messages.READ_LENGTH : Smb2Messages.WRITE_LENGTH);
            if (length <= 0 || length > payload || !read && buffer.position() != length) {
                throw new IllegalStateException("smbj's " + (read ? "READ" : "WRITE") + " says Length " + length
                        + (read ? "" : " and carries " + buffer.position() + " bytes") + ", for " + payload + " bytes of credits");
            }
            if (read) {
                buffer.limit(length);
            } else {
                buffer.flip();
            }
        } catch (RuntimeException e) {
            if (made != null) {
                ahead.release(made, true);
            } else {
                buffers.give(buffer);
            }
            throw new TransportException("cannot send " + packet + " through the RDMA channel: " + e.getMessage(), e);
        }
        if (read && registerAhead) {
            made = ahead.take(true, length);
            if (made != null) {
                buffers.give(buffer);
                buffer = made.buffer();
            }
        }
        SplitRequest split = read ? SplitRead.of(request, buffer, options.readParts())
                : SplitWrite.of(request, buffer, options.writeParts());
        if (made != null && !made.fits(length, split)) {
            // other parts than the request before (another CreditCharge): the buffer stays this request's
            ahead.release(made, false);
            made = null;
        }
        RegisteredBuffer[] registered = made == null ? null : made.registrations();
        if (made != null) {
            (read ? statistics.readsRegisteredAhead : statistics.writesRegisteredAhead).incrementAndGet();
        }
        if (split != null) {
            split(c, packet, inner, request, split, read, channel, registered);
        } else {
            whole(c, packet, inner, request, buffer, length, read, channel, registered == null ? null : registered[0]);
        }
        if (registerAhead && (read || length == payload)) {
            // while the server serves this request, the next one's registration is made (a WRITE's
            // only when its Length is its payload, which the next WRITE's is looked up by: smbj
            // sizes a WRITE's payload to its data)
            ahead.prepare(c, read, length, split);
        }
    }

    /** A READ or WRITE through the RDMA channel as one request, on {@code madeAhead} when one was made ahead. */
    private void whole(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner, byte[] request, ByteBuffer buffer,
            int length, boolean read, int channel, RegisteredBuffer madeAhead) throws TransportException {
        long messageId = inner.getHeader().getMessageId();
        RegisteredBuffer registration = madeAhead;
        byte[] message;
        try {
            if (registration == null) {
                // the request below carries the descriptors: the registration reaches the device with it
                registration = c.registerForNextSend(buffer, read ? RemoteAccess.WRITE : RemoteAccess.READ);
            }
            List<BufferDescriptorV1> descriptors = registration.descriptors();
            message = read ? Smb2Messages.rdmaReadRequest(request, channel, descriptors)
                    : Smb2Messages.rdmaWriteRequest(request, channel, descriptors, length);
            if (packet instanceof PacketSignatory.SignedPacketWrapper) {
                signing.sign(message, signingKey(inner));
            }
        } catch (ConnectionLostException e) {
            buffers.release(registration, buffer);
            throw lost(c, e, packet);
        } catch (SmbDirectException | SecurityException | TransportException | RuntimeException e) {
            buffers.release(registration, buffer);
            throw new TransportException("cannot send " + packet + " through the RDMA channel: " + e.getMessage(), e);
        }
        // the response may arrive before the send completes: the request is pending first
        PendingRequest sent = new PendingRequest(read, length, buffer, registration);
        pending.put(messageId, sent);
        try {
            send(c, ByteBuffer.wrap(message), packet);
        } catch (TransportException e) {
            PendingRequest p = pending.remove(messageId);
            if (p != null) {
                buffers.release(p.registration, p.buffer);
            }
            throw e;
        }
        if (read) {
            sent.destination.prepare();
        }
        (read ? statistics.rdmaReads : statistics.rdmaWrites).incrementAndGet();
        if (!read) {
            statistics.rdmaWriteBytes.addAndGet(length);
        }
    }

    /**
     * A large READ or WRITE as several in flight ({@link SplitRequest}): each part gets its own
     * registration of its slice of the buffer, its own request, signed as smbj's would have been,
     * and is pending under its own message id until its response arrives.
     *
     * @param madeAhead the parts' registrations, made ahead (now this request's), or {@code null}
     */
    private void split(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner, byte[] request, SplitRequest split,
            boolean read, int channel, RegisteredBuffer[] madeAhead) throws TransportException {
        int n = split.parts();
        RegisteredBuffer[] registrations = madeAhead != null ? madeAhead : new RegisteredBuffer[n];
        byte[][] messages = new byte[n][];
        try {
            SecretKey key = packet instanceof PacketSignatory.SignedPacketWrapper ? signingKey(inner) : null;
            // the parts' responses are checked, and the one smbj gets signed, with the session's key
            Session session = session(inner.getHeader().getSessionId());
            split.signingKey = key != null || session == null ? key : session.getSigningKey(inner.getHeader(), false);
            for (int i = 0; i < n; i++) {
                if (registrations[i] == null) {
                    registrations[i] = c.registerForNextSend(split.buffer.slice(split.start(i), split.length(i)),
                            read ? RemoteAccess.WRITE : RemoteAccess.READ);
                }
                List<BufferDescriptorV1> descriptors = registrations[i].descriptors();
                messages[i] = read ? Smb2Messages.rdmaReadRequest(split.request(request, i), channel, descriptors)
                        : Smb2Messages.rdmaWriteRequest(split.request(request, i), channel, descriptors, split.length(i));
                if (key != null) {
                    signing.sign(messages[i], key);
                }
            }
        } catch (ConnectionLostException e) {
            releaseParts(registrations, split.buffer);
            throw lost(c, e, packet);
        } catch (SmbDirectException | SecurityException | TransportException | RuntimeException e) {
            releaseParts(registrations, split.buffer);
            throw new TransportException("cannot send " + packet + " through the RDMA channel: " + e.getMessage(), e);
        }
        for (int i = 0; i < n; i++) {
            pending.put(split.messageId(i), new PendingRequest(read, split.length(i), null, registrations[i], split, i));
        }
        for (int i = 0; i < n; i++) {
            try {
                send(c, ByteBuffer.wrap(messages[i]), packet);
            } catch (TransportException e) {
                // the parts sent get their responses; those not sent never will
                boolean none = i == 0;
                for (int j = i; j < n; j++) {
                    PendingRequest p = pending.remove(split.messageId(j));
                    if (p != null) {
                        ended(p, OptionalInt.empty());
                        if (!none && split.arrived(j, null)) {
                            giveBack(split);
                        }
                    }
                }
                if (none) {
                    giveBack(split);
                }
                throw e;
            }
            if (read) {
                statistics.rdmaReads.incrementAndGet();
            } else {
                statistics.rdmaWrites.incrementAndGet();
                statistics.rdmaWriteBytes.addAndGet(split.length(i));
            }
            Runnable hook = afterPartSent;
            if (hook != null) {
                hook.run();
            }
        }
        if (read) {
            ((SplitRead) split).destination.prepare();
        }
        (read ? statistics.splitReads : statistics.splitWrites).incrementAndGet();
    }

    private void releaseParts(RegisteredBuffer[] registrations, ByteBuffer buffer) {
        boolean reachable = false;
        for (RegisteredBuffer r : registrations) {
            reachable |= r != null && !buffers.release(r, null);
        }
        if (!reachable) {
            buffers.give(buffer);
        }
    }

    /**
     * A response to a part of a split READ or WRITE: checked, its registration ended; once every
     * part's response is in, the response smbj gets ({@link SplitRequest#response()}), else
     * {@code null}.
     */
    private byte[] partArrived(PendingRequest p, byte[] response, OptionalInt invalidatedToken)
            throws SecurityException {
        SplitRequest split = p.split;
        if (interim(response)) {
            split.interim(response);
            return null;
        }
        pending.remove(split.messageId(p.part));
        // where registrations are regions of their own, the last part's registration ends once smbj
        // has the response, as a whole request's does (onMessage)
        boolean endLater = regionsOfTheirOwn && split.lastToArrive();
        if (!endLater) {
            ended(p, invalidatedToken);
        }
        if (!partSignatureVerified(response, split) || !split.arrived(p.part, response)) {
            if (endLater) {
                ended(p, invalidatedToken);
            }
            return null;
        }
        boolean handedOver = false;
        try {
            byte[] merged = split.response();
            if (p.read && Smb2Messages.i32(merged, Smb2Messages.STATUS) == 0) {
                int moved = split.moved();
                byte[] data = ((SplitRead) split).destination.take(moved);
                split.buffer.get(0, data);
                rdmaReadData.put(split.messageId, data);
                statistics.rdmaReadBytes.addAndGet(moved);
            }
            if (split.signed() && split.signingKey != null) {
                signing.sign(merged, split.signingKey);
            }
            handedOver = endLater;
            p.endsAfterHandOver = endLater;
            return merged;
        } finally {
            if (!handedOver) {
                if (endLater) {
                    ended(p, invalidatedToken);
                }
                giveBack(split);
            }
        }
    }

    /** A part's response is checked here: smbj never sees it (MS-SMB2 3.2.5.1.3). */
    private boolean partSignatureVerified(byte[] response, SplitRequest split) throws SecurityException {
        SecretKey key = split.signingKey;
        if ((Smb2Messages.i32(response, Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_SIGNED) == 0 || key == null
                || sessionDeleted(response) || signatures.check(response, key) != ResponseSignatures.Verdict.FAILED) {
            return true;
        }
        statistics.signatureFailures.incrementAndGet();
        String what = String.format("the server's response to part of a %s (message id %d, status 0x%08x, %d bytes) "
                + "failed signature verification (MS-SMB2 3.2.5.1.3): discarded, and the connection closed",
                split.command, Smb2Messages.u64(response, Smb2Messages.MESSAGE_ID),
                Smb2Messages.i32(response, Smb2Messages.STATUS), response.length);
        LOG.log(System.Logger.Level.ERROR, what);
        fault(new TransportException(what));
        return false;
    }

    /**
     * A request the connection's end kept from going out. When this transport ended the connection
     * after a faulty message from the server, while the request was being sent (between the parts
     * of a split one, say), that message is the reason, as it is for the requests smbj waits on:
     * not the close it caused.
     */
    private TransportException lost(SmbDirectConnection c, ConnectionLostException e, SMBPacket<?, ?> packet) {
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

    /** smbj's session of that id, or {@code null} when it has none (yet, or any more). */
    private Session session(long sessionId) {
        SessionTable table = sessions;
        if (table == null) {
            // looked up reflectively once (smbj never replaces it), not for every message
            table = SmbjInternals.sessionTable(smbj);
            sessions = table;
        }
        return table.find(sessionId);
    }

    private SecretKey signingKey(SMB2Packet inner) throws TransportException {
        Session session = session(inner.getHeader().getSessionId());
        SecretKey key = session == null ? null : session.getSigningKey(inner.getHeader(), true);
        if (key == null) {
            throw new TransportException("no signing key for session " + inner.getHeader().getSessionId());
        }
        return key;
    }

    /**
     * Hands the message to the engine (a fresh array per packet, which nothing changes afterwards)
     * and returns without waiting for the send to complete, as smbj's TCP transport returns once
     * the socket took the bytes. A send that fails later fails with the connection, which smbj learns
     * of through {@link #onConnectionLost}. When the connection already holds maxPendingSends
     * messages, the caller waits for room (within {@link #SEND_TIMEOUT}).
     */
    private void send(SmbDirectConnection c, ByteBuffer message, SMBPacket<?, ?> packet) throws TransportException {
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
        byte[] bytes = received;
        int errorLength = Smb2Messages.errorResponseLength(received);
        if (errorLength > 0 && errorLength < received.length) {
            // ksmbd 6.1 sends some error responses (TREE_CONNECT's, for one) with the bytes of the
            // response it did not send behind them, and signs only the error response: those bytes
            // belong to no message, and smbj would count them into the signature and drop the response.
            LOG.log(System.Logger.Level.DEBUG, () -> "ignoring " + (received.length - errorLength)
                    + " bytes after an error response of " + errorLength + " (MS-SMB2 2.2.2)");
            bytes = java.util.Arrays.copyOf(received, errorLength);
        }
        PendingRequest later = null; // a request whose registration ends once smbj has the response
        try {
            boolean merged = false; // a split request's response, made here from parts checked one by one
            if (Smb2Messages.isSmb2(bytes)) {
                long messageId = Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID);
                PendingRequest p = pending.get(messageId);
                if (Smb2Messages.i32(bytes, Smb2Messages.NEXT_COMMAND) != 0) {
                    compounded(bytes, invalidatedToken);
                } else if (p != null && p.split != null) {
                    bytes = partArrived(p, bytes, invalidatedToken);
                    if (bytes == null) {
                        return;
                    }
                    merged = true;
                    if (p.endsAfterHandOver) {
                        later = p; // the last part's, with the split's buffer
                    }
                } else if (p != null && regionsOfTheirOwn) {
                    later = completed(messageId, p, bytes);
                } else if (p != null) {
                    answered(messageId, p, bytes, invalidatedToken);
                }
            }
            if (!handlers.getPacketFactory().canHandle(bytes)) {
                fault(new TransportException("the server sent " + bytes.length + " bytes that are no SMB message"));
                return;
            }
            SMBPacketData<?> data = handlers.getPacketFactory().read(bytes);
            if (data instanceof SMB2PacketData && !merged) {
                if (sessionDeleted(bytes)) {
                    data = passOnSessionDeleted((SMB2PacketData) data, bytes);
                } else {
                    data = signatureVerified((SMB2PacketData) data, bytes);
                    if (data == null) {
                        return;
                    }
                }
            }
            handlers.getReceiver().handle(data);
        } catch (Exception | LinkageError e) {
            LOG.log(System.Logger.Level.WARNING, "a message from the server could not be handled: " + e, e);
            fault(e instanceof Exception ? (Exception) e : new TransportException(e.toString(), e));
        } finally {
            if (later != null) {
                // where registrations are memory regions of their own, the registration ends once smbj
                // has the response, off the path of smbj's next request (after the server's
                // invalidation too: the region is the kernel's until deregistered); the READ's data was
                // taken out of the buffer before, and the buffer returns to the pool once deregistered
                ended(later, invalidatedToken);
                if (later.split != null) {
                    giveBack(later.split);
                }
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
    private void fault(Exception e) {
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

    /**
     * MS-SMB2 3.2.5.1.9: a compounded response (a server may compound responses to requests that
     * were not, 3.3.4.1.3). Each of its responses that answers an RDMA-channel request ends that
     * request here, as a response of its own would, so that smbj, which splits the chain itself,
     * finds each READ's data; a Send with Invalidate invalidated at most one of their
     * registrations, and the others are invalidated locally.
     *
     * @throws IllegalStateException for a chain that leaves its message, or that carries part of
     *         a request this transport split (the parts' responses cannot be merged inside a chain)
     */
    private void compounded(byte[] chain, OptionalInt invalidatedToken) {
        for (int at = 0;;) {
            if (chain.length - at < Smb2Messages.HEADER_SIZE) {
                throw new IllegalStateException("a compounded response's NextCommand points at offset " + at
                        + ", which leaves the message of " + chain.length + " bytes no room for a header "
                        + "(MS-SMB2 3.2.5.1.9)");
            }
            int next = Smb2Messages.i32(chain, at + Smb2Messages.NEXT_COMMAND);
            int end = next == 0 ? chain.length : at + next;
            if (next < 0 || (next != 0 && next < Smb2Messages.HEADER_SIZE) || end > chain.length) {
                throw new IllegalStateException("a compounded response's NextCommand " + next + " at offset " + at
                        + " leaves the message of " + chain.length + " bytes (MS-SMB2 3.2.5.1.9)");
            }
            long messageId = Smb2Messages.u64(chain, at + Smb2Messages.MESSAGE_ID);
            PendingRequest p = pending.get(messageId);
            if (p != null && p.split != null) {
                throw new IllegalStateException("a compounded response carries the response to part of a "
                        + p.split.command + " the transport split (message id " + messageId
                        + "); it cannot be merged for smbj");
            }
            if (p != null) {
                answered(messageId, p, java.util.Arrays.copyOfRange(chain, at, end), invalidatedToken);
            }
            if (next == 0) {
                return;
            }
            at = end;
        }
    }

    /** A response to an RDMA-channel request of its own (not a part): it ends the request, unless interim. */
    private void answered(long messageId, PendingRequest p, byte[] response, OptionalInt invalidatedToken) {
        PendingRequest done = completed(messageId, p, response);
        if (done != null) {
            ended(done, invalidatedToken);
        }
    }

    /**
     * As {@link #answered}, except that the request's registration is left to the caller to end:
     * returns the request then, {@code null} for an interim response.
     */
    private PendingRequest completed(long messageId, PendingRequest p, byte[] response) {
        if (interim(response)) {
            return null;
        }
        pending.remove(messageId);
        try {
            complete(messageId, p, response);
        } catch (RuntimeException e) {
            ended(p, OptionalInt.empty());
            throw e;
        }
        return p;
    }

    /** MS-SMB2 3.2.5.1.5: an interim response (STATUS_PENDING, async) is not the response yet. */
    private static boolean interim(byte[] m) {
        return (Smb2Messages.i32(m, Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_ASYNC_COMMAND) != 0
                && Smb2Messages.i32(m, Smb2Messages.STATUS) == Smb2Messages.STATUS_PENDING;
    }

    /**
     * The response to an RDMA-channel request arrived: the server's RDMA is over (its Send comes
     * after its RDMA Writes, and it answers a WRITE after its RDMA Reads), so a READ's data is
     * taken out of the buffer for smbj; the registration may end ({@link #ended}).
     */
    private void complete(long messageId, PendingRequest p, byte[] response) {
        if (p.read && Smb2Messages.i32(response, Smb2Messages.STATUS) == 0
                && response.length >= Smb2Messages.READ_RESPONSE_DATA_REMAINING + 4
                && Smb2Messages.i32(response, Smb2Messages.READ_RESPONSE_DATA_LENGTH) == 0) {
            // MS-SMB2 2.2.20: DataRemaining is what moved through the channel
            int moved = Smb2Messages.i32(response, Smb2Messages.READ_RESPONSE_DATA_REMAINING);
            if (moved < 0 || moved > p.length) {
                throw new IllegalStateException("the server says it RDMA-wrote " + (moved & 0xffffffffL)
                        + " bytes into a buffer of " + p.length);
            }
            byte[] data = p.destination.take(moved);
            p.buffer.get(0, data);
            rdmaReadData.put(messageId, data);
            statistics.rdmaReadBytes.addAndGet(moved);
        }
    }

    /**
     * The response to an RDMA-channel request arrived: its registration ends, its buffer returns.
     * A split request's buffer returns with its last part, unless a part's deregistration failed.
     */
    private void ended(PendingRequest p, OptionalInt invalidatedToken) {
        boolean remote = !p.registration.isRegistered();
        if (buffers.release(p.registration, p.buffer)) {
            (remote ? statistics.remoteInvalidations : statistics.localInvalidations).incrementAndGet();
            if (remote && invalidatedToken.isEmpty()) {
                LOG.log(System.Logger.Level.DEBUG, "registration ended without an invalidated token: " + p.registration);
            }
        } else if (p.split != null) {
            p.split.reachable = true;
        }
    }

    /** A split request's buffer, once no part's registration can reach it any more. */
    private void giveBack(SplitRequest split) {
        if (!split.reachable) {
            buffers.give(split.buffer);
        }
    }

    /**
     * MS-SMB2 3.2.5.1.3, as smbj applies it (it skips SESSION_SETUP responses and unsolicited
     * messages); compounded responses are left to smbj. On a mismatch the connection ends with an
     * exception that says so, and the answer is {@code null}.
     *
     * <p>A response verified here goes to smbj as packet data that smbj takes as verified (its
     * "decrypted" packet data, which smbj's signature check passes through: that check is its only
     * use of {@code isDecrypted}, in the smbj this bundle embeds), so that no response is verified
     * twice: the second MAC, with a MAC made and keyed for each message as smbj does, costs as much
     * as a 4 KiB READ's own work on this side.
     *
     * @return the packet data for smbj, or {@code null} after a bad signature
     */
    private SMBPacketData<?> signatureVerified(SMB2PacketData data, byte[] bytes) throws Exception {
        if (!verifiedHere(bytes)) {
            return data;
        }
        long sessionId = Smb2Messages.u64(bytes, Smb2Messages.SESSION_ID);
        Session session = session(sessionId);
        SecretKey key = session == null ? null : session.getSigningKey(data.getHeader(), false);
        if (key == null) {
            return data;
        }
        if (signatures.check(bytes, key) != ResponseSignatures.Verdict.FAILED) {
            return new SMB2DecryptedPacketData(bytes);
        }
        statistics.signatureFailures.incrementAndGet();
        long messageId = Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID);
        rdmaReadData.remove(messageId);
        String what = String.format("the server's %s response (message id %d, session %x, status 0x%08x, %d bytes) failed "
                + "signature verification (MS-SMB2 3.2.5.1.3)%s: discarded, and the connection closed",
                data.getHeader().getMessage(), messageId, sessionId, data.getHeader().getStatusCode(), bytes.length,
                signatures.signedPrefix(bytes, key));
        LOG.log(System.Logger.Level.ERROR, what);
        fault(new TransportException(what));
        return null;
    }

    /** Whether this transport checks the response's signature (the responses smbj checks, whole). */
    private boolean verifiedHere(byte[] bytes) {
        return (Smb2Messages.i32(bytes, Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_SIGNED) != 0
                && Smb2Messages.u64(bytes, Smb2Messages.SESSION_ID) != 0 && smbj != null
                && Smb2Messages.u16(bytes, Smb2Messages.COMMAND) != Smb2Messages.COMMAND_SESSION_SETUP
                && Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID) != -1L
                && Smb2Messages.i32(bytes, Smb2Messages.NEXT_COMMAND) == 0;
    }

    /**
     * STATUS_USER_SESSION_DELETED: the server has no session for the request (MS-SMB2 3.3.5.2.4,
     * 3.3.5.2.9), so it has no key to sign its answer with. ksmbd flags that answer signed all the
     * same, with a signature of zeros (it does so for every request on a connection it is tearing
     * down, as when it stops); Windows and Samba clients take it without verifying it and pass the
     * status on. Its signature is not checked here.
     */
    private static boolean sessionDeleted(byte[] response) {
        return response.length >= Smb2Messages.HEADER_SIZE
                && Smb2Messages.i32(response, Smb2Messages.STATUS) == Smb2Messages.STATUS_USER_SESSION_DELETED;
    }

    /**
     * A {@link #sessionDeleted} response flagged signed is signed here with the session's key, as
     * the merged response of a split READ is, because smbj would drop it as badly signed and leave
     * the request waiting for its timeout: the caller gets STATUS_USER_SESSION_DELETED at once.
     * The status carries no data; a forged one fails one request, as a dropped message would.
     */
    private SMBPacketData<?> passOnSessionDeleted(SMB2PacketData data, byte[] bytes) throws Exception {
        long sessionId = Smb2Messages.u64(bytes, Smb2Messages.SESSION_ID);
        LOG.log(System.Logger.Level.INFO, () -> String.format("the server answered %s (message id %d) with "
                + "STATUS_USER_SESSION_DELETED: session %x is gone there", data.getHeader().getMessage(),
                data.getHeader().getMessageId(), sessionId));
        if (!verifiedHere(bytes)) {
            return data;
        }
        Session session = session(sessionId);
        SecretKey key = session == null ? null : session.getSigningKey(data.getHeader(), false);
        if (key == null) {
            return data;
        }
        signing.sign(bytes, key);
        return handlers.getPacketFactory().read(bytes);
    }

    @Override
    public void onConnectionLost(SmbDirectConnection c, ConnectionLoss loss) {
        releaseAll();
        owner.closed(this);
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
        releaseAll();
        owner.closed(this);
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

    /** Requests that will get no response any more: their registrations end here. */
    private void releaseAll() {
        ahead.close();
        List<PendingRequest> left = new ArrayList<>(pending.values());
        pending.clear();
        rdmaReadData.clear();
        for (PendingRequest p : left) {
            p.registration.close();
        }
    }

    /** An RDMA-channel request waiting for its response. */
    private static final class PendingRequest {
        final boolean read;
        final int length;
        final ByteBuffer buffer;
        final RegisteredBuffer registration;
        /** The split READ or WRITE this request is a part of, or {@code null}. */
        final SplitRequest split;
        final int part;
        /** A whole READ's data array; {@code null} for WRITEs and parts (their split has one). */
        final ReadDestination destination;
        /**
         * A split request's last part whose registration (and the split's buffer) ends once smbj has
         * the merged response; set and read on the connection's completion thread.
         */
        boolean endsAfterHandOver;

        PendingRequest(boolean read, int length, ByteBuffer buffer, RegisteredBuffer registration) {
            this(read, length, buffer, registration, null, 0);
        }

        PendingRequest(boolean read, int length, ByteBuffer buffer, RegisteredBuffer registration, SplitRequest split,
                int part) {
            this.read = read;
            this.length = length;
            this.buffer = buffer;
            this.registration = registration;
            this.split = split;
            this.part = part;
            this.destination = read && split == null ? new ReadDestination(length) : null;
        }
    }

}
