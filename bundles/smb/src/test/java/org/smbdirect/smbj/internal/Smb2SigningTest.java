package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.SplittableRandom;

import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;

import com.hierynomus.security.Mac;
import com.hierynomus.security.bc.BCSecurityProvider;

/**
 * MS-SMB2 3.1.4.1 and 3.1.5.1 as the transport applies them: the signature is the MAC of the
 * message with its Signature field zeroed, whether the transport's MAC is new or one kept from the
 * message before (same key, another key, another message).
 */
class Smb2SigningTest {
    private static final BCSecurityProvider BC = new BCSecurityProvider();
    private final SplittableRandom random = new SplittableRandom(3114);

    private byte[] message(int length) {
        byte[] m = new byte[length];
        random.nextBytes(m);
        m[0] = (byte) 0xFE;
        m[1] = 'S';
        m[2] = 'M';
        m[3] = 'B';
        return m;
    }

    private SecretKeySpec key(String algorithm) {
        byte[] k = new byte[16];
        random.nextBytes(k);
        return new SecretKeySpec(k, algorithm);
    }

    /** The signature computed from scratch, as the specification describes it. */
    private static byte[] expected(byte[] message, SecretKeySpec key) throws Exception {
        byte[] zeroed = message.clone();
        Arrays.fill(zeroed, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE, (byte) 0);
        zeroed[Smb2Messages.FLAGS] |= Smb2Messages.SMB2_FLAGS_SIGNED;
        Mac mac = BC.getMac(key.getAlgorithm());
        mac.init(key.getEncoded());
        mac.update(zeroed);
        return Arrays.copyOf(mac.doFinal(), Smb2Messages.SIGNATURE_SIZE);
    }

    @Test
    void sign_messagesAndKeysInTurn_eachSignatureAsComputedFromScratch() throws Exception {
        Smb2Signing signing = new Smb2Signing(BC);
        SecretKeySpec cmac = key("AESCMAC");
        SecretKeySpec other = key("AESCMAC");
        SecretKeySpec hmac = key("HMACSHA256");
        SecretKeySpec[] keys = {cmac, cmac, other, cmac, hmac, hmac, cmac};
        int[] lengths = {120, 64, 4096 + 64, 120, 97, 300, 65};
        for (int i = 0; i < keys.length; i++) {
            byte[] m = message(lengths[i]);
            byte[] want = expected(m, keys[i]);
            signing.sign(m, keys[i]);
            assertArrayEquals(want, Arrays.copyOfRange(m, Smb2Messages.SIGNATURE,
                    Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE), "message " + i);
            assertTrue(signing.verify(m, keys[i]), "message " + i + " verified");
        }
    }

    @Test
    void verify_wrongKeyOrChangedByte_false_andTheRightKeyStillVerifiesAfterwards() throws Exception {
        Smb2Signing signing = new Smb2Signing(BC);
        SecretKeySpec key = key("AESCMAC");
        byte[] m = message(200);
        signing.sign(m, key);
        assertFalse(signing.verify(m, key("AESCMAC")), "another key");
        byte[] changed = m.clone();
        changed[150] ^= 1;
        assertFalse(signing.verify(changed, key), "a changed byte");
        assertTrue(signing.verify(m, key), "the message as signed");
        assertTrue(signing.verify(m, key), "and again with the MAC kept");
    }
}
