package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;

import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import com.hierynomus.security.Mac;
import com.hierynomus.security.bc.BCSecurityProvider;

/**
 * MS-SMB2 3.2.5.1.3 with ksmbd's READ responses lived with ({@link ResponseSignatures}), on the
 * exact bytes: the 80-byte READ response ksmbd sends for a READ through the RDMA channel (message
 * id 1029, DataLength 0), its 73-byte error response, signed by the rule, by ksmbd's form (the MAC
 * over {@code 00 00 00 50} and then the response), and by forms that are neither.
 */
class ResponseSignaturesTest {
    private static final BCSecurityProvider BC = new BCSecurityProvider();
    private static final HexFormat HEX = HexFormat.of();
    /** A signing key as SMB 3.x derives one (AES-128-CMAC); fixed so that the bytes are. */
    private static final SecretKeySpec CMAC = new SecretKeySpec(HEX.parseHex("8d2f6a1e0c5b47d39a61e2f07c3b8d54"), "AESCMAC");
    /** An SMB 2.x key (HMAC-SHA256). */
    private static final SecretKeySpec HMAC = new SecretKeySpec(HEX.parseHex("31c4a8e27f0d5b9613e8c2a74f6d0b95"), "HMACSHA256");

    /**
     * ksmbd's READ response for a READ through the RDMA channel (MS-SMB2 2.2.1.2, 2.2.20): header
     * with Flags SERVER_TO_REDIR | SIGNED, MessageId 1029, TreeId 1, SessionId 0x100000001, the
     * Signature zeroed; body StructureSize 17, DataOffset 0x50, DataLength 0, DataRemaining 0.
     */
    private static final String READ_RESPONSE = "fe534d42" + "4000" + "0100" + "00000000" + "0800" + "0100" + "09000000"
            + "00000000" + "0504000000000000" + "00000000" + "01000000" + "0100000001000000"
            + "00000000000000000000000000000000" + "1100" + "50" + "00" + "00000000" + "00000000" + "00000000";

    private final AtomicLong tolerated = new AtomicLong();

    private ResponseSignatures signatures(boolean strict) {
        return new ResponseSignatures(new Smb2Signing(BC), strict, tolerated, () -> "10.99.0.1:445");
    }

    private static byte[] readResponse() {
        byte[] m = HEX.parseHex(READ_RESPONSE);
        assertEquals(80, m.length);
        return m;
    }

    /** The READ response failed with STATUS_END_OF_FILE: a 2.2.2 error response of 73 bytes. */
    private static byte[] readErrorResponse() {
        byte[] m = Arrays.copyOf(readResponse(), Smb2Messages.HEADER_SIZE + 9);
        Smb2Messages.put32(m, Smb2Messages.STATUS, 0xC0000011);
        Arrays.fill(m, Smb2Messages.HEADER_SIZE, m.length, (byte) 0);
        m[Smb2Messages.HEADER_SIZE] = 9;
        return m;
    }

    /** {@code message} with its Signature set to the first 16 bytes of the MAC over {@code signed}. */
    private static byte[] signedOver(byte[] message, byte[] signed, SecretKeySpec key) throws Exception {
        Mac mac = BC.getMac(key.getAlgorithm());
        mac.init(key.getEncoded());
        mac.update(signed);
        byte[] m = message.clone();
        System.arraycopy(mac.doFinal(), 0, m, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE_SIZE);
        return m;
    }

    private static byte[] concat(byte[] prefix, byte[] message) {
        byte[] all = Arrays.copyOf(prefix, prefix.length + message.length);
        System.arraycopy(message, 0, all, prefix.length, message.length);
        return all;
    }

    /** MS-SMB2 3.3.4.1.1: the MAC over the message alone. */
    private static byte[] byTheRule(byte[] message, SecretKeySpec key) throws Exception {
        return signedOver(message, message, key);
    }

    /** ksmbd's smb2_set_sign_rsp for a READ without data: the 4-byte transport length, then the message. */
    private static byte[] asKsmbdSigns(byte[] message, SecretKeySpec key) throws Exception {
        byte[] length = {0, 0, (byte) (message.length >>> 8), (byte) message.length};
        return signedOver(message, concat(length, message), key);
    }

