package org.smbdirect.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Runs the interoperability suite ({@code src/test/vm/interop-suite.sh}: the JUnit classes of
 * package {@code org.smbdirect.interop.guest}) against the Linux kernel's own SMB Direct, ksmbd
 * and cifs, in a QEMU guest, for two generations of Linux: 6.1 (Debian stable's kernel, SMB Direct
 * inside ksmbd and cifs) and 7.x (Debian unstable's newest, ksmbd and cifs on the shared
 * {@code fs/smb/smbdirect} module); each once on Soft-RoCE ({@code rxe}) and once on soft-iWARP
 * ({@code siw}). The kernel modules with SMB Direct are built, without changes to what they do on
 * the wire, by {@code tools/rdma-vm/build-linux-peers.sh} (6.1) and
 * {@code tools/rdma-vm/build-linux7-peers.sh} (7.x, which also fetches that kernel), both cached.
 * Every test of the guest becomes a test here. Where QEMU or the kernel sources are missing the
 * suite says so loudly and is reported as skipped; with {@code CI} set it fails instead, so CI
 * never passes without it.
 *
 * <p>{@code -Dinterop.kernels=7} (or {@code 6.1}) runs one generation only;
 * {@code -Dinterop.transports=rxe} (or {@code siw}) runs one transport only;
 * {@code -Dinterop.select=--select-class=org.smbdirect.interop.guest.KsmbdServerTest} one class;
 * {@code -Dinterop.jvmOpts=-Dinterop.trace=true} passes JVM options to the guest's JVM;
 * {@code -Dinterop.benchTransports=rxe} (or {@code rxe,siw}) adds the SMB3 benchmark there (by
 * default it runs nowhere: it measures and checks nothing the other classes do not). Outputs in
 * {@code target/interop-vm/<generation>/<transport>}: {@code reports/}, {@code junit.log},
 * {@code console.log}, {@code negotiated.txt}, {@code dmesg.txt}.
 */
class LinuxPeersGuestIT {
    private static final long GUEST_TIMEOUT_MINUTES = 20;

    private final Path module = Paths.get(System.getProperty("module.dir", ".")).toAbsolutePath().normalize();
    private final Path root = module.resolve("../..").normalize();
    private final Path out = Paths.get(System.getProperty("interop.vm.dir", "target/interop-vm")).toAbsolutePath();
    private final Path nativeDir = Paths.get(System.getProperty("native.dir", "../../provider-verbs/target/native/linux-x86-64"))
            .toAbsolutePath().normalize();

    /** A generation of Linux's SMB Direct: its name in -Dinterop.kernels and the script that builds its peers. */
    private record Generation(String name, String buildScript) {
    }

    private static final List<Generation> GENERATIONS = List.of(new Generation("6.1", "build-linux-peers.sh"),
            new Generation("7", "build-linux7-peers.sh"));

