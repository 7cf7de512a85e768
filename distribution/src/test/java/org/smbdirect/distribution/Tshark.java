package org.smbdirect.distribution;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Decoding captures with tshark, when it is installed (CI installs it). */
final class Tshark {
    private Tshark() {
    }

    static Path find() {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(java.io.File.pathSeparator)) {
            Path p = Paths.get(dir, "tshark");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    /** Runs tshark on a file with a display filter; returns one line per matching frame. */
    static List<String> frames(Path tshark, Path capture, String filter, String... fields) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(tshark.toString(), "-r", capture.toString(), "-Y", filter));
        if (fields.length > 0) {
            cmd.add("-T");
            cmd.add("fields");
            for (String f : fields) {
                cmd.add("-e");
                cmd.add(f);
            }
        }
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(Duration.ofMinutes(2).toMillis(), TimeUnit.MILLISECONDS), "tshark finished");
        assertEquals(0, p.exitValue(), String.join(" ", cmd) + ":\n" + out);
        List<String> lines = new ArrayList<>();
        for (String l : out.split("\n")) {
            if (!l.isBlank()) {
                lines.add(l);
            }
        }
        return lines;
    }

    /**
     * The demo's capture: three connections negotiated (messages, RDMA Read transfer, RDMA Write
     * transfer), data messages, RDMA Read requests and RDMA Writes on the wire.
     */
    static void checkDemoCapture(Path capture) throws Exception {
        Path tshark = find();
        if (tshark == null) {
            System.out.println("tshark not installed: the capture was not decoded");
            return;
        }
        assertEquals(3, frames(tshark, capture, "smb_direct.negotiate_request").size(), "Negotiate Requests");
        assertEquals(3, frames(tshark, capture, "smb_direct.negotiate_response").size(), "Negotiate Responses");
        assertTrue(frames(tshark, capture, "smb_direct.data_message").size() > 10, "Data Transfer messages");
        assertTrue(frames(tshark, capture, "infiniband.bth.opcode == 12").size() > 0, "RDMA Read Requests");
        assertTrue(frames(tshark, capture, "infiniband.bth.opcode in {6,7,8,10}").size() > 0, "RDMA Writes");
    }
}