    @Test
    void ksmbdForm_signsTheTransportLengthThenTheResponse() {
        // the bytes ksmbd's MAC covers for the 80-byte response: 00 00 00 50, then FE 'S' 'M' 'B' ...
        byte[] length = {0, 0, 0, 0x50};
        byte[] signed = concat(length, readResponse());
        assertArrayEquals(HEX.parseHex("00000050fe534d42400001000000000008000100"), Arrays.copyOf(signed, 20));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"AESCMAC", "HMACSHA256"})
    void readResponse_signedByTheRule_verified_notCounted(String algorithm) throws Exception {
        SecretKeySpec key = algorithm.equals("AESCMAC") ? CMAC : HMAC;
        assertEquals(ResponseSignatures.Verdict.VERIFIED, signatures(true).check(byTheRule(readResponse(), key), key));
        assertEquals(ResponseSignatures.Verdict.VERIFIED, signatures(false).check(byTheRule(readResponse(), key), key));
        assertEquals(0, tolerated.get());
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"AESCMAC", "HMACSHA256"})
    void readResponseWithoutData_signedAsKsmbdSigns_tolerated_countedEachTime(String algorithm) throws Exception {
        SecretKeySpec key = algorithm.equals("AESCMAC") ? CMAC : HMAC;
        ResponseSignatures s = signatures(false);
        byte[] response = asKsmbdSigns(readResponse(), key);
        assertEquals(ResponseSignatures.Verdict.TOLERATED, s.check(response, key));
        assertEquals(ResponseSignatures.Verdict.TOLERATED, s.check(response, key));
        assertEquals(2, tolerated.get());
    }

    @Test
    void readErrorResponse_signedAsKsmbdSigns_tolerated() throws Exception {
        assertEquals(ResponseSignatures.Verdict.TOLERATED, signatures(false).check(asKsmbdSigns(readErrorResponse(), CMAC), CMAC));
        assertEquals(1, tolerated.get());
    }

    @Test
    void readResponse_signedAsKsmbdSigns_strict_failed() throws Exception {
        assertEquals(ResponseSignatures.Verdict.FAILED, signatures(true).check(asKsmbdSigns(readResponse(), CMAC), CMAC));
        assertEquals(0, tolerated.get());
    }

    /** Neither form: the length little-endian, the length with the 4 bytes counted, another key, a changed byte. */
    @Test
    void readResponse_signedOverAThirdForm_failed() throws Exception {
        byte[] m = readResponse();
        ResponseSignatures s = signatures(false);
        assertEquals(ResponseSignatures.Verdict.FAILED, s.check(signedOver(m, concat(new byte[] {0x50, 0, 0, 0}, m), CMAC), CMAC),
                "length little-endian");
        assertEquals(ResponseSignatures.Verdict.FAILED, s.check(signedOver(m, concat(new byte[] {0, 0, 0, 0x54}, m), CMAC), CMAC),
                "length counting itself");
        assertEquals(ResponseSignatures.Verdict.FAILED, s.check(asKsmbdSigns(m, HMAC), CMAC), "another key");
        byte[] changed = asKsmbdSigns(m, CMAC);
        changed[Smb2Messages.MESSAGE_ID] ^= 1;
        assertEquals(ResponseSignatures.Verdict.FAILED, s.check(changed, CMAC), "a changed byte");
        assertEquals(0, tolerated.get());
    }

    /** Other commands are never tolerated, whatever their bytes: WRITE, CREATE, QUERY_INFO, IOCTL, SESSION_SETUP, CLOSE. */
    @ParameterizedTest(name = "command {0}")
    @ValueSource(ints = {0x9, 0x5, 0x10, 0xB, 0x1, 0x6})
    void otherCommand_signedAsKsmbdSignsReads_failed(int command) throws Exception {
        byte[] m = readResponse();
        Smb2Messages.put16(m, Smb2Messages.COMMAND, command);
        assertEquals(ResponseSignatures.Verdict.FAILED, signatures(false).check(asKsmbdSigns(m, CMAC), CMAC));
        assertEquals(0, tolerated.get());
    }

    /** A READ response that carries data, or is part of a compound, is signed by the rule even by ksmbd. */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"data inline, 0", "compounded, 1"})
    void readResponse_withDataOrCompounded_signedAsKsmbdSigns_failed(String what, int compounded) throws Exception {
        byte[] m = readResponse();
        if (compounded == 1) {
            Smb2Messages.put32(m, Smb2Messages.NEXT_COMMAND, 80);
        } else {
            m = Arrays.copyOf(m, 80 + 16);
            Smb2Messages.put32(m, Smb2Messages.READ_RESPONSE_DATA_LENGTH, 16);
        }
        assertEquals(ResponseSignatures.Verdict.FAILED, signatures(false).check(asKsmbdSigns(m, CMAC), CMAC), what);
        assertEquals(0, tolerated.get());
    }
}
