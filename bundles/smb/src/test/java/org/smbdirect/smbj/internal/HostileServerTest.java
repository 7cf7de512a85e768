package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.mserref.NtStatus;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2FileId;
import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.mssmb2.messages.SMB2ReadResponse;
import com.hierynomus.mssmb2.messages.SMB2WriteRequest;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.security.SecurityException;
import com.hierynomus.security.bc.BCSecurityProvider;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.SessionTable;
import com.hierynomus.smbj.io.ArrayByteChunkProvider;
import com.hierynomus.smbj.session.Session;

/**
 * A faulty or hostile server's READ and WRITE responses, through the RDMA channel: whatever the
 * bytes, the request ends (with a response or an exception, never a hang beyond what a missing
 * response means), no thread dies of an uncaught exception, a connection that ends leaves no
 * registration behind, and one that stays open still carries a good READ afterwards. The responses
 * are those of {@link FakeSmb2Server}, changed as a table says and then at random.
 */
class HostileServerTest {
    private static final SMB2FileId FILE = new SMB2FileId(new byte[8], new byte[8]);
    private static final int LENGTH = 64 * 1024;
    /** A READ the transport sends as two READs in flight ({@link SplitRead}). */
    private static final int SPLIT_LENGTH = 8 << 20;
    /** A faulty READ whose response never comes is given up after this long. */
    private static final long WAIT_MILLIS = 1_000;
    /** How long a good READ may take on a busy machine. */
    private static final long GOOD_WAIT_MILLIS = 20_000;
    /** The session of the signed responses. */
    private static final long SESSION = 0x4001;

    // MS-SMB2 2.2.1.2 and 2.2.20: offsets in the READ response
    private static final int MESSAGE_ID = 24;
    private static final int STATUS = 8;
    private static final int FLAGS = 16;
    private static final int NEXT_COMMAND = 20;
    private static final int STRUCTURE_SIZE = 64;
    private static final int DATA_OFFSET = 66;
    private static final int DATA_LENGTH = 68;
    private static final int DATA_REMAINING = 72;

    private final List<Throwable> uncaught = Collections.synchronizedList(new ArrayList<>());
    private Thread.UncaughtExceptionHandler previous;
    private SmbjOverSim sim;
    private FakeSmb2Server server;
    private SmbjTransport smbj;
    private Connection connection;
    private byte[] content;

