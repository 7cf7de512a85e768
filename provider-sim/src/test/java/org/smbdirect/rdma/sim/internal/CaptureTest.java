package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;
import org.smbdirect.rdma.tck.Link;
import org.smbdirect.rdma.tck.LinkSpec;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderTck;

/**
 * The RoCEv2 capture: a small session written to a pcap file, read back by this test (record
 * structure, ICRC of every frame) and by {@code tshark} (opens without error, one frame per packet
 * as documented, opcodes and queue pair numbers as done, SMB Direct decoded from send payloads).
 * The tshark parts are skipped, saying so, where tshark is not installed.
 */
class CaptureTest extends ProviderTck {
    private final Path dir;
    private final Path file;
    private final Map<String, Object> config = new HashMap<>();

    CaptureTest() throws IOException {
        dir = Files.createTempDirectory("sim-capture");
        file = dir.resolve("session.pcap");
        config.put("capture.enabled", true);
        config.put("capture.path", file.toString());
        config.put("capture.mtu", 4096);
    }

    @Override
    protected ProviderFixture fixture() {
        return new SimFixture(true, config);
    }

    @org.junit.jupiter.api.AfterEach
    void deleteCapture() throws IOException {
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    // ---------------------------------------------------------------- the session

    /** MS-SMBD 2.2.1 negotiate request: 20 bytes, little-endian. */
    static byte[] negotiateRequest() {
        ByteBuffer b = ByteBuffer.allocate(20).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) 0x0100).putShort((short) 0x0100).putShort((short) 0).putShort((short) 255)
                .putInt(1364).putInt(8192).putInt(1 << 20);
        return b.array();
    }

    /** MS-SMBD 2.2.2 negotiate response: 32 bytes, little-endian. */
    static byte[] negotiateResponse() {
        ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) 0x0100).putShort((short) 0x0100).putShort((short) 0x0100).putShort((short) 0)
                .putShort((short) 255).putShort((short) 1).putInt(0).putInt(1 << 20).putInt(1364).putInt(8192)
                .putInt(1 << 20);
        return b.array();
    }

    private int[] session() throws Exception {
        byte[] irdOrd = {0, 0, 0, 16, 0, 0, 0, 16}; // MS-SMBD 6.1 IRD/ORD header as private data
        Link l = link(new LinkSpec().connectData(irdOrd).acceptData(irdOrd));
        MemoryRegion sin = l.server().register(8192, Access.LOCAL_WRITE);
        MemoryRegion cin = l.client().register(8192, Access.LOCAL_WRITE);
        MemoryRegion target = l.server().register(16384, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
        MemoryRegion out = l.client().register(16384, Access.LOCAL_WRITE);
        MemoryRegion sout = l.server().register(64, 0);
        l.server().postReceive("r1", sin);
        l.server().postReceive("r2", sin);
        l.client().postReceive("c1", cin);
        out.buffer().put(0, negotiateRequest());
        l.client().send("negotiate", out, 0, 20, 0);
        l.client().sendCq().next();
        l.server().recvCq().next();
        sout.buffer().put(0, negotiateResponse());
        l.server().send("response", sout, 0, 32, 0);
        l.server().sendCq().next();
        l.client().recvCq().next();
        // one operation at a time, so that the frames come in a fixed order
        Sge[] small = {Sge.of(out, 100, 100)};
        l.client().endpoint().postWrite("w", small, 1, target.remoteOffset() + 64, target.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        l.client().endpoint().postRead("r", small, 1, target.remoteOffset() + 64, target.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        l.client().endpoint().postSendAndInvalidate("si", new Sge[] {Sge.of(out, 0, 24)}, 1, RequestFlags.SOLICIT_EVENT,
                target.token());
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        MemoryRegion target2 = l.server().register(16384, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        l.client().endpoint().postWrite("big", new Sge[] {Sge.of(out, 0, 10000)}, 1, target2.remoteOffset(),
                target2.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        l.client().endpoint().disconnect();
        l.client().events().awaitTerminal();
        l.server().events().awaitTerminal();
        int clientQpn = ((SimEndpoint) l.client().endpoint()).qpn;
        int serverQpn = ((SimEndpoint) l.server().endpoint()).qpn;
        client().close(); // flushes and closes the capture
        return new int[] {clientQpn, serverQpn};
    }

    // ---------------------------------------------------------------- pcap reading

    private static final class Frame {
        final int caplen;
        final int origlen;
        final byte[] data;

        Frame(int caplen, int origlen, byte[] data) {
            this.caplen = caplen;
            this.origlen = origlen;
            this.data = data;
        }
    }

    private static List<Frame> read(Path p, int expectedSnap) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(0xa1b2c3d4, b.getInt(), "pcap magic, microsecond timestamps");
        assertEquals(2, b.getShort());
        assertEquals(4, b.getShort());
        b.getInt();
        b.getInt();
        assertEquals(expectedSnap, b.getInt(), "snap length");
        assertEquals(1, b.getInt(), "link type Ethernet");
        List<Frame> frames = new ArrayList<>();
        while (b.hasRemaining()) {
            b.getInt();
            int usec = b.getInt();
            assertTrue(usec >= 0 && usec < 1_000_000);
            int caplen = b.getInt();
            int origlen = b.getInt();
            assertTrue(caplen <= origlen && caplen <= expectedSnap);
            byte[] data = new byte[caplen];
            b.get(data);
            frames.add(new Frame(caplen, origlen, data));
        }
        return frames;
    }

    private static int opcode(Frame f) {
        return f.data[42] & 0xFF;
    }

    private static int destQp(Frame f) {
        return (f.data[47] & 0xFF) << 16 | (f.data[48] & 0xFF) << 8 | (f.data[49] & 0xFF);
    }

    // ---------------------------------------------------------------- tshark

    private static String tshark(Path p, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add("tshark");
        cmd.add("-r");
        cmd.add(p.toString());
        cmd.addAll(List.of(args));
        Process proc;
        try {
            proc = new ProcessBuilder(cmd).redirectErrorStream(false).start();
        } catch (IOException e) {
            Assumptions.abort("tshark is not installed (" + e.getMessage() + "); the capture was checked without it");
            return null;
        }
        byte[] out = proc.getInputStream().readAllBytes();
        String err = new String(proc.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, proc.exitValue(), "tshark failed: " + err);
        for (String line : err.split("\n")) {
            assertTrue(line.isBlank() || line.contains("Running as user"), "tshark complained: " + line);
        }
        return new String(out, StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------- tests

    /** The frames of the session: [opcode, direction (0 client to server), CM attribute or -1]. */
    private static final int[][] EXPECTED = {
        {0x64, 0, 0x10}, {0x64, 1, 0x13}, {0x64, 0, 0x14},       // CM ConnectRequest, ConnectReply, ReadyToUse
        {0x04, 0, -1}, {0x11, 1, -1},                            // SEND ONLY (negotiate request), ACKNOWLEDGE
        {0x04, 1, -1}, {0x11, 0, -1},                            // SEND ONLY (negotiate response), ACKNOWLEDGE
        {0x0A, 0, -1}, {0x11, 1, -1},                            // RDMA WRITE ONLY, ACKNOWLEDGE
        {0x0C, 0, -1}, {0x10, 1, -1},                            // RDMA READ Request, READ Response ONLY
        {0x17, 0, -1}, {0x11, 1, -1},                            // SEND ONLY with Invalidate, ACKNOWLEDGE
        {0x06, 0, -1}, {0x07, 0, -1}, {0x08, 0, -1}, {0x11, 1, -1}, // 10000-byte WRITE FIRST/MIDDLE/LAST, ACK
        {0x64, 0, 0x15}, {0x64, 1, 0x16}};                       // CM DisconnectRequest, DisconnectReply

    @Test
    void session_framesAsDocumented_icrcCorrect() throws Exception {
        int[] qpn = session();
        List<Frame> frames = read(file, 65535);
        assertEquals(EXPECTED.length, frames.size(), "one frame per packet as documented");
        for (int i = 0; i < EXPECTED.length; i++) {
            Frame f = frames.get(i);
            assertEquals(f.caplen, f.origlen);
            assertEquals(EXPECTED[i][0], opcode(f), "opcode of frame " + (i + 1));
            int dest = EXPECTED[i][0] == 0x64 ? 1 : EXPECTED[i][1] == 0 ? qpn[1] : qpn[0];
            assertEquals(dest, destQp(f), "destination QP of frame " + (i + 1));
            assertEquals(4791, (f.data[36] & 0xFF) << 8 | (f.data[37] & 0xFF), "RoCEv2 UDP port");
            int end = f.origlen - 4;
            int stored = (f.data[end] & 0xFF) | (f.data[end + 1] & 0xFF) << 8 | (f.data[end + 2] & 0xFF) << 16
                    | (f.data[end + 3] & 0xFF) << 24;
            assertEquals(RoceFramer.icrc(f.data, end), stored, "ICRC of frame " + (i + 1));
        }
        assertEquals(4096 + 14 + 20 + 8 + 12 + 16 + 4, frames.get(13).origlen, "first WRITE packet carries one MTU");
    }

    @Test
    void tshark_showsTheOperations_andDecodesSmbDirect() throws Exception {
        int[] qpn = session();
        String fields = tshark(file, "-T", "fields", "-E", "separator=;", "-e", "frame.number", "-e",
                "infiniband.bth.opcode", "-e", "infiniband.bth.destqp", "-e", "infiniband.mad.attributeid", "-e",
                "smb_direct.negotiate_request", "-e", "smb_direct.credits.requested", "-e", "smb_direct.max_receive_size",
                "-e", "infiniband.ieth", "-e", "infiniband.reth.dmalen", "-e", "infiniband.cm.req.serviceid.dport",
                "-e", "infiniband.bth.se");
        String[] lines = fields.strip().split("\n");
        assertEquals(EXPECTED.length, lines.length, fields);
        for (int i = 0; i < EXPECTED.length; i++) {
            String[] f = lines[i].split(";", -1);
            assertEquals(Integer.toString(i + 1), f[0]);
            assertEquals(Integer.toString(EXPECTED[i][0]), f[1], "opcode of frame " + (i + 1) + ": " + lines[i]);
            int dest = EXPECTED[i][0] == 0x64 ? 1 : EXPECTED[i][1] == 0 ? qpn[1] : qpn[0];
            assertEquals(dest, Integer.decode(f[2]), "destination QP of frame " + (i + 1));
            if (EXPECTED[i][2] >= 0) {
                assertEquals(EXPECTED[i][2], Integer.decode(f[3]), "CM attribute of frame " + (i + 1));
            }
        }
        String[] negotiate = lines[3].split(";", -1);
        assertFalse(negotiate[4].isEmpty(), "frame 4 decodes as an SMB Direct NegotiateRequest: " + lines[3]);
        assertEquals("255", negotiate[5]);
        assertEquals("8192", negotiate[6]);
        assertFalse(lines[11].split(";", -1)[7].isEmpty(), "SEND with Invalidate carries an IETH");
        assertEquals("1", lines[11].split(";", -1)[10].replace("True", "1"), "the solicited event bit");
        assertEquals("10000", lines[13].split(";", -1)[8], "the first WRITE packet's RETH has the whole length");
        String summary = tshark(file);
        assertTrue(summary.contains("NegotiateRequest"), summary);
        assertTrue(summary.contains("NegotiateResponse"), summary);
        String expert = tshark(file, "-q", "-z", "expert,error");
        assertFalse(expert.contains("Malformed"), expert);
    }

    @Test
    void refusedAccess_showsNak() throws Exception {
        Link l = link();
        MemoryRegion src = l.client().register(8, 0);
        l.client().endpoint().postWrite("w", new Sge[] {Sge.of(src)}, 1, 0, 42, 0);
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, l.client().sendCq().next().status());
        l.client().events().awaitTerminal();
        client().close();
        List<Frame> frames = read(file, 65535);
        Frame nak = frames.get(4);
        assertEquals(0x11, opcode(nak));
        assertEquals(CaptureSet.SYNDROME_REMOTE_ACCESS, nak.data[54] & 0xFF, "AETH syndrome: NAK remote access error");
    }

    @Test
    void boundedSize_andSnapLength() throws Exception {
        config.put("capture.maxFileBytes", 8192);
        config.put("capture.snapLength", 96);
        openProvidersAgain();
        Link l = link();
        MemoryRegion target = l.server().register(65536, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion src = l.client().register(65536, 0);
        for (int i = 0; i < 20; i++) {
            l.client().endpoint().postWrite("w" + i, new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(), 0);
            assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        }
        long dropped = ((SimProvider) client()).capture().dropped();
        client().close();
        assertTrue(Files.size(file) <= 8192, "file of " + Files.size(file) + " bytes");
        assertTrue(dropped > 0, "frames beyond the bound were counted as dropped");
        List<Frame> frames = read(file, 96);
        assertTrue(frames.size() > 10);
        assertTrue(frames.stream().anyMatch(f -> f.caplen == 96 && f.origlen > 4000), "long frames are cut to the snap length");
        tshark(file); // opens without error
    }

    /** Turning capture on or off applies to connections already running. */
    @Test
    void reconfigure_turnsCaptureOnAndOffForRunningConnections() throws Exception {
        SimProvider p = (SimProvider) client();
        Link l = link();
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        MemoryRegion out = l.client().register(64, 0);
        Map<String, Object> off = new HashMap<>(config);
        off.put("capture.enabled", false);
        off.put("fabric", p.settings.fabric);
        p.reconfigure(SimSettings.fromMap(off));
        l.server().postReceive("r0", in);
        l.client().send("unseen", out, 0, 8, 0);
        l.client().sendCq().next();
        Path second = dir.resolve("second.pcap");
        Map<String, Object> on = new HashMap<>(off);
        on.put("capture.enabled", true);
        on.put("capture.path", second.toString());
        p.reconfigure(SimSettings.fromMap(on));
        l.server().postReceive("r1", in);
        l.client().send("seen", out, 0, 8, 0);
        l.client().sendCq().next();
        client().close();
        List<Frame> first = read(file, 65535);
        assertEquals(3, first.size(), "the first file has the connection set-up only");
        List<Frame> frames = read(second, 65535);
        assertEquals(List.of(0x04, 0x11, 0x64, 0x64), frames.stream().map(CaptureTest::opcode).collect(
                java.util.stream.Collectors.toList()), "the second file has the later send, its ACK and the disconnect");
    }

    private void openProvidersAgain() throws Exception {
        closeProviders();
        openProviders();
    }
}
