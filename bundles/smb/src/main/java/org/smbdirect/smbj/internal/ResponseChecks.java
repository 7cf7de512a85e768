package org.smbdirect.smbj.internal;

import javax.crypto.SecretKey;

import com.hierynomus.mssmb2.SMB2DecryptedPacketData;
import com.hierynomus.mssmb2.SMB2PacketData;
import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.security.SecurityException;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.session.Session;

/**
 * What a response from the server is checked for before smbj gets it (MS-SMB2 3.2.5.1). Signed
 * responses are verified here (MS-SMB2 3.2.5.1.3, {@link ResponseSignatures}), so that one with a
 * bad signature ends the connection with an exception saying so, where smbj alone would drop it
 * and leave the caller waiting for its timeout; ksmbd's signature of a READ response without data
 * is accepted unless the options are strict. Two more answers of ksmbd's that smbj would not take
 * are taken here: an error response with bytes behind it, without them; and
 * STATUS_USER_SESSION_DELETED, which the server cannot sign, unverified and signed here for smbj,
 * so the caller gets that status at once.
 */
final class ResponseChecks {
    private static final System.Logger LOG = System.getLogger(ResponseChecks.class.getName());

    private final PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers;
    /** Whether the receiver is smbj's connection, whose responses are verified here. */
    private final boolean smbj;
    private final SmbjSessions sessions;
    private final Smb2Signing signing;
    private final ResponseSignatures signatures;
    private final Statistics statistics;
    private final FaultHandler faults;

    /**
     * @param handlers smbj's packet handlers
     * @param smbj whether their receiver is smbj's connection
     * @param sessions smbj's sessions, for their keys
     * @param signing signs a response smbj could not take as the server signed it
     * @param signatures verifies signatures
     * @param statistics counts signature failures
     * @param faults where a bad signature ends the transport
     */
    ResponseChecks(PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers, boolean smbj, SmbjSessions sessions,
            Smb2Signing signing, ResponseSignatures signatures, Statistics statistics, FaultHandler faults) {
        this.handlers = handlers;
        this.smbj = smbj;
        this.sessions = sessions;
        this.signing = signing;
        this.signatures = signatures;
        this.statistics = statistics;
        this.faults = faults;
    }

    /**
     * The message as received, or its error response alone where bytes that belong to no message
     * follow one.
     */
    static byte[] withoutTrailingBytes(byte[] received) {
        int errorLength = Smb2Messages.errorResponseLength(received);
        if (errorLength > 0 && errorLength < received.length) {
            // ksmbd 6.1 sends some error responses (TREE_CONNECT's, for one) with the bytes of the
            // response it did not send behind them, and signs only the error response: those bytes
            // belong to no message, and smbj would count them into the signature and drop the response.
            LOG.log(System.Logger.Level.DEBUG, () -> "ignoring " + (received.length - errorLength)
                    + " bytes after an error response of " + errorLength + " (MS-SMB2 2.2.2)");
            return java.util.Arrays.copyOf(received, errorLength);
        }
        return received;
    }

    /**
     * A response smbj gets as the server sent it (not one merged from a split request's parts),
     * checked: {@link #passOnSessionDeleted} or {@link #signatureVerified}.
     *
     * @return the packet data for smbj, or {@code null} after a bad signature
     */
    SMBPacketData<?> checked(SMB2PacketData data, byte[] bytes) throws Exception {
        return sessionDeleted(bytes) ? passOnSessionDeleted(data, bytes) : signatureVerified(data, bytes);
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
        Session session = sessions.session(sessionId);
        SecretKey key = session == null ? null : session.getSigningKey(data.getHeader(), false);
        if (key == null) {
            return data;
        }
        if (signatures.check(bytes, key) != ResponseSignatures.Verdict.FAILED) {
            return new SMB2DecryptedPacketData(bytes);
        }
        statistics.signatureFailures.incrementAndGet();
        long messageId = Smb2Messages.u64(bytes, Smb2Messages.MESSAGE_ID);
        String what = String.format("the server's %s response (message id %d, session %x, status 0x%08x, %d bytes) failed "
                + "signature verification (MS-SMB2 3.2.5.1.3)%s: discarded, and the connection closed",
                data.getHeader().getMessage(), messageId, sessionId, data.getHeader().getStatusCode(), bytes.length,
                signatures.signedPrefix(bytes, key));
        LOG.log(System.Logger.Level.ERROR, what);
        faults.fault(new TransportException(what));
        return null;
    }

    /** Whether this transport checks the response's signature (the responses smbj checks, whole). */
    private boolean verifiedHere(byte[] bytes) {
        return (Smb2Messages.i32(bytes, Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_SIGNED) != 0
                && Smb2Messages.u64(bytes, Smb2Messages.SESSION_ID) != 0 && smbj
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
        Session session = sessions.session(sessionId);
        SecretKey key = session == null ? null : session.getSigningKey(data.getHeader(), false);
        if (key == null) {
            return data;
        }
        signing.sign(bytes, key);
        return handlers.getPacketFactory().read(bytes);
    }

    /** A part's response is checked here: smbj never sees it (MS-SMB2 3.2.5.1.3). */
    boolean partSignatureVerified(byte[] response, SplitRequest split) throws SecurityException {
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
        faults.fault(new TransportException(what));
        return false;
    }
}
