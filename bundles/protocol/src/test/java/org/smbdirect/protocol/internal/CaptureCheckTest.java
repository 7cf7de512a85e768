package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * The engine's messages as Wireshark sees them: a session between two engines on the simulated
 * fabric (negotiation, small messages both ways, a fragmented message, an RDMA Read and an RDMA
 * Write through Buffer Descriptor V1 sent in a message) is captured by the sim as RoCEv2, read back
 * with {@code tshark}, and every RC SEND in the capture must be dissected as {@code smb_direct}
 * with exactly the fields the engine logged at TRACE for that message (2.2.1, 2.2.2, 2.2.3), in
 * the same order, per direction. Skipped, saying so, where tshark is not installed.
 */
class CaptureCheckTest {
    private static final Logger CONNECTION_LOG = Logger.getLogger(Connection.class.getName());
    /** "SmbDirectConnection#7[to /10.0.0.1:4] sent DataTransfer[CreditsRequested=255, ...]". */
    private static final Pattern RECORD = Pattern.compile(
            "SmbDirectConnection#(\\d+)\\[[^\\]]*\\] (sent|received) (NegotiateRequest|NegotiateResponse|DataTransfer)\\[(.*)\\]");
    private static final Pattern FIELD = Pattern.compile("(\\w+)=(0x[0-9A-Fa-f]+|\\d+)");
    /** The RC SEND opcodes (IBA 9.2): FIRST, MIDDLE, LAST, ONLY, LAST and ONLY with invalidate. */
    private static final String SEND_OPCODES = "{0, 1, 2, 4, 22, 23}";

    /** tshark's field for each field name the engine logs. */
    private static final Map<String, String> TSHARK_FIELD = new LinkedHashMap<>();

    static {
        TSHARK_FIELD.put("MinVersion", "smb_direct.version.min");
        TSHARK_FIELD.put("MaxVersion", "smb_direct.version.max");
        TSHARK_FIELD.put("NegotiatedVersion", "smb_direct.version.negotiated");
        TSHARK_FIELD.put("CreditsRequested", "smb_direct.credits.requested");
        TSHARK_FIELD.put("CreditsGranted", "smb_direct.credits.granted");
        TSHARK_FIELD.put("Status", "smb_direct.status");
        TSHARK_FIELD.put("MaxReadWriteSize", "smb_direct.max_read_write_size");
        TSHARK_FIELD.put("PreferredSendSize", "smb_direct.preferred_send_size");
        TSHARK_FIELD.put("MaxReceiveSize", "smb_direct.max_receive_size");
        TSHARK_FIELD.put("MaxFragmentedSize", "smb_direct.max_fragmented_size");
        TSHARK_FIELD.put("Flags", "smb_direct.flags");
        TSHARK_FIELD.put("RemainingDataLength", "smb_direct.remaining_length");
        TSHARK_FIELD.put("DataOffset", "smb_direct.data_offset");
        TSHARK_FIELD.put("DataLength", "smb_direct.data_length");
    }

    /** The fields each kind of message has (2.2.1, 2.2.2, 2.2.3). */
    private static final Map<String, List<String>> FIELDS_OF = Map.of(
            "NegotiateRequest", List.of("MinVersion", "MaxVersion", "CreditsRequested", "PreferredSendSize",
                    "MaxReceiveSize", "MaxFragmentedSize"),
            "NegotiateResponse", List.of("MinVersion", "MaxVersion", "NegotiatedVersion", "CreditsRequested",
                    "CreditsGranted", "Status", "MaxReadWriteSize", "PreferredSendSize", "MaxReceiveSize",
                    "MaxFragmentedSize"),
            "DataTransfer", List.of("CreditsRequested", "CreditsGranted", "Flags", "RemainingDataLength",
                    "DataOffset", "DataLength"));

