package org.smbdirect.interop.guest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Random;

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
                Guest.run(60, java.util.List.of("sync"));
                assertArrayEquals(up, Files.readAllBytes(Guest.SHARE.resolve("to-ksmbd.bin")),
                        "what cifs wrote is on ksmbd's share");
                byte[] down = new byte[SIZE];
                r.nextBytes(down);
                Files.write(Guest.SHARE.resolve("from-ksmbd.bin"), down);
                assertArrayEquals(down, Files.readAllBytes(mnt.resolve("from-ksmbd.bin")),
                        "what is on ksmbd's share reads back through cifs");
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
}
