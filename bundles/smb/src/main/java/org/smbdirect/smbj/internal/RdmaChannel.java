package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;

import javax.crypto.SecretKey;

import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.security.SecurityException;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.PacketEncryptor;
import com.hierynomus.smbj.connection.PacketSignatory;
import com.hierynomus.smbj.session.Session;

/**
 * The RDMA channel of one connection (MS-SMB2 3.2.4.6, 3.2.4.7): which READ and WRITE requests go
 * through it, and those requests until their responses end them.
 * <ul>
 * <li>a READ or WRITE request of at least the threshold (or too large to travel inline) is sent
 * through the RDMA channel: its data is copied into a registered buffer (MS-SMBD 3.1.4.3), the
 * request carries the buffer's descriptors instead of inline data, and is signed here as smbj
 * would have signed it; a large one goes as several in flight ({@link SplitRequest});</li>
 * <li>when the response to such a request arrives, the registration ends before smbj sees the
 * response: the server invalidated it (Send with Invalidate), or this side deregisters it, which
 * invalidates it (MS-SMBD 3.1.4.4); a READ's data is kept for smbj
 * ({@link #takeRdmaReadData}), which gets it with the response.</li>
 * </ul>
 */
final class RdmaChannel {
    private static final System.Logger LOG = System.getLogger(RdmaChannel.class.getName());

    private final SmbjOptions options;
    private final Statistics statistics;
    private final Smb2Signing signing;
    private final SmbjSessions sessions;
    private final ResponseChecks checks;
    private final MessageSender sender;
    /** smbj's connection, or {@code null} under another receiver (then nothing goes through the channel). */
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
    private volatile Limits limits;
    /** Tests only: runs after each part of a split request is sent, before the next. */
    volatile Runnable afterPartSent;

    /**
     * @param smbj smbj's connection, or {@code null}
     * @param options the options
     * @param statistics the transport's counters
     * @param signing signs the requests built here, and a split request's merged response
     * @param sessions smbj's sessions, for their signing keys
     * @param checks checks the responses to a split request's parts, which smbj never sees
     * @param sender sends the requests built here
     */
    RdmaChannel(Connection smbj, SmbjOptions options, Statistics statistics, Smb2Signing signing, SmbjSessions sessions,
            ResponseChecks checks, MessageSender sender) {
        this.smbj = smbj;
        this.options = options;
        this.statistics = statistics;
        this.signing = signing;
        this.sessions = sessions;
        this.checks = checks;
        this.sender = sender;
    }

    /** The connection is open, carrying {@code l}: set before smbj's NEGOTIATE. */
    void connected(SmbDirectConnection c, Limits l) {
        limits = l;
        regionsOfTheirOwn = !c.parameters().remoteInvalidate();
        registerAhead = regionsOfTheirOwn && options.registerAhead();
    }

    /** What the connection carries; set when connected, before smbj's NEGOTIATE. */
    Limits limits() {
        return limits;
    }

    /** Whether registrations are memory regions of their own (see {@link #regionsOfTheirOwn}). */
    boolean regionsOfTheirOwn() {
        return regionsOfTheirOwn;
    }

    /** Registrations made ahead for the next READ and WRITE (one per part). */
    int registeredAhead() {
        return ahead.count();
    }

    /** The data the server RDMA-wrote for a READ request, once its response arrived. */
    byte[] takeRdmaReadData(long messageId) {
        return rdmaReadData.remove(messageId);
    }

    /** The RDMA-channel request of that message id waiting for its response, or {@code null}. */
    PendingRequest pending(long messageId) {
        return pending.get(messageId);
    }

