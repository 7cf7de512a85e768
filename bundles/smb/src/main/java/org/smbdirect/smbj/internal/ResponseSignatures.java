package org.smbdirect.smbj.internal;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import javax.crypto.SecretKey;

import com.hierynomus.security.SecurityException;

/**
 * MS-SMB2 3.2.5.1.3 Verifying the Signature of a response, for one connection, with the one server
 * defect this client lives with unless told to be strict.
 *
 * <p><b>ksmbd's READ responses.</b> MS-SMB2 3.3.4.1.1 signs the SMB2 message alone. ksmbd (Linux
 * 6.1 through at least 7.2, {@code smb2_set_sign_rsp} and {@code smb3_set_sign_rsp} in
 * {@code fs/smb/server/smb2pdu.c}) signs a READ response together with whatever precedes it in its
 * send vector, assuming that is the response: the read data follows the response there. When no
 * data follows (a READ through the RDMA channel, MS-SMB2 2.2.19, whose data went by RDMA Write and
 * whose DataLength is 0; or a READ that failed), what precedes the response is the 4-byte transport
 * length, so the MAC covers that length (big-endian) and then the message. Such a response is
 * still a MAC under the session's signing key over the message and its length; nothing can be
 * forged with it that could not be before: the signed bytes begin with a zero byte (a length below
 * 16 MiB), while every message signed by the MS-SMB2 rule begins with 0xFE, so one form's MAC is
 * never valid for a message in the other. Accepted only for a READ response that is not part of a
 * compound and carries no data; counted ({@code RdmaChannelStatistics.toleratedReadSignatures()}),
 * and said once per connection in the log. {@code SmbjOptions.strictSignatures()} refuses it.
 */
final class ResponseSignatures {
    private static final System.Logger LOG = System.getLogger(ResponseSignatures.class.getName());

    /** What the check found. */
    enum Verdict {
        /** Signed as MS-SMB2 3.3.4.1.1 says. */
        VERIFIED,
        /** Signed as ksmbd signs a READ response without data, and accepted. */
        TOLERATED,
        /** Neither: the response is to be discarded and the connection ended. */
        FAILED
    }

    private final Smb2Signing signing;
    private final boolean strict;
    private final AtomicLong tolerated;
    private final Supplier<String> peer;
    private final AtomicBoolean logged = new AtomicBoolean();

    /**
     * @param signing computes the MACs
     * @param strict whether ksmbd's form is refused
     * @param tolerated counts the responses accepted in ksmbd's form
     * @param peer names the server in the log line
     */
    ResponseSignatures(Smb2Signing signing, boolean strict, AtomicLong tolerated, Supplier<String> peer) {
        this.signing = signing;
        this.strict = strict;
        this.tolerated = tolerated;
        this.peer = peer;
    }

    /** MS-SMB2 3.2.5.1.3 for a signed response, and ksmbd's form where that fails and it applies. */
    Verdict check(byte[] response, SecretKey key) throws SecurityException {
        if (signing.verify(response, key)) {
            return Verdict.VERIFIED;
        }
        if (strict || !readWithoutData(response) || !signing.verifyWithTransportLength(response, key)) {
            return Verdict.FAILED;
        }
        tolerated.incrementAndGet();
        if (logged.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, () -> String.format("the server at %s signs READ responses without "
                    + "data over the 4-byte transport length and the response (a ksmbd defect, fs/smb/server/smb2pdu.c "
                    + "smb2_set_sign_rsp), not over the response alone as MS-SMB2 3.3.4.1.1 says: accepted as a MAC "
                    + "under the session's key (first: message id %d, status 0x%08x); strictSignatures refuses it. "
                    + "Said once per connection, counted in the RDMA channel statistics.", peer.get(),
                    Smb2Messages.u64(response, Smb2Messages.MESSAGE_ID), Smb2Messages.i32(response, Smb2Messages.STATUS)));
        }
        return Verdict.TOLERATED;
    }

    /**
     * A READ response, not part of a compound, with no data after its body: a successful one whose
     * DataLength is 0 (the RDMA channel's), or an error response (MS-SMB2 2.2.2).
     */
    static boolean readWithoutData(byte[] response) {
        if (response.length < Smb2Messages.HEADER_SIZE
                || Smb2Messages.u16(response, Smb2Messages.COMMAND) != Smb2Messages.COMMAND_READ
                || Smb2Messages.i32(response, Smb2Messages.NEXT_COMMAND) != 0) {
            return false;
        }
        return Smb2Messages.i32(response, Smb2Messages.STATUS) != 0
                || response.length >= Smb2Messages.READ_RESPONSE_DATA_LENGTH + 4
                        && Smb2Messages.i32(response, Smb2Messages.READ_RESPONSE_DATA_LENGTH) == 0;
    }

    /** Diagnosis for a response that failed: a server that signed fewer bytes than it sent. */
    String signedPrefix(byte[] bytes, SecretKey key) throws SecurityException {
        for (int n = bytes.length - 1; n >= Smb2Messages.HEADER_SIZE && bytes.length <= 65536; n--) {
            if (signing.verify(Arrays.copyOf(bytes, n), key)) {
                return "; the signature covers only its first " + n + " bytes";
            }
        }
        return "";
    }
}
