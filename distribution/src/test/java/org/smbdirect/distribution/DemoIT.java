package org.smbdirect.distribution;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

/**
 * {@code java -jar smbdirect.jar demo}, as the README's first command runs it, on the JDK of the
 * build and on Temurin 25 when installed: it must exit 0, show both transfer paths with matching
 * checksums, and leave a capture that tshark decodes as SMB Direct.
 */
class DemoIT {
    private static final Duration LIMIT = Duration.ofMinutes(10);
    private static final Path WORK = Paths.get(System.getProperty("it.work", "target/it"));

    @Test
    void demo_onTheBuildJdk_passes() throws Exception {
        demo(JarRun.buildJdk(), "build-jdk");
    }

    @Test
    void demo_onTemurin25_passes() throws Exception {
        Path jdk = JarRun.jdk25();
        assumeTrue(JarRun.installed(jdk), "Temurin 25 is not installed at " + jdk + " (set -Dit.jdk25=...)");
        demo(jdk, "temurin-25");
    }

    private void demo(Path jdk, String name) throws Exception {
        Path dir = WORK.resolve("demo-" + name).toAbsolutePath();
        Path capture = dir.resolve("smbdirect-demo.pcap");
        Files.deleteIfExists(capture);
        JarRun r = JarRun.run(jdk, dir, null, LIMIT, "-jar", JarRun.jar().toString(), "demo");
        System.out.println("demo on " + JarRun.version(jdk) + ":\n" + r);
        assertEquals(0, r.exitStatus, r.toString());
        String out = r.out;
        assertTrue(out.contains("demo PASSED"), out);
        assertFalse(out.contains("FAILED"), out);
        // negotiated parameters of both sides, MS-SMBD 3.1.4.7
        for (String p : new String[] {"MaxSendSize", "MaxReceiveSize", "MaxFragmentedSendSize", "MaxReadWriteSize",
            "ReceiveCreditMax", "SendCreditTarget", "IRD / ORD"}) {
            assertTrue(out.contains(p), p + " printed");
        }
        // both paths ran, each with a matching checksum
        assertTrue(out.contains("=> the payload moved by RDMA Read"), out);
        assertTrue(out.contains("=> the payload moved by RDMA Write"), out);
        Matcher crc = Pattern.compile("CRC-32C sent (\\p{XDigit}{8}), received (\\p{XDigit}{8}): match").matcher(out);
        int matches = 0;
        while (crc.find()) {
            assertEquals(crc.group(1), crc.group(2));
            matches++;
        }
        assertEquals(2, matches, "two transfers with matching checksums");
        assertTrue(out.contains("sent 67108864 bytes in"), "64 MiB each way");
        assertTrue(out.contains("statistics per connection"), out);
        // the capture, and how to read it
        assertTrue(out.contains("capture: " + capture), out);
        assertTrue(out.contains("tshark -r " + capture + " -Y smb_direct -O smb_direct"), out);
        assertTrue(Files.size(capture) > 24, "frames were captured");
        // no stack traces, and no JVM warnings on stderr but Felix's: on Java 24+ the JVM warns once that
        // Felix 7.0.5 (its SecureAction's static initialiser) calls sun.misc.Unsafe::staticFieldOffset;
        // only --sun-misc-unsafe-memory-access=allow (a flag Java 17 does not know) silences it
        for (String line : r.err.split("\n")) {
            if (line.startsWith("WARNING")) {
                assertTrue(line.contains("sun.misc.Unsafe") || line.contains("org.apache.felix.framework.util.SecureAction"),
                        "unexpected JVM warning: " + line);
            }
        }
        assertFalse(r.err.contains("native access") || r.err.contains("restricted method"), r.err);
        assertFalse((out + r.err).contains("\tat "), "no stack trace");
        Tshark.checkDemoCapture(capture);
    }
}