    /**
     * Sends a READ or WRITE through the RDMA channel where it should go there; returns {@code false}
     * when it goes inline (after checking that it fits).
     */
    boolean readOrWrite(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner) throws TransportException {
        boolean read = inner instanceof SMB2ReadRequest;
        int length = payload(inner);
        boolean encrypted = packet instanceof PacketEncryptor.EncryptedPacketWrapper;
        SMB2Dialect dialect = smbj == null ? SMB2Dialect.UNKNOWN : smbj.getNegotiatedProtocol().getDialect();
        Limits l = limits;
        boolean possible = !encrypted && smbj != null && (read ? l.rdmaReads(dialect) : l.rdmaWrites(dialect));
        int inline = read ? l.inlineRead : l.inlineWrite;
        if (possible && (length >= l.threshold || length > inline)) {
            send(c, packet, inner, read, l.channel(dialect));
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
    private void send(SmbDirectConnection c, SMB2Packet packet, SMB2Packet inner, boolean read, int channel)
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
                signing.sign(message, sessions.signingKey(inner));
            }
        } catch (ConnectionLostException e) {
            buffers.release(registration, buffer);
            throw sender.lost(c, e, packet);
        } catch (SmbDirectException | SecurityException | TransportException | RuntimeException e) {
            buffers.release(registration, buffer);
            throw new TransportException("cannot send " + packet + " through the RDMA channel: " + e.getMessage(), e);
        }
        // the response may arrive before the send completes: the request is pending first
        PendingRequest sent = new PendingRequest(read, length, buffer, registration);
        pending.put(messageId, sent);
        try {
            sender.send(c, ByteBuffer.wrap(message), packet);
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
            SecretKey key = packet instanceof PacketSignatory.SignedPacketWrapper ? sessions.signingKey(inner) : null;
            // the parts' responses are checked, and the one smbj gets signed, with the session's key
            Session session = sessions.session(inner.getHeader().getSessionId());
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
            throw sender.lost(c, e, packet);
        } catch (SmbDirectException | SecurityException | TransportException | RuntimeException e) {
            releaseParts(registrations, split.buffer);
            throw new TransportException("cannot send " + packet + " through the RDMA channel: " + e.getMessage(), e);
        }
        for (int i = 0; i < n; i++) {
            pending.put(split.messageId(i), new PendingRequest(read, split.length(i), null, registrations[i], split, i));
        }
        for (int i = 0; i < n; i++) {
            try {
                sender.send(c, ByteBuffer.wrap(messages[i]), packet);
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
    byte[] partArrived(PendingRequest p, byte[] response, OptionalInt invalidatedToken) throws SecurityException {
        SplitRequest split = p.split;
        if (interim(response)) {
            split.interim(response);
            return null;
        }
        pending.remove(split.messageId(p.part));
        // where registrations are regions of their own, the last part's registration ends once smbj
        // has the response, as a whole request's does (endAfterHandOver)
        boolean endLater = regionsOfTheirOwn && split.lastToArrive();
        if (!endLater) {
            ended(p, invalidatedToken);
        }
        if (!checks.partSignatureVerified(response, split) || !split.arrived(p.part, response)) {
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
    void compounded(byte[] chain, OptionalInt invalidatedToken) {
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
    void answered(long messageId, PendingRequest p, byte[] response, OptionalInt invalidatedToken) {
        PendingRequest done = completed(messageId, p, response);
        if (done != null) {
            ended(done, invalidatedToken);
        }
    }

    /**
     * As {@link #answered}, except that the request's registration is left to the caller to end:
     * returns the request then, {@code null} for an interim response.
     */
    PendingRequest completed(long messageId, PendingRequest p, byte[] response) {
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
     * A request whose registration ends once smbj has the response ({@link #completed}, or a split
     * request's last part): it ends now.
     */
    void endAfterHandOver(PendingRequest later, OptionalInt invalidatedToken) {
        // where registrations are memory regions of their own, the registration ends once smbj
        // has the response, off the path of smbj's next request (after the server's
        // invalidation too: the region is the kernel's until deregistered); the READ's data was
        // taken out of the buffer before, and the buffer returns to the pool once deregistered
        ended(later, invalidatedToken);
        if (later.split != null) {
            giveBack(later.split);
        }
    }

    /** Requests that will get no response any more: their registrations end here. */
    void releaseAll() {
        ahead.close();
        List<PendingRequest> left = new ArrayList<>(pending.values());
        pending.clear();
        rdmaReadData.clear();
        for (PendingRequest p : left) {
            p.registration.close();
        }
    }
}