    @TempDir
    Path dir;
    private Fixture fx;
    private final List<String> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getLevel().intValue() <= Level.FINER.intValue()) {
                records.add(r.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };
    private Level previousLevel;

    @BeforeEach
    void setUp() {
        fx = new Fixture();
        previousLevel = CONNECTION_LOG.getLevel();
        CONNECTION_LOG.setLevel(Level.ALL);
        CONNECTION_LOG.addHandler(handler);
    }

    @AfterEach
    void tearDown() {
        CONNECTION_LOG.removeHandler(handler);
        CONNECTION_LOG.setLevel(previousLevel);
        fx.close();
    }

    /** A message as logged by the engine or as dissected by tshark: its kind and its fields. */
    private static final class Message {
        final String kind;
        final Map<String, Long> fields;
        final String where;

        Message(String kind, Map<String, Long> fields, String where) {
            this.kind = kind;
            this.fields = fields;
            this.where = where;
        }

        @Override
        public String toString() {
            return kind + fields + " (" + where + ")";
        }
    }

    @Test
    void everySmbDirectMessageInTheCapture_isDissectedWithTheFieldsTheEngineLogged() throws Exception {
        requireTshark();
        Path pcap = dir.resolve("session.pcap");
        RdmaProvider passiveSide = fx.provider(Map.of("capture.enabled", true, "capture.path", pcap.toString()));
        RdmaProvider activeSide = fx.provider();
        SmbDirectTransport listening = fx.transport(SmbDirectConfig.defaults(), passiveSide);
        SmbDirectTransport connecting = fx.transport(SmbDirectConfig.defaults(), activeSide);
        Recorder passiveUpper = new Recorder();
        Recorder activeUpper = new Recorder();
        SmbDirectListener l = listening.listen(fx.anyAddress(passiveSide), passiveUpper);
        SmbDirectConnection active = connecting.connect(l.localAddress(), activeUpper, Fixture.TIMEOUT);
        SmbDirectConnection passive = passiveUpper.connection();

        // small messages, both ways
        byte[] hello = "hello, passive side".getBytes(StandardCharsets.US_ASCII);
        active.sendAndWait(ByteBuffer.wrap(hello), Fixture.TIMEOUT);
        assertArrayEquals(hello, passiveUpper.message().data);
        byte[] world = "hello, active side".getBytes(StandardCharsets.US_ASCII);
        passive.sendAndWait(ByteBuffer.wrap(world), Fixture.TIMEOUT);
        assertArrayEquals(world, activeUpper.message().data);

        // a fragmented message: 5000 bytes in fragments of MaxSendSize - 24 = 1340 bytes
        byte[] big = new byte[5000];
        new Random(7).nextBytes(big);
        active.sendAndWait(ByteBuffer.wrap(big), Fixture.TIMEOUT);
        assertArrayEquals(big, passiveUpper.message().data);

        // RDMA through descriptors: the passive side registers a buffer and sends its descriptors;
        // the active side reads it, then writes into it
        ByteBuffer exposed = ByteBuffer.allocateDirect(12000);
        byte[] original = new byte[12000];
        new Random(8).nextBytes(original);
        exposed.put(0, original);
        RegisteredBuffer registered = passive.register(exposed, RemoteAccess.READ_WRITE);
        passive.sendAndWait(registered.encodeDescriptors(), Fixture.TIMEOUT);
        byte[] descriptorMessage = activeUpper.message().data;
        List<BufferDescriptorV1> descriptors = BufferDescriptorV1.decodeAll(ByteBuffer.wrap(descriptorMessage),
                descriptorMessage.length / BufferDescriptorV1.SIZE);
        assertEquals(registered.descriptors(), descriptors);
        ByteBuffer readInto = ByteBuffer.allocateDirect(12000);
        active.rdmaRead(readInto, descriptors, 0).toCompletableFuture().get(Fixture.TIMEOUT.toMillis(),
                TimeUnit.MILLISECONDS);
        byte[] read = new byte[12000];
        readInto.get(0, read);
        assertArrayEquals(original, read);
        ByteBuffer written = ByteBuffer.allocateDirect(3000);
        byte[] replacement = new byte[3000];
        new Random(9).nextBytes(replacement);
        written.put(0, replacement);
        active.rdmaWrite(written, descriptors, 4000).toCompletableFuture().get(Fixture.TIMEOUT.toMillis(),
                TimeUnit.MILLISECONDS);
        byte[] done = "done".getBytes(StandardCharsets.US_ASCII);
        active.sendAndWait(ByteBuffer.wrap(done), Fixture.TIMEOUT);
        assertArrayEquals(done, passiveUpper.message().data);
        byte[] placed = new byte[3000];
        exposed.get(4000, placed);
        assertArrayEquals(replacement, placed);
        registered.close();

        int activeId = Fixture.impl(active).id();
        int passiveId = Fixture.impl(passive).id();
        awaitQuiet(activeId, passiveId);
        active.close();
        fx.close(); // flushes and closes the capture

        List<Message> sentByActive = logged(activeId, "sent");
        List<Message> sentByPassive = logged(passiveId, "sent");
        assertEquals("NegotiateRequest", sentByActive.get(0).kind);
        assertEquals("NegotiateResponse", sentByPassive.get(0).kind);
        assertTrue(sentByActive.stream().filter(m -> m.fields.getOrDefault("RemainingDataLength", 0L) > 0).count() >= 3,
                "the 5000-byte message went in 4 fragments: " + sentByActive);
        // What one side sent is what the other received, field by field.
        assertSameMessages(sentByActive, logged(passiveId, "received"));
        assertSameMessages(sentByPassive, logged(activeId, "received"));

        String activeAddress = activeSide.addresses().get(0).getHostAddress();
        String passiveAddress = passiveSide.addresses().get(0).getHostAddress();
        List<Message> captured = new ArrayList<>();
        List<String> fields = new ArrayList<>(List.of("frame.number", "ip.src", "infiniband.bth.opcode",
                "frame.protocols"));
        fields.addAll(TSHARK_FIELD.values());
        List<String[]> rows = tsharkFields(pcap, "infiniband.bth.opcode in " + SEND_OPCODES, fields);
        for (String[] row : rows) {
            assertEquals("4", row[2], "every message fits one packet at MTU 4096 (SEND ONLY): frame " + row[0]);
            assertTrue(row[3].contains("smb_direct"), "frame " + row[0] + " is an RC SEND that tshark did not "
                    + "recognise as SMB Direct: " + String.join(";", row));
            captured.add(dissected(row));
        }
        List<Message> capturedFromActive = new ArrayList<>();
        List<Message> capturedFromPassive = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            String src = rows.get(i)[1];
            if (src.equals(activeAddress)) {
                capturedFromActive.add(captured.get(i));
            } else {
                assertEquals(passiveAddress, src, "frame " + rows.get(i)[0]);
                capturedFromPassive.add(captured.get(i));
            }
        }
        assertSameMessages(sentByActive, capturedFromActive);
        assertSameMessages(sentByPassive, capturedFromPassive);

        System.out.printf("capture %s: %d SMB Direct messages from the initiator and %d from the listener, each "
                + "dissected by tshark with the fields the engine logged%n", pcap, capturedFromActive.size(),
                capturedFromPassive.size());
        for (int i = 0; i < rows.size(); i++) {
            System.out.println("  " + rows.get(i)[1] + " " + captured.get(i));
        }

        // The direct placement is on the wire too, against the descriptor's token and offset.
        List<String[]> rdma = tsharkFields(pcap, "infiniband.bth.opcode in {6, 10, 12}",
                List.of("frame.number", "infiniband.bth.opcode", "infiniband.reth.r_key", "infiniband.reth.va",
                        "infiniband.reth.dmalen"));
        BufferDescriptorV1 d = descriptors.get(0);
        assertTrue(rdma.stream().anyMatch(r -> r[1].equals("12") && Long.decode(r[2]) == Integer.toUnsignedLong(
                d.token()) && Long.decode(r[3]) == d.offset() && Long.decode(r[4]) == 12000),
                "an RDMA READ Request of 12000 bytes at the descriptor: " + rdma.stream().map(r -> String.join(";", r))
                        .toList());
        assertTrue(rdma.stream().anyMatch(r -> (r[1].equals("10") || r[1].equals("6"))
                && Long.decode(r[2]) == Integer.toUnsignedLong(d.token()) && Long.decode(r[3]) == d.offset() + 4000
                && Long.decode(r[4]) == 3000), "an RDMA WRITE of 3000 bytes at descriptor offset 4000");
    }

    /** Waits until each side has received every message the other sent (no credit message in flight). */
    private void awaitQuiet(int activeId, int passiveId) throws InterruptedException {
        long deadline = System.nanoTime() + Fixture.TIMEOUT.toNanos();
        int stableRounds = 0;
        int last = -1;
        while (System.nanoTime() < deadline) {
            boolean balanced = logged(activeId, "sent").size() == logged(passiveId, "received").size()
                    && logged(passiveId, "sent").size() == logged(activeId, "received").size();
            stableRounds = balanced && records.size() == last ? stableRounds + 1 : 0;
            if (stableRounds >= 20) {
                return;
            }
            last = records.size();
            Thread.sleep(5);
        }
        throw new AssertionError("the engines did not become quiet: " + records);
    }

    private List<Message> logged(int connection, String direction) {
        List<Message> out = new ArrayList<>();
        for (String r : records) {
            Matcher m = RECORD.matcher(r);
            assertTrue(m.matches(), "unexpected TRACE record: " + r);
            if (Integer.parseInt(m.group(1)) == connection && m.group(2).equals(direction)) {
                Map<String, Long> fields = new LinkedHashMap<>();
                Matcher f = FIELD.matcher(m.group(4));
                while (f.find()) {
                    fields.put(f.group(1), Long.decode(f.group(2)));
                }
                assertEquals(FIELDS_OF.get(m.group(3)), new ArrayList<>(fields.keySet()), r);
                out.add(new Message(m.group(3), fields, "log: " + r));
            }
        }
        return out;
    }

    /** The message tshark dissected from one row of {@code frame.number;ip.src;opcode;protocols;fields...}. */
    private static Message dissected(String[] row) {
        Map<String, String> values = new LinkedHashMap<>();
        int i = 4;
        for (String name : TSHARK_FIELD.keySet()) {
            values.put(name, i < row.length ? row[i] : "");
            i++;
        }
        String kind;
        if (!values.get("NegotiatedVersion").isEmpty()) {
            kind = "NegotiateResponse";
        } else if (!values.get("MinVersion").isEmpty()) {
            kind = "NegotiateRequest";
        } else {
            kind = "DataTransfer";
        }
        Map<String, Long> fields = new LinkedHashMap<>();
        for (String name : FIELDS_OF.get(kind)) {
            String v = values.get(name);
            assertFalse(v.isEmpty(), "tshark shows no " + TSHARK_FIELD.get(name) + " in frame " + row[0] + " ("
                    + kind + ")");
            fields.put(name, Long.decode(v));
        }
        return new Message(kind, fields, "frame " + row[0]);
    }

    private static void assertSameMessages(List<Message> expected, List<Message> actual) {
        for (int i = 0; i < Math.min(expected.size(), actual.size()); i++) {
            Message e = expected.get(i);
            Message a = actual.get(i);
            assertEquals(e.kind, a.kind, "message " + i + ": " + e + " vs " + a);
            assertEquals(e.fields, a.fields, "message " + i + ": " + e + " vs " + a);
        }
        assertEquals(expected.size(), actual.size(), "message count: expected " + expected + "\nactual " + actual);
    }

    private static void requireTshark() throws InterruptedException {
        try {
            Process p = new ProcessBuilder("tshark", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            p.waitFor(60, TimeUnit.SECONDS);
        } catch (IOException e) {
            Assumptions.abort("tshark is not installed (" + e.getMessage() + "): the capture cannot be dissected; "
                    + "install it (Debian package tshark) to run this check");
        }
    }

    private static List<String[]> tsharkFields(Path pcap, String filter, List<String> fields) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("tshark", "-r", pcap.toString(), "-Y", filter, "-T", "fields",
                "-E", "separator=;", "-E", "occurrence=f"));
        for (String f : fields) {
            cmd.add("-e");
            cmd.add(f);
        }
        Process p = new ProcessBuilder(cmd).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "tshark did not finish");
        assertEquals(0, p.exitValue(), "tshark failed: " + err);
        List<String[]> rows = new ArrayList<>();
        for (String line : new String(out, StandardCharsets.UTF_8).split("\n")) {
            if (!line.isBlank()) {
                rows.add(line.split(";", -1));
            }
        }
        assertFalse(rows.isEmpty(), "tshark found no frame for " + filter + " in " + pcap + " ("
                + Files.size(pcap) + " bytes)");
        return rows;
    }
}
