package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * The control: Linux cifs mounts the Linux ksmbd share with {@code -o rdma} in the same guest and
 * copies a file both ways. It proves the harness (modules, ksmbd's configuration, the RDMA device)
 * before the engine is blamed for anything.
 */
class LinuxControlTest {
    private static final int SIZE = 16 << 20;

    @Test
    void cifsMountsKsmbdOverRdma_copiesSixteenMiBBothWays() throws Exception {
        Path mnt = Paths.get("/tmp/interop-mnt-control");
        Files.createDirectories(mnt);
        Guest.peers("dmesg-mark");
        Guest.peers("ksmbd-start", Guest.SHARE.toString(), Guest.USER, Guest.PASSWORD);
        try {
            Guest.peers("cifs-mount", "//" + Guest.address().getHostAddress() + "/share", mnt.toString());
            try {
                Random r = new Random(12);
                byte[] up = new byte[SIZE];
                r.nextBytes(up);
                Files.write(mnt.resolve("to-ksmbd.bin"), up);
                Guest.run(60, List.of("sync"));
                assertArrayEquals(up, Files.readAllBytes(Guest.SHARE.resolve("to-ksmbd.bin")),
                        "what cifs wrote is on ksmbd's share");
                byte[] down = new byte[SIZE];
                r.nextBytes(down);
                Files.write(Guest.SHARE.resolve("from-ksmbd.bin"), down);
                assertArrayEquals(down, Files.readAllBytes(mnt.resolve("from-ksmbd.bin")),
                        "what is on ksmbd's share reads back through cifs");
                timedCopies(mnt);
                String debug = Files.readString(Paths.get("/proc/fs/cifs/DebugData"));
                assertTrue(debug.contains("SMBDirect") || debug.contains("RDMA"),
                        "the cifs session runs over SMB Direct:\n" + debug);
                for (String line : debug.split("\n")) {
                    if (line.contains("SMBDirect") || line.contains("RDMA") || line.contains("rdma")) {
                        Guest.record(Guest.transport() + " control cifs DebugData: " + line.trim());
                    }
                }
            } finally {
                Guest.peersResult(60, "cifs-umount", mnt.toString());
            }
        } finally {
            Guest.peersResult(60, "ksmbd-stop");
        }
        Guest.Result dmesg = Guest.peersResult(60, "dmesg-check");
        assertEquals(0, dmesg.exit, "no SMB Direct error in the kernel log:\n" + dmesg.output);
    }

    /**
     * The kernel client's throughput, for BENCHMARKS.md's comparison with the engine's SMB2 client
     * (KsmbdServerTest: 1 MiB READ and WRITE requests through the RDMA channel, one at a time):
     * 16 MiB written and read back with dd in 1 MiB O_DIRECT requests (no page cache: each is one
     * cifs request, through the RDMA channel above cifs's 4 KiB threshold), medians of three.
     */
    private static void timedCopies(Path mnt) throws Exception {
        Path source = Paths.get("/tmp/interop-cifs-source.bin");
        byte[] data = new byte[SIZE];
        new Random(13).nextBytes(data);
        Files.write(source, data);
        double[] write = new double[3];
        double[] read = new double[3];
        Path target = mnt.resolve("timed.bin");
        for (int i = 0; i < 3; i++) {
            write[i] = ddSeconds("if=" + source, "of=" + target, "bs=1M", "oflag=direct");
            read[i] = ddSeconds("if=" + target, "of=/dev/null", "bs=1M", "iflag=direct");
        }
        assertArrayEquals(data, Files.readAllBytes(Guest.SHARE.resolve("timed.bin")), "what dd wrote is on the share");
        Files.delete(source);
        Arrays.sort(write);
        Arrays.sort(read);
        Guest.record(String.format("%s cifs -o rdma to ksmbd: %d MiB in 1 MiB O_DIRECT requests: write %.1f MiB/s, "
                + "read %.1f MiB/s (medians of 3; each run: write %s s, read %s s)", Guest.transport(), SIZE >> 20,
                (SIZE >> 20) / write[1], (SIZE >> 20) / read[1], Arrays.toString(write),
                Arrays.toString(read)));
    }

    /** Runs dd; returns the seconds it reports for the copy ("... copied, 0.51 s, ..."). */
    private static double ddSeconds(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("dd"));
        cmd.addAll(List.of(args));
        Guest.Result r = Guest.run(120, cmd);
        assertEquals(0, r.exit, "dd " + String.join(" ", args) + ":\n" + r.output);
        Matcher m = Pattern.compile("copied, ([0-9.]+) s").matcher(r.output);
        assertTrue(m.find(), "dd's report: " + r.output);
        return Double.parseDouble(m.group(1));
    }
}