    @BeforeEach
    void start() throws Exception {
        previous = Thread.getDefaultUncaughtExceptionHandler();
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
            if (!t.getName().equals("fake-smb2-server")) { // the server's own end of a closed connection
                uncaught.add(e);
            }
        });
        sim = new SmbjOverSim(SMB2Dialect.SMB_3_0_2, SmbjOptions.defaults(), SmbDirectConfig.defaults());
        server = sim.server;
        smbj = sim.smbj;
        content = new byte[SPLIT_LENGTH];
        new Random(14).nextBytes(content);
        server.content = content;
        connect();
    }

    private void connect() throws Exception {
        server.mangle = null;
        connection = sim.connect();
    }

    @AfterEach
    void stop() throws Exception {
        Thread.setDefaultUncaughtExceptionHandler(previous);
        sim.close();
    }

    /** One READ through the RDMA channel: the response, or why there is none. */
    private Object read() throws Exception {
        return read(LENGTH, WAIT_MILLIS);
    }

    private Object read(int length, long waitMillis) throws Exception {
        return outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, 0, 0, 0, length), waitMillis);
    }

    /** What became of a request: its response, or the exception that ended it, or the wait given up. */
    private Object outcome(SMB2Packet request, long waitMillis) throws Exception {
        try {
            return connection.send(request).get(waitMillis, TimeUnit.MILLISECONDS);
        } catch (TransportException e) {
            return e; // refused at once
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (TimeoutException e) {
            return e;
        }
    }

    private static UnaryOperator<ByteBuffer> putInt(int offset, int value) {
        return b -> b.duplicate().order(ByteOrder.LITTLE_ENDIAN).putInt(offset, value).position(0);
    }

    private static UnaryOperator<ByteBuffer> putShort(int offset, int value) {
        return b -> b.duplicate().order(ByteOrder.LITTLE_ENDIAN).putShort(offset, (short) value).position(0);
    }

    private static UnaryOperator<ByteBuffer> cut(int length) {
        return b -> b.duplicate().limit(length).slice();
    }

    private static UnaryOperator<ByteBuffer> both(UnaryOperator<ByteBuffer> first, UnaryOperator<ByteBuffer> second) {
        return b -> second.apply(first.apply(b));
    }

    private static UnaryOperator<ByteBuffer> otherMessageId() {
        return b -> {
            ByteBuffer d = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            return d.putLong(MESSAGE_ID, d.getLong(MESSAGE_ID) + 1000).position(0);
        };
    }

    static Stream<Arguments> faults() {
        return Stream.of(
                Arguments.of("an SMB1 protocol id", putInt(0, 0x424d53ff), "SMBv1"),
                Arguments.of("no protocol id", putInt(0, 0x12345678), "no SMB message"),
                Arguments.of("cut inside the header", cut(20), "Underflow"),
                Arguments.of("cut inside the READ response", cut(64 + 4), "Unable to deserialize"),
                Arguments.of("DataRemaining beyond the buffer", putInt(DATA_REMAINING, LENGTH + 1), "RDMA-wrote"),
                Arguments.of("DataRemaining negative", putInt(DATA_REMAINING, -1), "RDMA-wrote"),
                Arguments.of("DataLength beyond the message", putInt(DATA_LENGTH, 4096), "Unable to deserialize"),
                Arguments.of("DataOffset inside the header", both(cut(81), putShort(DATA_OFFSET, 0)), null),
                Arguments.of("StructureSize 0", putShort(STRUCTURE_SIZE, 0), null),
                Arguments.of("another request's message id", otherMessageId(), null),
                Arguments.of("an interim response (STATUS_PENDING, async) and nothing after it",
                        both(putInt(STATUS, 0x00000103), putInt(FLAGS, 0x3)), null),
                Arguments.of("signed without a session", putInt(FLAGS, 0x9), null),
                Arguments.of("NextCommand beyond the message", putInt(NEXT_COMMAND, 4096), "leaves the message"),
                Arguments.of("NextCommand inside the header", putInt(NEXT_COMMAND, 8), "leaves the message"),
                Arguments.of("NextCommand at the last byte", putInt(NEXT_COMMAND, 80), "leaves the message"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("faults")
    void faultyReadResponse_endsTheRead_andLosesNothing(String fault, UnaryOperator<ByteBuffer> mangle, String saying)
            throws Exception {
        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        try (SMBClient second = new SMBClient(smbj.configBuilder().withDialects(SMB2Dialect.SMB_3_0_2).build())) {
            // another connection of the same transport, open meanwhile
            Connection other = second.connect(server.address().getAddress().getHostAddress(), server.address().getPort());
            server.mangle = mangle;
            Object outcome = read();
            check(fault, outcome, saying);
            afterwards(fault, c, outcome);
            assertTrue(other.isConnected(), fault + ": the other connection is open");
            SMB2ReadRequest r = new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, 0, 0, 0, LENGTH);
            assertArrayEquals(java.util.Arrays.copyOf(content, LENGTH), other.<SMB2ReadResponse>send(r)
                    .get(GOOD_WAIT_MILLIS, TimeUnit.MILLISECONDS).getData(), fault + ": the other connection reads");
        }
    }

    private void check(String fault, Object outcome, String saying) throws Exception {
        if (saying != null) {
            assertTrue(outcome instanceof Throwable && chain((Throwable) outcome).contains(saying),
                    fault + ": the READ fails saying \"" + saying + "\", not: " + outcome);
            // before the READ learns it, the transport has stopped: nothing is sent after such a message
            assertFalse(connection.isConnected(), fault + ": the transport still takes requests");
            Object next = read();
            assertTrue(next instanceof TransportException && chain((Throwable) next).contains("faulty message from the "
                    + "server"), fault + ": a request after it is refused at once, saying why, not: " + next);
        }
    }

    /**
     * MS-SMB2 3.2.5.1.3: a signed response to a READ of a session smbj has is taken when its
     * signature verifies, and ends the transport, saying so, when it does not (smbj alone would drop
     * it and leave the READ waiting for its timeout). The 8 MiB READ travels as two parts, each
     * checked here with the session's key and merged into one response signed again for smbj.
     */
    @ParameterizedTest(name = "READ of {0} bytes")
    @CsvSource({"65536", "8388608"})
    void signedResponse_verifiedIsTaken_badSignatureEndsTheTransportSayingSo(int length) throws Exception {
        SecretKey key = session(SESSION);
        server.mangle = signed(key, false);
        Object good = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, length), GOOD_WAIT_MILLIS);
        assertTrue(good instanceof SMB2ReadResponse, "a READ whose response verifies: " + good);
        assertArrayEquals(java.util.Arrays.copyOf(content, length), ((SMB2ReadResponse) good).getData());
        assertEquals(0, smbj.statistics().signatureFailures());

        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        server.mangle = signed(key, true);
        Object bad = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, length), WAIT_MILLIS);
        check("a bad signature", bad, "failed signature verification (MS-SMB2 3.2.5.1.3)");
        assertEquals(1, smbj.statistics().signatureFailures());
        afterwards("a bad signature", c, bad);
    }

    /**
     * ksmbd signs a READ response without data over the 4-byte transport length and the response
     * (ResponseSignatures): taken by default, as the data it names arrived; each response so signed
     * is counted (an 8 MiB READ is two parts, two responses), none as a failure, and the connection
     * carries on.
     */
    @ParameterizedTest(name = "READ of {0} bytes")
    @CsvSource({"65536, 1", "8388608, 2"})
    void readResponse_signedAsKsmbdSignsIt_takenAndCounted(int length, int responses) throws Exception {
        SecretKey key = session(SESSION);
        server.mangle = signedAsKsmbd(key);
        for (int i = 1; i <= 2; i++) {
            Object good = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, length), GOOD_WAIT_MILLIS);
            assertTrue(good instanceof SMB2ReadResponse, "READ " + i + ": " + good);
            assertArrayEquals(java.util.Arrays.copyOf(content, length), ((SMB2ReadResponse) good).getData());
            assertEquals(i * responses, smbj.statistics().toleratedReadSignatures(), "after READ " + i);
        }
        assertEquals(0, smbj.statistics().signatureFailures());
        assertTrue(connection.isConnected());
    }

    /**
     * A READ at the end of the file through the RDMA channel: ksmbd answers STATUS_END_OF_FILE, an
     * error response it signs as it signs every READ response without data. Taken, whole or in
     * parts (smbj's input stream reads ahead until it meets this answer).
     */
    @ParameterizedTest(name = "READ of {0} bytes")
    @CsvSource({"65536", "4194304"})
    void readAtEndOfFile_errorSignedAsKsmbdSignsIt_theReadGetsTheStatus(int length) throws Exception {
        SecretKey key = session(SESSION);
        server.mangle = signedAsKsmbd(key);
        Object eof = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, SPLIT_LENGTH, length),
                GOOD_WAIT_MILLIS);
        assertTrue(eof instanceof SMB2Packet, "the READ is answered: " + eof);
        assertEquals(NtStatus.STATUS_END_OF_FILE.getValue(), ((SMB2Packet) eof).getHeader().getStatusCode());
        assertEquals(0, smbj.statistics().signatureFailures());
        assertTrue(connection.isConnected());
    }

    /**
     * smbj's input stream keeps one READ ahead: the READ of the next 4 MiB leaves before the last
     * one's response is taken, and the last one ahead meets the end of the file. With ksmbd's
     * signatures every READ is answered.
     */
    @Test
    void readsAhead_toTheEndOfTheFile_signedAsKsmbdSignsThem_everyReadAnswered() throws Exception {
        SecretKey key = session(SESSION);
        server.mangle = signedAsKsmbd(key);
        int chunk = 4 << 20;
        java.util.concurrent.Future<SMB2Packet> ahead = connection.send(
                new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, chunk));
        for (long offset = 0; offset <= SPLIT_LENGTH; offset += chunk) {
            SMB2Packet r = ahead.get(GOOD_WAIT_MILLIS, TimeUnit.MILLISECONDS);
            if (offset < SPLIT_LENGTH) {
                ahead = connection.send(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, offset + chunk, chunk));
                assertEquals(0, r.getHeader().getStatusCode(), "READ at " + offset);
                assertArrayEquals(java.util.Arrays.copyOfRange(content, (int) offset, (int) offset + chunk),
                        ((SMB2ReadResponse) r).getData(), "READ at " + offset);
            } else {
                assertEquals(NtStatus.STATUS_END_OF_FILE.getValue(), r.getHeader().getStatusCode(), "READ at the end");
            }
        }
        assertEquals(0, smbj.statistics().signatureFailures());
    }

    /** With strictSignatures the same READ ends the transport as any bad signature does. */
    @ParameterizedTest(name = "READ of {0} bytes")
    @CsvSource({"65536", "8388608"})
    void readResponse_signedAsKsmbdSignsIt_strict_endsTheTransportSayingSo(int length) throws Exception {
        sim.close();
        sim = new SmbjOverSim(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().strictSignatures(true).build(),
                SmbDirectConfig.defaults());
        server = sim.server;
        smbj = sim.smbj;
        server.content = content;
        connect();
        SecretKey key = session(SESSION);
        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        server.mangle = signedAsKsmbd(key);
        Object bad = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, length), WAIT_MILLIS);
        check("ksmbd's signature, strict", bad, "failed signature verification (MS-SMB2 3.2.5.1.3)");
        assertEquals(1, smbj.statistics().signatureFailures());
        assertEquals(0, smbj.statistics().toleratedReadSignatures());
        afterwards("ksmbd's signature, strict", c, bad);
    }

    /** ksmbd's form is lived with for READ responses only: a WRITE response so signed ends the transport. */
    @Test
    void writeResponse_signedAsKsmbdSignsReads_endsTheTransport() throws Exception {
        SecretKey key = session(SESSION);
        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        server.mangle = signedAsKsmbd(key);
        Object bad = outcome(new SMB2WriteRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0,
                new ArrayByteChunkProvider(java.util.Arrays.copyOf(content, LENGTH), 0), LENGTH), WAIT_MILLIS);
        check("a WRITE response signed as ksmbd signs READs", bad, "failed signature verification (MS-SMB2 3.2.5.1.3)");
        assertEquals(0, smbj.statistics().toleratedReadSignatures());
        afterwards("a WRITE response signed as ksmbd signs READs", c, bad);
    }

    /**
     * The race between a split READ's parts and its first part's bad response, made certain: the
     * response to the first part fails verification, and the connection has ended, before the
     * second part is sent. The READ fails saying why (the signature), not that its second part could not
     * be sent on a closed connection.
     */
    @Test
    void signedResponse_badSignatureBeforeTheNextPartIsSent_theReadFailsSayingWhy() throws Exception {
        SecretKey key = session(SESSION);
        server.mangle = signed(key, true);
        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        for (SmbDirectTransportLayer layer : ((SmbjTransportImpl) smbj).layers()) {
            layer.rdmaChannel().afterPartSent = () -> {
                try {
                    SmbjOverSim.waitUntil(() -> smbj.statistics().signatureFailures() == 1 && c.loss().isPresent(),
                            "the first part's bad response, and the connection's end");
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            };
        }
        Object bad = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, 8388608), WAIT_MILLIS);
        assertFalse(c.isOpen());
        check("a bad signature before the second part", bad, "failed signature verification (MS-SMB2 3.2.5.1.3)");
        assertEquals(1, smbj.statistics().signatureFailures());
    }

    /**
     * A signed response is verified once: here, where a bad one ends the transport saying so; smbj
     * takes the verified response as verified (its "decrypted" packet data) instead of making and
     * keying a MAC of its own for each. Counted as the MACs smbj's security provider makes: the
     * transport's one, kept with its key, and none per response.
     */
    @Test
    void signedResponses_verifiedOnce_notAgainBySmbj() throws Exception {
        java.util.concurrent.atomic.AtomicInteger macs = new java.util.concurrent.atomic.AtomicInteger();
        BCSecurityProvider bc = new BCSecurityProvider();
        com.hierynomus.security.SecurityProvider counting = new com.hierynomus.security.SecurityProvider() {
            @Override
            public com.hierynomus.security.MessageDigest getDigest(String name) throws SecurityException {
                return bc.getDigest(name);
            }

            @Override
            public com.hierynomus.security.Mac getMac(String name) throws SecurityException {
                macs.incrementAndGet();
                return bc.getMac(name);
            }

            @Override
            public com.hierynomus.security.Cipher getCipher(String name) throws SecurityException {
                return bc.getCipher(name);
            }

            @Override
            public com.hierynomus.security.AEADBlockCipher getAEADBlockCipher(String name) throws SecurityException {
                return bc.getAEADBlockCipher(name);
            }

            @Override
            public com.hierynomus.security.DerivationFunction getDerivationFunction(String name) throws SecurityException {
                return bc.getDerivationFunction(name);
            }
        };
        try (SMBClient client = new SMBClient(smbj.configBuilder().withDialects(SMB2Dialect.SMB_3_0_2)
                .withSecurityProvider(counting).withTimeout(30, TimeUnit.SECONDS).build())) {
            connection = client.connect(server.address().getAddress().getHostAddress(), server.address().getPort());
            server.mangle = signed(session(SESSION), false);
            for (int i = 0; i < 10; i++) {
                Object good = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, LENGTH),
                        GOOD_WAIT_MILLIS);
                assertTrue(good instanceof SMB2ReadResponse, "READ " + i + ": " + good);
                assertArrayEquals(java.util.Arrays.copyOf(content, LENGTH), ((SMB2ReadResponse) good).getData());
            }
            assertEquals(1, macs.get(), "MACs made for 10 signed responses");
        }
    }

    /**
     * MS-SMB2 3.3.5.2.9: a server with no session for the request answers
     * STATUS_USER_SESSION_DELETED, and cannot sign it; ksmbd flags it signed with a signature of
     * zeros when it tears a connection down (as when it stops). The READ gets that status at once
     * (smbj alone would drop the answer as badly signed), nothing is counted as a signature
     * failure, the READ's registration ends, and the connection carries on.
     */
    @ParameterizedTest(name = "READ of {0} bytes")
    @CsvSource({"65536", "8388608"})
    void sessionDeleted_flaggedSignedWithoutSignature_theReadGetsTheStatus(int length) throws Exception {
        session(SESSION);
        SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
        server.mangle = sessionDeleted();
        Object outcome = outcome(new SMB2ReadRequest(SMB2Dialect.SMB_3_0_2, FILE, SESSION, 0, 0, length),
                GOOD_WAIT_MILLIS);
        assertTrue(outcome instanceof SMB2Packet, "the READ is answered: " + outcome);
        assertEquals(NtStatus.STATUS_USER_SESSION_DELETED.getValue(), ((SMB2Packet) outcome).getHeader().getStatusCode());
        assertEquals(0, smbj.statistics().signatureFailures());
        assertTrue(connection.isConnected(), "the transport still takes requests");
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 0,
                "the READ's registration ended (" + c.statistics().registrationsLive() + ")");
        afterwards("STATUS_USER_SESSION_DELETED", c, outcome);
        assertTrue(c.isOpen(), "the good READ after it went over the same connection");
    }

    /** The response turned into ksmbd's answer for a session it no longer has (2.2.2: an error response of 73 bytes). */
    private static UnaryOperator<ByteBuffer> sessionDeleted() {
        return b -> {
            ByteBuffer m = ByteBuffer.allocate(Smb2Messages.HEADER_SIZE + 9).order(ByteOrder.LITTLE_ENDIAN);
            m.put(b.duplicate().limit(Smb2Messages.HEADER_SIZE));
            m.putInt(STATUS, (int) NtStatus.STATUS_USER_SESSION_DELETED.getValue());
            m.putInt(FLAGS, m.getInt(FLAGS) | Smb2Messages.SMB2_FLAGS_SIGNED);
            m.putLong(Smb2Messages.SESSION_ID, SESSION);
            for (int i = 0; i < Smb2Messages.SIGNATURE_SIZE; i++) {
                m.put(Smb2Messages.SIGNATURE + i, (byte) 0);
            }
            m.putShort(Smb2Messages.HEADER_SIZE, (short) 9); // StructureSize; the rest, and ErrorData's byte, 0
            return m.position(0);
        };
    }

    /**
     * A session smbj has, with a signing key, as if SESSION_SETUP had made it (the fake server
     * authenticates nobody): what the transport and smbj look signed responses up in.
     */
    private SecretKey session(long id) throws Exception {
        byte[] k = new byte[16];
        new Random(id).nextBytes(k);
        SecretKey key = new SecretKeySpec(k, "AESCMAC");
        Session session = new Session(connection, null, null, null, null, null, null);
        session.setSessionId(id);
        session.getSessionContext().setSigningKey(key);
        Method register = SessionTable.class.getDeclaredMethod("registerSession", Long.class, Session.class);
        register.setAccessible(true);
        register.invoke(SmbjInternals.sessionTable(connection), id, session);
        return key;
    }

    /** The response of the session {@link #SESSION}, signed with the key; with one bit of the signature wrong if asked. */
    private static UnaryOperator<ByteBuffer> signed(SecretKey key, boolean wrong) {
        Smb2Signing signing = new Smb2Signing(new BCSecurityProvider());
        return b -> {
            byte[] m = new byte[b.remaining()];
            b.duplicate().get(m);
            ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN).putLong(Smb2Messages.SESSION_ID, SESSION);
            try {
                signing.sign(m, key);
            } catch (SecurityException e) {
                throw new IllegalStateException(e);
            }
            if (wrong) {
                m[Smb2Messages.SIGNATURE + 5] ^= 0x10;
            }
            return ByteBuffer.wrap(m);
        };
    }

    /**
     * The response of the session {@link #SESSION}, signed as ksmbd signs a READ response without
     * data: the MAC over the 4-byte big-endian transport length, then the message with its
     * Signature zeroed (computed here from scratch, not with the transport's code).
     */
    private static UnaryOperator<ByteBuffer> signedAsKsmbd(SecretKey key) {
        return b -> {
            byte[] m = new byte[b.remaining()];
            b.duplicate().get(m);
            ByteBuffer w = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
            w.putLong(Smb2Messages.SESSION_ID, SESSION);
            w.putInt(FLAGS, w.getInt(FLAGS) | Smb2Messages.SMB2_FLAGS_SIGNED);
            java.util.Arrays.fill(m, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE, (byte) 0);
            try {
                com.hierynomus.security.Mac mac = new BCSecurityProvider().getMac(key.getAlgorithm());
                mac.init(key.getEncoded());
                mac.update(ByteBuffer.allocate(4).putInt(m.length).array());
                mac.update(m);
                System.arraycopy(mac.doFinal(), 0, m, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE_SIZE);
            } catch (SecurityException e) {
                throw new IllegalStateException(e);
            }
            return ByteBuffer.wrap(m);
        };
    }

    /**
     * Responses with one to four bytes changed at random (fixed seeds): each request ends, and
     * what is left is whole. 64 KiB READs; 8 MiB READs, whose two parts' responses are changed
     * each in its own way; 64 KiB WRITEs (of the bytes the file has, so that it stays as it is).
     */
    @ParameterizedTest(name = "{0} of {1} bytes, {2} times")
    @CsvSource({"READ, 65536, 60", "READ, 8388608, 12", "WRITE, 65536, 30"})
    void randomlyChangedResponses_endTheRequest_andLoseNothing(String command, int length, int count) throws Exception {
        Random random = new Random(1414 + length + command.hashCode());
        for (int i = 0; i < count; i++) {
            SmbDirectConnection c = smbj.connectionOf(connection).orElseThrow();
            long seed = random.nextLong();
            Random r = new Random(seed);
            server.mangle = b -> {
                ByteBuffer d = b.duplicate();
                for (int n = 1 + r.nextInt(4); n > 0; n--) {
                    int at = r.nextInt(d.limit());
                    d.put(at, (byte) (d.get(at) ^ (1 + r.nextInt(255))));
                }
                return d.position(0);
            };
            Object outcome = command.equals("READ") ? read(length, WAIT_MILLIS) : write(length);
            afterwards(command + " change " + i + " (seed " + seed + ")", c, outcome);
        }
    }

    /** One WRITE through the RDMA channel of the file's first bytes: the response, or why there is none. */
    private Object write(int length) throws Exception {
        return outcome(new SMB2WriteRequest(SMB2Dialect.SMB_3_0_2, FILE, 0, 0,
                new ArrayByteChunkProvider(java.util.Arrays.copyOf(content, length), 0), length), WAIT_MILLIS);
    }

    /**
     * What must hold after a faulty response: no uncaught exception anywhere; a connection that
     * ended holds no registration; a connection still open (with no READ left waiting) carries a
     * good READ; otherwise a new connection does.
     */
    private void afterwards(String fault, SmbDirectConnection c, Object outcome) throws Exception {
        assertEquals(List.of(), uncaught, fault + ": uncaught exceptions");
        server.mangle = null;
        Connection old = connection;
        if (outcome instanceof TimeoutException || !connection.isConnected()) {
            // a READ still waiting keeps its registration until its connection ends
            connection.close(true);
            SmbjOverSim.waitUntil(() -> !c.isOpen(), fault + ": the connection ends");
        }
        if (!c.isOpen()) {
            ended(fault, c);
        }
        Object good = read(LENGTH, GOOD_WAIT_MILLIS);
        if (!(good instanceof SMB2ReadResponse) && connection == old) {
            // smbj may hand the faulty READ its response before the rest of the message fails
            // (a compounded response cut short), and the READ sent meanwhile fails with it: the
            // connection ends just after
            SmbjOverSim.waitUntil(() -> !c.isOpen(), fault + ": the connection ends after " + good);
            ended(fault, c);
            good = read(LENGTH, GOOD_WAIT_MILLIS);
        }
        if (!(good instanceof SMB2ReadResponse)) {
            fail(fault + ": the READ after it fails: " + good + " (the faulty one: " + outcome + ")");
        }
        assertArrayEquals(java.util.Arrays.copyOf(content, LENGTH), ((SMB2ReadResponse) good).getData(),
                fault + ": the READ after it");
        assertEquals(List.of(), uncaught, fault + ": uncaught exceptions");
    }

    /** The connection ended: it holds no registration, and a new one is made. */
    private void ended(String fault, SmbDirectConnection c) throws Exception {
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 0,
                fault + ": no registration left (" + c.statistics().registrationsLive() + ")");
        connect();
    }

    private static String chain(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable x = t; x != null; x = x.getCause()) {
            b.append(x).append(" / ");
        }
        return b.toString();
    }
}