    @TestFactory
    Stream<DynamicNode> linuxPeers() throws Exception {
        List<DynamicNode> nodes = new ArrayList<>();
        List<String> wanted = names(System.getProperty("interop.kernels", "6.1,7"));
        for (Generation g : GENERATIONS) {
            if (wanted.contains(g.name())) {
                nodes.add(generation(g));
            }
        }
        if (nodes.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("interop.kernels names a generation",
                    () -> fail("-Dinterop.kernels=" + wanted + " names none of 6.1, 7")));
        }
        return nodes.stream();
    }

    private DynamicNode generation(Generation g) throws Exception {
        Path runInVm = root.resolve("tools/rdma-vm/run-in-vm.sh");
        Path buildPeers = root.resolve("tools/rdma-vm/" + g.buildScript());
        String label = "Linux " + g.name() + (g.name().contains(".") ? "" : ".x");
        String missing = check(runInVm) + check(buildPeers);
        if (!missing.isEmpty()) {
            String why = "the " + label + " interop suite cannot run here: " + missing.trim();
            System.out.println("\n***** INTEROP TESTS NOT RUN *****\n" + why + "\n*********************************\n");
            if (System.getenv("CI") != null) {
                return DynamicContainer.dynamicContainer(label, Stream.of(
                        DynamicTest.dynamicTest("interop prerequisites present (CI)", () -> fail(why))));
            }
            return DynamicContainer.dynamicContainer(label, Stream.of(DynamicTest.dynamicTest("interop prerequisites present",
                    () -> Assumptions.abort("SKIPPED: " + why))));
        }
        Path dir = out.resolve(g.name());
        Files.createDirectories(dir);
        long buildStart = System.nanoTime();
        Path log = dir.resolve(g.buildScript().replace(".sh", ".log"));
        Process build = new ProcessBuilder("bash", buildPeers.toString()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        boolean built = build.waitFor(30, TimeUnit.MINUTES) && build.exitValue() == 0;
        List<String> buildLog = Files.readAllLines(log);
        if (!built) {
            String tail = String.join("\n", buildLog.subList(Math.max(0, buildLog.size() - 40), buildLog.size()));
            return DynamicContainer.dynamicContainer(label, Stream.of(DynamicTest.dynamicTest("Linux peers built",
                    () -> fail(g.buildScript() + " failed:\n" + tail))));
        }
        String peers = buildLog.get(buildLog.size() - 1).trim();
        String kernel = stamp(Paths.get(peers), "kernel");
        label = "Linux " + kernel;
        // one line that says which kernel ran, for a reader of the CI log
        System.out.println(label + ": peers (" + stamp(Paths.get(peers), "source") + ") in " + peers + ", "
                + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - buildStart) + " s");

        List<DynamicNode> nodes = new ArrayList<>();
        for (String transport : transports()) {
            nodes.add(runGuest(runInVm, dir, transport, peers));
        }
        return DynamicContainer.dynamicContainer(label, nodes);
    }

    /** A {@code key=value} line of the peers' stamp file, or "?" where there is none. */
    private static String stamp(Path peers, String key) throws IOException {
        Path stamp = peers.resolve("stamp");
        if (Files.isRegularFile(stamp)) {
            for (String line : Files.readAllLines(stamp)) {
                if (line.startsWith(key + "=")) {
                    return line.substring(key.length() + 1).trim();
                }
            }
        }
        return "?";
    }

    private static List<String> transports() {
        return names(System.getProperty("interop.transports", "rxe,siw"));
    }

    /** A comma-separated list of transport names, "rxe, siw" as well as "rxe,siw". */
    private static List<String> names(String list) {
        return Arrays.stream(list.split(",")).map(String::trim).filter(n -> !n.isEmpty()).toList();
    }

    private static String check(Path script) throws IOException, InterruptedException {
        if (!Files.isRegularFile(script)) {
            return script + " is missing; ";
        }
        Process p = new ProcessBuilder("bash", script.toString(), "--check").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        return p.waitFor() == 0 ? "" : text + "; ";
    }

    private DynamicContainer runGuest(Path runInVm, Path generationDir, String transport, String peers) throws Exception {
        String name = transport.equals("siw") ? "iWARP (siw)" : "RoCE (rxe)";
        Path dir = generationDir.resolve(transport);
        Files.createDirectories(dir);
        for (String stale : List.of("reports/TEST-junit-jupiter.xml", "junit.log", "negotiated.txt", "dmesg.txt")) {
            Files.deleteIfExists(dir.resolve(stale));
        }
        writeEnv(dir, transport);
        ProcessBuilder pb = new ProcessBuilder("bash", runInVm.toString(), "--", "bash",
                module.resolve("src/test/vm/interop-suite.sh").toString(), dir.toString())
                .directory(module.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("console.log").toFile());
        pb.environment().put("RDMA_VM_TRANSPORT", transport);
        pb.environment().put("RDMA_VM_PEERS", peers);
        pb.environment().put("RDMA_VM_RW", dir.toString());
        // The reactor's jars are on the guest's class path: a workspace under /tmp (a CI checkout)
        // is hidden by the guest's own tmpfs unless it is shared.
        pb.environment().put("RDMA_VM_RO", root.toString());
        pb.environment().put("RDMA_VM_TIMEOUT", Long.toString(TimeUnit.MINUTES.toSeconds(GUEST_TIMEOUT_MINUTES)));
        long start = System.nanoTime();
        Process run = pb.start();
        boolean finished = run.waitFor(GUEST_TIMEOUT_MINUTES + 1, TimeUnit.MINUTES);
        if (!finished) {
            run.destroyForcibly();
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        String timing = generationDir.getFileName() + " " + name + " interop suite: " + seconds + " s wall time, exit status "
                + (finished ? run.exitValue() : "none (killed)");
        System.out.println(timing);
        Path negotiated = dir.resolve("negotiated.txt");
        if (Files.exists(negotiated)) {
            System.out.println(Files.readString(negotiated));
        }
        List<DynamicNode> tests = new ArrayList<>();
        Path report = dir.resolve("reports/TEST-junit-jupiter.xml");
        if (!Files.exists(report)) {
            String console = tail(dir.resolve("console.log"), 60);
            tests.add(DynamicTest.dynamicTest("interop suite reports its results",
                    () -> fail("no JUnit report (" + timing + "); console:\n" + console)));
            return DynamicContainer.dynamicContainer(name, tests);
        }
        tests.addAll(junitResults(report));
        int exit = finished ? run.exitValue() : -1;
        tests.add(DynamicTest.dynamicTest("interop suite exits 0", () -> assertEquals(0, exit,
                () -> timing + "\n" + tail(dir.resolve("console.log"), 40))));
        return DynamicContainer.dynamicContainer(name, tests);
    }

    /** guest.env for interop-suite.sh. */
    private void writeEnv(Path dir, String transport) throws IOException {
        Path tests = module.resolve("target/test-classes");
        String classpath = tests + ":" + Files.readString(out.resolve("classpath.txt")).trim();
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JAVA", Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        env.put("TEST_CLASSPATH", classpath);
        env.put("NATIVE_DIR", nativeDir.toString());
        env.put("LAUNCHER", out.resolve("junit-platform-console-standalone.jar").toString());
        env.put("PEERS_SCRIPT", root.resolve("tools/rdma-vm/linux-peers.sh").toString());
        env.put("TRANSPORT", transport);
        env.put("JVM_EXTRA", System.getProperty("interop.jvmOpts", ""));
        env.put("SELECT", System.getProperty("interop.select", "")); // interop-suite.sh: the whole package
        // The SMB3 benchmark measures, it does not check more than the other classes do, and takes
        // three minutes of the emulated guest: only where -Dinterop.benchTransports names it.
        List<String> bench = names(System.getProperty("interop.benchTransports", ""));
        env.put("EXCLUDE", bench.contains(transport) ? "" : "--exclude-classname=.*SmbjBenchmarkTest");
        StringBuilder sb = new StringBuilder();
        env.forEach((k, v) -> sb.append(k).append("='").append(v.replace("'", "'\\''")).append("'\n"));
        Files.writeString(dir.resolve("guest.env"), sb.toString());
    }

    /** One test per test case the guest ran, with its outcome. */
    private static List<DynamicNode> junitResults(Path report) throws Exception {
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(report.toFile());
        NodeList cases = doc.getElementsByTagName("testcase");
        List<DynamicNode> tests = new ArrayList<>();
        for (int i = 0; i < cases.getLength(); i++) {
            Element tc = (Element) cases.item(i);
            String cls = tc.getAttribute("classname");
            String name = cls.substring(cls.lastIndexOf('.') + 1) + "." + tc.getAttribute("name");
            Element failure = first(tc, "failure");
            Element problem = failure != null ? failure : first(tc, "error");
            Element skipped = first(tc, "skipped");
            tests.add(DynamicTest.dynamicTest(name, () -> {
                if (problem != null) {
                    fail("in the guest: " + problem.getAttribute("message") + "\n" + problem.getTextContent());
                }
                if (skipped != null) {
                    Assumptions.abort("skipped in the guest: " + skipped.getAttribute("message") + skipped.getTextContent());
                }
            }));
        }
        return tests;
    }

    private static Element first(Element parent, String tag) {
        NodeList l = parent.getElementsByTagName(tag);
        return l.getLength() == 0 ? null : (Element) l.item(0);
    }

    private static String tail(Path file, int lines) {
        try {
            List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            return "(" + file + " unreadable: " + e.getMessage() + ")";
        }
    }
}
