package org.smbdirect.rdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.opentest4j.TestAbortedException;
import org.smbdirect.rdma.verbs.internal.NativeException;
import org.smbdirect.rdma.verbs.internal.VerbsNative;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * Runs the device suite ({@code src/test/vm/guest-suite.sh}: the JUnit classes selected in
 * {@code src/test/vm/guest-tests.txt}, then perftest and {@code VerbsBenchmark} side by side) on
 * an RDMA device: the host's own when it has one, else a Soft-RoCE device in a QEMU guest
 * ({@code tools/rdma-vm/run-in-vm.sh}). Every test of the guest becomes a test here, so the
 * build's test counts and failures include them; where neither a device nor the guest's
 * prerequisites exist, the suite is reported as skipped with what is missing.
 *
 * <p>Outputs in {@code target/rdma-vm}: {@code reports/} (JUnit XML), {@code junit.log},
 * {@code console.log} (the guest's), {@code perftest.txt}, {@code benchmark.txt} and
 * {@code benchmarks.md} (the comparison table), {@code wall-time.txt}.
 */
class SoftRoceGuestIT {
    private static final long GUEST_TIMEOUT_MINUTES = 15;
    private static final String GUEST_DEVICE = "rxe0";
    private static final String GUEST_IP = "10.99.0.1";
    /** {@code -Drdma.vm.benchmarks=false} leaves out perftest and the provider benchmark. */
    private static final boolean BENCHMARKS = Boolean.parseBoolean(System.getProperty("rdma.vm.benchmarks", "true"));

    private final Path module = Paths.get(System.getProperty("module.dir", "."));
    private final Path out = Paths.get(System.getProperty("rdma.vm.dir", "target/rdma-vm"));
    private final Path nativeDir = Paths.get(System.getProperty("native.dir", "target/native/linux-x86-64"));
    private final Path bundle = Paths.get(System.getProperty("verbs.bundle", "target/provider-verbs.jar"));

    @TestFactory
    Stream<DynamicNode> deviceSuite() throws Exception {
        if (!Files.isRegularFile(nativeDir.resolve("libdisni.so"))) {
            // the build skipped it (no gcc or rdma-core headers) and said so; CI fails the build instead.
            // One skipped test carries the reason into the report and the summary line.
            return Stream.of(DynamicTest.dynamicTest("device suite", () -> Assumptions.abort("SKIPPED: libdisni.so was"
                    + " not built on this machine (no gcc or rdma-core headers), so the verbs provider cannot run on a"
                    + " device")));
        }
        String[] hostDevice = hostDevice();
        List<String> command = new ArrayList<>();
        String device;
        String ip;
        if (hostDevice != null) {
            device = hostDevice[0];
            ip = hostDevice[1];
            command.add("bash");
        } else {
            Path script = module.resolve("../tools/rdma-vm/run-in-vm.sh").normalize();
            Process check = new ProcessBuilder(script.toString(), "--check").redirectErrorStream(true).start();
            String why = new String(check.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (check.waitFor() != 0) {
                throw new TestAbortedException("SKIPPED: no RDMA device on this host and the Soft-RoCE guest cannot "
                        + "run here: " + why);
            }
            device = GUEST_DEVICE;
            ip = GUEST_IP;
            command.add(script.toString());
            command.add("--");
            command.add("bash");
        }
        command.add(module.resolve("src/test/vm/guest-suite.sh").toString());
        command.add(out.toAbsolutePath().toString());
        prepare(device, ip);

        ProcessBuilder pb = new ProcessBuilder(command).directory(module.toFile()).redirectErrorStream(true)
                .redirectOutput(out.resolve("console.log").toFile());
        pb.environment().put("RDMA_VM_RW", out.toAbsolutePath().toString());
        // The reactor's jars are on the guest's class path: a workspace under /tmp (a CI checkout)
        // is hidden by the guest's own tmpfs unless it is shared.
        pb.environment().put("RDMA_VM_RO", module.toAbsolutePath().normalize().getParent().toString());
        pb.environment().put("RDMA_VM_DEVICE", device);
        pb.environment().put("RDMA_VM_IP", ip);
        long start = System.nanoTime();
        Process run = pb.start();
        boolean finished = run.waitFor(GUEST_TIMEOUT_MINUTES, TimeUnit.MINUTES);
        if (!finished) {
            run.destroyForcibly();
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        String where = hostDevice != null ? "host device " + device : "Soft-RoCE guest (QEMU/TCG)";
        String timing = "device suite on " + where + ": " + seconds + " s wall time, exit status "
                + (finished ? run.exitValue() : "none (killed after " + GUEST_TIMEOUT_MINUTES + " min)");
        Files.writeString(out.resolve("wall-time.txt"), timing + "\n");
        System.out.println(timing);

        List<DynamicNode> nodes = new ArrayList<>();
        Path report = out.resolve("reports/TEST-junit-jupiter.xml");
        if (!Files.exists(report)) {
            String console = tail(out.resolve("console.log"), 60);
            nodes.add(DynamicTest.dynamicTest("device suite reports its results", () -> fail(
                    "the device suite left no JUnit report (" + timing + "); console:\n" + console)));
            return nodes.stream();
        }
        nodes.add(junitResults(report));
        if (BENCHMARKS) {
            nodes.add(benchmarks(where, seconds));
        }
        int exit = finished ? run.exitValue() : -1;
        nodes.add(DynamicTest.dynamicTest("device suite exits 0", () -> assertEquals(0, exit,
                () -> timing + "\n" + tail(out.resolve("console.log"), 40))));
        return nodes.stream();
    }

    /** The host's first RDMA device and its address, or {@code null}. */
    private static String[] hostDevice() {
        try {
            System.loadLibrary("disni");
            String[] names = VerbsNative.deviceNames();
            String[] pairs = names.length == 0 ? new String[0] : VerbsNative.addressDevices();
            return pairs.length >= 2 ? new String[] {pairs[1], pairs[0]} : null;
        } catch (NativeException | UnsatisfiedLinkError e) {
            return null;
        }
    }

    /** Writes guest.env for guest-suite.sh. */
    private void prepare(String device, String ip) throws IOException {
        Files.createDirectories(out);
        for (String stale : List.of("reports/TEST-junit-jupiter.xml", "perftest.txt", "benchmark.txt", "junit.log")) {
            Files.deleteIfExists(out.resolve(stale));
        }
        String classpath = String.join(":", bundle.toAbsolutePath().toString(),
                module.resolve("target/test-classes").toAbsolutePath().toString(),
                Files.readString(out.resolve("classpath.txt")).trim());
        Map<String, String> env = new LinkedHashMap<>();
        env.put("JAVA", Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        env.put("TEST_CLASSPATH", classpath);
        env.put("NATIVE_DIR", nativeDir.toAbsolutePath().toString());
        // -Drdma.vm.tests=<selector>[,<selector>...] runs only those (for example
        // --select-class=org.smbdirect.rdma.verbs.device.SmbDirectOverVerbsTest) instead of guest-tests.txt.
        Path selectors = module.resolve("src/test/vm/guest-tests.txt").toAbsolutePath();
        String only = System.getProperty("rdma.vm.tests", "");
        if (!only.isBlank()) {
            selectors = out.resolve("selectors.txt").toAbsolutePath();
            Files.writeString(selectors, only.replace(',', '\n') + "\n");
        }
        env.put("SELECTORS_FILE", selectors.toString());
        env.put("DEVICE", device);
        env.put("IP", ip);
        env.put("BENCHMARKS", String.valueOf(BENCHMARKS));
        StringBuilder sb = new StringBuilder();
        env.forEach((k, v) -> sb.append(k).append("='").append(v.replace("'", "'\\''")).append("'\n"));
        Files.writeString(out.resolve("guest.env"), sb.toString());
    }

    /** One test per test case the device suite ran, with its outcome. */
    private static DynamicContainer junitResults(Path report) throws Exception {
        Document doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(report.toFile());
        NodeList cases = doc.getElementsByTagName("testcase");
        List<DynamicNode> tests = new ArrayList<>();
        for (int i = 0; i < cases.getLength(); i++) {
            Element tc = (Element) cases.item(i);
            String cls = tc.getAttribute("classname");
            String name = cls.substring(cls.lastIndexOf('.') + 1) + "." + tc.getAttribute("name");
            Element failure = first(tc, "failure");
            if (failure == null) {
                failure = first(tc, "error");
            }
            Element skipped = first(tc, "skipped");
            Element problem = failure;
            tests.add(DynamicTest.dynamicTest(name, () -> {
                if (problem != null) {
                    fail("in the device suite: " + problem.getAttribute("message") + "\n" + problem.getTextContent());
                }
                if (skipped != null) {
                    Assumptions.abort("skipped in the device suite: " + skipped.getAttribute("message")
                            + skipped.getTextContent());
                }
            }));
        }
        return DynamicContainer.dynamicContainer("device tests", tests);
    }

    private static Element first(Element parent, String tag) {
        NodeList l = parent.getElementsByTagName(tag);
        return l.getLength() == 0 ? null : (Element) l.item(0);
    }

    private static final Pattern BW = Pattern.compile("^\\s*(\\d+)\\s+(\\d+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s*$");
    private static final Pattern LAT = Pattern.compile(
            "^\\s*(\\d+)\\s+(\\d+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+)\\s+([\\d.]+).*$");
    private static final Pattern RESULT = Pattern.compile("^RESULT (\\S+) (\\d+) ([\\d.]+) (\\S+)$");

    /** perftest and the provider, side by side: one test per measurement, and benchmarks.md. */
    private DynamicContainer benchmarks(String where, long seconds) throws IOException {
        Perftest perftestRuns = parsePerftest(out.resolve("perftest.txt"));
        Map<String, List<Double>> ourRuns = new LinkedHashMap<>();
        Path bench = out.resolve("benchmark.txt");
        if (Files.exists(bench)) {
            for (String line : Files.readAllLines(bench)) {
                Matcher m = RESULT.matcher(line.trim());
                if (m.matches()) {
                    ourRuns.computeIfAbsent(m.group(1) + " " + m.group(2), k -> new ArrayList<>())
                            .add(Double.parseDouble(m.group(3)));
                }
            }
        }
        Map<String, Double> perftest = medians(perftestRuns.values());
        Map<String, Double> ours = medians(ourRuns);
        int rounds = ourRuns.values().stream().mapToInt(List::size).max().orElse(0);
        String[][] runs = {{"write_bw", "4096"}, {"write_bw", "65536"}, {"write_bw", "1048576"},
            {"read_bw", "4096"}, {"read_bw", "65536"}, {"read_bw", "1048576"},
            {"send_bw", "4096"}, {"send_bw", "65536"}, {"send_bw", "1048576"}, {"send_lat", "64"}};
        StringBuilder md = new StringBuilder();
        md.append("## Verbs provider vs perftest (Soft-RoCE in QEMU/TCG)\n\n");
        md.append("Run ").append(LocalDate.now()).append(" on ").append(where).append(": ").append(machine(where))
                .append("; device suite wall time ").append(seconds).append(" s.\n\n");
        md.append("| operation | size (bytes) | perftest | verbs provider | ours / perftest |\n");
        md.append("|---|---:|---:|---:|---:|\n");
        List<DynamicNode> tests = new ArrayList<>();
        for (String[] r : runs) {
            String key = r[0] + " " + r[1];
            Double p = perftest.get(key);
            Double o = ours.get(key);
            String unit = r[0].endsWith("lat") ? "usec" : "MiB/s";
            md.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s |%n", tool(r[0]), r[1],
                    p == null ? "n/a" : String.format(Locale.ROOT, "%.2f %s", p, unit),
                    o == null ? "n/a" : String.format(Locale.ROOT, "%.2f %s", o, unit),
                    p == null || o == null ? "n/a" : String.format(Locale.ROOT, "%.2f", o / p)));
            tests.add(DynamicTest.dynamicTest("perftest " + key + " measured", () -> {
                if (p == null) {
                    fail("no perftest result for " + key + " in perftest.txt:\n" + tail(out.resolve("perftest.txt"), 30));
                }
            }));
            tests.add(DynamicTest.dynamicTest("provider " + key + " measured", () -> {
                if (o == null) {
                    fail("no provider result for " + key + " in benchmark.txt:\n" + tail(bench, 30));
                }
            }));
        }
        md.append("\nMedians of " + rounds + " rounds, perftest and the provider taking turns. Bandwidth in MiB/s "
                + "(perftest's MB/sec are 2^20 bytes), latency is half the median round trip (perftest's "
                + "t_typical). For bandwidth a ratio above 1 means the provider is faster, for latency a ratio "
                + "above 1 means it is slower. Same device, same sizes and iterations, 128 requests in flight, one "
                + "completion asked for in 100 requests (perftest's --cq-mod), one buffer reused, busy polling, "
                + "64-byte sends inline, the latency test's two sides polling on two threads (perftest: two "
                + "processes); the provider's JVM runs each operation once unreported before it measures."
                + (perftestRuns.discarded() == 0 ? "" : " Left out: " + perftestRuns.discarded() + " perftest run(s) "
                        + "that could not calibrate their clock (r^2 < 0.9; they report zero).")
                + "\n");
        Files.writeString(out.resolve("benchmarks.md"), md.toString());
        System.out.println(md);
        return DynamicContainer.dynamicContainer("benchmarks", tests);
    }

    private static String tool(String op) {
        return op.equals("send_lat") ? "ib_send_lat / send latency" : "ib_" + op + " / " + op.replace('_', ' ');
    }

    private static Map<String, Double> medians(Map<String, List<Double>> runs) {
        Map<String, Double> m = new LinkedHashMap<>();
        runs.forEach((k, v) -> {
            List<Double> sorted = new ArrayList<>(v);
            sorted.sort(null);
            m.put(k, sorted.get(sorted.size() / 2));
        });
        return m;
    }

    /**
     * perftest.txt: blocks "=== tool size iterations", the tool's output, "=== exit N". A run whose
     * clock calibration failed is left out: perftest then warns "Correlation coefficient r^2 ... &lt;
     * 0.9" and, even with {@code -F}, reports zero bandwidth (seen on the TCG guest), which would
     * pull perftest's median down.
     */
    static Perftest parsePerftest(Path file) throws IOException {
        Map<String, List<Double>> values = new LinkedHashMap<>();
        int discarded = 0;
        if (!Files.exists(file)) {
            return new Perftest(values, discarded);
        }
        String op = null;
        String size = null;
        boolean uncalibrated = false;
        for (String line : Files.readAllLines(file)) {
            if (line.startsWith("=== ib_")) {
                String[] f = line.substring(4).split(" ");
                op = f[0].substring(3);
                size = f[1];
                uncalibrated = false;
                continue;
            }
            if (op == null || line.startsWith("===")) {
                continue;
            }
            if (line.startsWith("Correlation coefficient")) {
                uncalibrated = true;
                continue;
            }
            Matcher m = (op.endsWith("lat") ? LAT : BW).matcher(line);
            if (m.matches() && m.group(1).equals(size)) {
                // bandwidth: BW average[MB/sec]; latency: t_typical[usec]
                double v = Double.parseDouble(m.group(op.endsWith("lat") ? 5 : 4));
                if (uncalibrated || v <= 0) {
                    discarded++;
                } else {
                    values.computeIfAbsent(op + " " + size, k -> new ArrayList<>()).add(v);
                }
            }
        }
        return new Perftest(values, discarded);
    }

    /**
     * perftest's results.
     *
     * @param values the results by "operation size", in the order of the rounds
     * @param discarded how many runs were left out because perftest could not calibrate its clock
     */
    record Perftest(Map<String, List<Double>> values, int discarded) {
    }

    private static String machine(String where) {
        String cpu = "unknown CPU";
        try {
            for (String l : Files.readAllLines(Paths.get("/proc/cpuinfo"))) {
                if (l.startsWith("model name")) {
                    cpu = l.substring(l.indexOf(':') + 1).trim();
                    break;
                }
            }
        } catch (IOException e) {
            // keep "unknown CPU"
        }
        String guest = "";
        if (where.contains("guest")) {
            guest = ", guest with 2 vCPUs and rdma_rxe under " + firstLine("qemu-system-x86_64", "--version")
                    + " TCG";
        }
        return "host " + cpu + " x" + Runtime.getRuntime().availableProcessors() + ", Linux "
                + System.getProperty("os.version") + guest + ", Java " + System.getProperty("java.version")
                + " (C1 only)";
    }

    private static String firstLine(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String first = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().findFirst()
                    .orElse("?");
            p.waitFor();
            return first.trim();
        } catch (IOException | InterruptedException e) {
            return command[0];
        }
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
