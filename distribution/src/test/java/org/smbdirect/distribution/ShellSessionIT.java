package org.smbdirect.distribution;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A scripted Gogo session in the executable jar: {@code java -jar smbdirect.jar} reads the
 * commands from standard input, as at the terminal. Each section of the script starts with
 * {@code echo '=== NAME'}; the tests assert what each section printed.
 */
class ShellSessionIT {
    private static final Path DIR = Paths.get(System.getProperty("it.work", "target/it")).resolve("shell")
            .toAbsolutePath();
    private static final String SCRIPT = String.join("\n",
            "echo '=== providers'",
            "providers",
            "echo '=== listen'",
            "listen",
            "listen --bulk :5446",
            "echo '=== connect'",
            "connect :445",
            "send 3 hello from the initiator",
            "send 4 hello back",
            "send 3 --size 100k",
            "connections",
            "echo '=== transfer'",
            "connect --bulk :5446",
            "transfer --size 16M --chunk 4M 5",
            "connections",
            "echo '=== bench'",
            "bench --iterations 20 --size 4k,64k",
            "bench --op send --iterations 20 --size 1k",
            "bench --op read --iterations 20",
            "bench --op bulk --iterations 5 --size 1M",
            "echo '=== capture'",
            "capture on shell.pcap",
            "send 3 captured message",
            "capture",
            "capture off",
            "echo '=== provider choice'",
            "sim add first",
            "sim add second rdmaRead=false",
            "sim list",
            "providers",
            "provider second",
            "provider",
            "provider first",
            "provider --any",
            "echo '=== peer goes away'",
            "provider second",
            "listen --bulk :5447",
            "sim set second faults.disconnectAfterOperations=40",
            "transfer --size 64M --chunk 1M :5447",
            "echo '=== still usable'",
            "sim set second faults.disconnectAfterOperations=0",
            "transfer --size 1M :5447",
            "providers",
            "echo '=== bad arguments'",
            "listen --bogus",
            "send",
            "send 99 x",
            "transfer --size 1M",
            "transfer --file /no/such/file :5447",
            "transfer --size lots :5447",
            "bench --op jump",
            "capture sideways",
            "provider nosuch",
            "connect 300.1.1.1",
            "sim set",
            "demo --size",
            "echo '=== end'",
            "exit",
            "");

    private static JarRun run;
    private static Map<String, String> sections;

    @BeforeAll
    static void runTheSession() throws Exception {
        Files.createDirectories(DIR);
        Files.deleteIfExists(DIR.resolve("shell.pcap"));
        run = JarRun.run(JarRun.buildJdk(), DIR, SCRIPT, Duration.ofMinutes(5), "-jar", JarRun.jar().toString());
        System.out.println(run);
        sections = new LinkedHashMap<>();
        String[] parts = run.out.split("=== ");
        for (int i = 1; i < parts.length; i++) {
            int nl = parts[i].indexOf('\n');
            sections.put(parts[i].substring(0, nl).trim(), parts[i].substring(nl + 1));
        }
    }

    private static String section(String name) {
        String s = sections.get(name);
        assertTrue(s != null, "section " + name + " in\n" + run);
        return s;
    }

    private static void contains(String section, String... expected) {
        String s = section(section);
        for (String e : expected) {
            assertTrue(s.contains(e), "section '" + section + "' shows '" + e + "':\n" + s);
        }
    }

    private static void matches(String section, String regex) {
        String s = section(section);
        assertTrue(Pattern.compile(regex, Pattern.MULTILINE).matcher(s).find(),
                "section '" + section + "' matches " + regex + ":\n" + s);
    }

    @Test
    void session_endsWithExit_status0_noStackTraces() {
        assertEquals(0, run.exitStatus, run.toString());
        assertTrue(run.out.contains("gosh: stopping shell"), "exit left the console");
        assertFalse(run.out.contains("\tat ") || run.err.contains("\tat "), "no stack trace");
        assertFalse(run.out.contains("Exception") || run.err.contains("Exception"), "no exception names");
        assertFalse(run.out.contains("gogo: "), "no command failed in Gogo itself");
        assertFalse(run.err.contains("ERROR"), "no framework or SCR error: " + run.err);
    }

    @Test
    void providers_listsTheSimulatedProviderWithCapabilities() {
        contains("providers", "name", "type", "address", "read", "inval", "IRD/ORD",
                "provider.target (provider.type=*); new connections and listeners use sim/");
        matches("providers", "^[* ] \\S+ +sim +10\\.\\d+\\.\\d+\\.\\d+ +yes +yes +256 +4 +1\\.00 GiB +16/16 +0 +off$");
    }

