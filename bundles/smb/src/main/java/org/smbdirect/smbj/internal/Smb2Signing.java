package org.smbdirect.smbj.internal;

import java.security.MessageDigest;
import java.util.concurrent.atomic.AtomicReference;

import javax.crypto.SecretKey;

import com.hierynomus.security.Mac;
import com.hierynomus.security.SecurityException;
import com.hierynomus.security.SecurityProvider;

/**
 * MS-SMB2 3.1.4.1 Signing An Outgoing Message and 3.1.5.1 Verifying the Signature: the signature
 * is the first 16 bytes of the MAC (HMAC-SHA256 for SMB 2.x, AES-128-CMAC for 3.x; the key's
 * algorithm, as smbj derived it) over the whole message with its Signature field zeroed. The
 * transport signs the RDMA-channel requests it builds in place of smbj's, and checks responses
 * itself so that a bad signature ends in an exception rather than in smbj's silent drop.
 */
final class Smb2Signing {
    private final SecurityProvider provider;
    /**
     * The MAC used last, with the key it was initialised with, while no thread uses it: a new MAC
     * per message (allocation, key schedule, subkeys) costs about as much as the MAC of a small
     * message itself. Taken and given back, so that two threads never share one.
     */
    private final AtomicReference<KeyedMac> idle = new AtomicReference<>();

    Smb2Signing(SecurityProvider provider) {
        this.provider = provider;
    }

    /** Sets SMB2_FLAGS_SIGNED and the Signature field of the message in place. */
    void sign(byte[] message, SecretKey key) throws SecurityException {
        Smb2Messages.put32(message, Smb2Messages.FLAGS,
                Smb2Messages.i32(message, Smb2Messages.FLAGS) | Smb2Messages.SMB2_FLAGS_SIGNED);
        byte[] signature = signature(message, key);
        System.arraycopy(signature, 0, message, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE_SIZE);
    }

    /** Whether the message's Signature field is the one its bytes and the key give. */
    boolean verify(byte[] message, SecretKey key) throws SecurityException {
        return matches(message, signature(message, key));
    }

    /**
     * Whether the message's Signature field is the MAC over its 4-byte transport length
     * (big-endian, as the RFC 1002 header of Direct TCP frames it, MS-SMB2 2.1) followed by the
     * message: what ksmbd signs for a READ response that carries no data (see
     * {@link ResponseSignatures}).
     */
    boolean verifyWithTransportLength(byte[] message, SecretKey key) throws SecurityException {
        byte[] length = {(byte) (message.length >>> 24), (byte) (message.length >>> 16), (byte) (message.length >>> 8),
                (byte) message.length};
        return matches(message, signature(message, length, key));
    }

    private static boolean matches(byte[] message, byte[] expected) {
        byte[] received = new byte[Smb2Messages.SIGNATURE_SIZE];
        System.arraycopy(message, Smb2Messages.SIGNATURE, received, 0, received.length);
        byte[] first16 = new byte[Smb2Messages.SIGNATURE_SIZE];
        System.arraycopy(expected, 0, first16, 0, first16.length);
        return MessageDigest.isEqual(first16, received);
    }

    private byte[] signature(byte[] message, SecretKey key) throws SecurityException {
        return signature(message, null, key);
    }

    /** The MAC over {@code prefix} (when not {@code null}), then the message with its Signature zeroed. */
    private byte[] signature(byte[] message, byte[] prefix, SecretKey key) throws SecurityException {
        KeyedMac m = take(key);
        Mac mac = m.mac;
        if (prefix != null) {
            mac.update(prefix);
        }
        mac.update(message, 0, Smb2Messages.SIGNATURE);
        mac.update(new byte[Smb2Messages.SIGNATURE_SIZE]);
        int rest = Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE;
        mac.update(message, rest, message.length - rest);
        byte[] signature = mac.doFinal(); // resets the MAC to its key
        idle.set(m);
        return signature;
    }

    /** The idle MAC when it has this key (the same key object), else a new one initialised with it. */
    private KeyedMac take(SecretKey key) throws SecurityException {
        KeyedMac m = idle.getAndSet(null);
        if (m != null && m.key == key) {
            return m;
        }
        Mac mac = provider.getMac(key.getAlgorithm());
        mac.init(key.getEncoded());
        return new KeyedMac(key, mac);
    }

    private static final class KeyedMac {
        final SecretKey key;
        final Mac mac;

        KeyedMac(SecretKey key, Mac mac) {
            this.key = key;
            this.mac = mac;
        }
    }
}