    @Test
    void listen_connect_send_connections() {
        matches("listen", "listener 1 on /10[.\\d]+:445 \\(sim/\\S+, messages\\)");
        matches("listen", "listener 2 on /10[.\\d]+:5446 \\(sim/\\S+, bulk\\)");
        matches("connect", "connection 3: /10[.\\d]+:\\d+ -> /10[.\\d]+:445 \\(sim/\\S+, messages\\)");
        contains("connect", "negotiated: MaxSendSize 1364", "MaxFragmentedSendSize 1048576",
                "sent 24 bytes on connection 3", "sent 10 bytes on connection 4", "sent 102400 bytes on connection 3");
        assertTrue(run.out.contains("[4] received 24 bytes: \"hello from the initiator\""), run.out);
        assertTrue(run.out.contains("[3] received 10 bytes: \"hello back\""), run.out);
        contains("connect", "connection 3:", "initiator", "connection 4:", "listener", "messages, accepted",
                "negotiated: protocol 0x0100", "ReceiveCreditMax 255, SendCreditTarget 255",
                "statistics: messages", "credits granted", "RDMA Read 0 (0 B)", "transport sim/");
        // the 100 KiB message arrived whole: 2 messages, 24 + 102400 bytes
        contains("connect", "received: 2 messages, 102424 bytes");
    }

    @Test
    void transfer_generatedPayload_progressAndSummary_receiverChecksumMatches() {
        String s = section("transfer");
        matches("transfer", "connection 5: .* \\(sim/\\S+, bulk\\)");
        matches("transfer", "\\[#{30}\\] 100%  16\\.0 MiB / 16\\.0 MiB");
        Matcher m = Pattern.compile("transferred 16777216 bytes \\(16\\.0 MiB\\) in [\\d.]+ s: [\\d.]+ MiB/s; "
                + "path: RDMA Read by the peer \\(4 transfers\\); CRC-32C (\\p{XDigit}{8})").matcher(s);
        assertTrue(m.find(), s);
        // the receiving session (6) got all of it, with the same checksum
        assertTrue(s.contains("received: 4 sends, 16777216 bytes, CRC-32C " + m.group(1)), s);
        contains("transfer", "bulk: sends inline 0, by RDMA Read 4");
    }

    @Test
    void bench_printsPerftestTables() {
        String s = section("bench");
        String header = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
        int tables = s.split(Pattern.quote(header), -1).length - 1;
        assertEquals(4, tables, s);
        contains("bench", "RDMA_Write BW Test", "Send BW Test", "RDMA_Read BW Test", "Bulk transfer BW Test");
        for (String row : new String[] {"4096", "65536", "1024"}) {
            matches("bench", "^ " + row + " +20 +\\d+\\.\\d\\d +\\d+\\.\\d\\d +\\d+\\.\\d{6}$");
        }
        matches("bench", "^ 1048576 +5 +\\d+\\.\\d\\d +\\d+\\.\\d\\d +\\d+\\.\\d{6}$");
    }

    @Test
    void capture_onAndOff_writesAPcapThatTsharkDecodes() throws Exception {
        Path pcap = DIR.resolve("shell.pcap");
        contains("capture", "capture on: " + pcap, "tshark -r " + pcap + " -Y smb_direct -O smb_direct",
                "capture on for the default provider: " + pcap, "capture off; written: " + pcap);
        assertTrue(Files.size(pcap) > 24, "frames written");
        Path tshark = Tshark.find();
        if (tshark != null) {
            assertTrue(Tshark.frames(tshark, pcap, "smb_direct.data_message").size() >= 1, "the message was captured");
        }
    }

    @Test
    void providerChoice_throughProviderTarget() {
        contains("provider choice", "simulated provider first added; the unconfigured default provider gave way to it",
                "simulated provider second added with {rdmaRead=false}",
                "provider.target set to (provider.name=second); new connections and listeners use sim/second",
                "provider.target (provider.name=second); new connections and listeners use sim/second",
                "provider.target set to (provider.name=first); new connections and listeners use sim/first",
                "provider.target set to (provider.type=*)");
        matches("provider choice", "^[* ] first +sim +10[.\\d]+ +yes +yes ");
        matches("provider choice", "^[* ] second +sim +10[.\\d]+ +no +yes ");
    }

    @Test
    void transferToAPeerThatGoesAway_reportsTheLoss_andTheShellCarriesOn() {
        contains("peer goes away", "simulated provider second updated with {faults.disconnectAfterOperations=40}");
        matches("peer goes away", "transfer FAILED after [\\d.]+ (B|KiB|MiB) of 64\\.0 MiB: connection lost: ");
        contains("still usable", "transferred 1048576 bytes",
                "path: RDMA Write into the peer's memory", "new connections and listeners use sim/second");
    }

    @Test
    void badArguments_giveTheErrorAndTheUsage() {
        String s = section("bad arguments");
        String[] errors = {"error: unknown option --bogus", "error: send needs a connection ID",
            "error: no connection or listener 99", "error: an argument is missing",
            "error: file not found: /no/such/file", "error: --size: 'lots' is not a size",
            "error: --op must be write, read, send or bulk, was 'jump'",
            "error: unknown sub-command 'sideways' (on, off or status)", "error: no RDMA provider named nosuch",
            "error: '300.1.1.1' is not an IPv4 address", "error: sim set needs NAME and at least one KEY=VALUE",
            "error: option --size needs a value"};
        for (String e : errors) {
            assertTrue(s.contains(e), "'" + e + "' in:\n" + s);
        }
        int usages = s.split("usage: ", -1).length - 1;
        assertEquals(errors.length, usages, "each error comes with the command's usage:\n" + s);
    }
}
