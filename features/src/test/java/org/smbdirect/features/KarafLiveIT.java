package org.smbdirect.features;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The features in a real Karaf 4.4 (the distribution karaf:verify uses), driven as a user drives it:
 * the Karaf commands of {@code docs/embedding.md}, one at a time through {@code bin/client} (SSH on
 * a free port of 127.0.0.1). Karaf runs from {@code target/karaf/} and is always shut down at the end.
 *
 * <p>Karaf's Maven resolver is pointed at {@code target/karaf-repo} (this build's bundles and
 * features, copied there by Maven, since {@code mvn verify} installs nothing) and at the build's local
 * repository (where karaf:verify left Karaf's own {@code scr} bundles); the commands are those of
 * {@code docs/embedding.md}, which {@link #readmeShowsExactlyTheseCommands} keeps equal to these.
 */
class KarafLiveIT {
    private static final Path HOME = Paths.get(System.getProperty("karaf.work", "target/karaf"));
    private static final String VERSION = System.getProperty("project.version", "1.0.0-SNAPSHOT");
    private static final Pattern ANSI = Pattern.compile("\u001B\\[[;\\d]*[A-Za-z]");
    private static final String[] BUNDLES = {"org.smbdirect.rdma.api", "org.smbdirect.rdma.sim",
        "org.smbdirect.protocol", "org.smbdirect.bulk", "org.smbdirect.shell", "org.smbdirect.smbj"};

    /** The Karaf session of docs/embedding.md, in order; {@link #readmeShowsExactlyTheseCommands} keeps them equal. */
    static final String REPO_ADD = "feature:repo-add mvn:org.smbdirect/features/" + VERSION + "/xml/features";
    static final String INSTALL = "feature:install smbdirect";
    static final String BUNDLE_LIST = "bundle:list -s";
    static final String DEMO = "smbdirect:demo --size 16M";
    static final String CONFIG_SET = "config:property-set -p org.smbdirect.protocol maxReadWriteSize 4194304";
    static final String UNINSTALL = "feature:uninstall smbdirect";
    static final String CONFIG_DELETE = "config:delete org.smbdirect.protocol";
    static final String SERVICE_LIST = "service:list";
    static final String THREADS = "shell:threads";
    static final List<String> SESSION = List.of(REPO_ADD, INSTALL, BUNDLE_LIST, DEMO, CONFIG_SET, DEMO, UNINSTALL,
            CONFIG_DELETE, BUNDLE_LIST, SERVICE_LIST, THREADS);

    private static Process server;
    private static int sshPort;
    private static String password;

    @BeforeAll
    static void startKaraf() throws Exception {
        Path zip = Paths.get(System.getProperty("karaf.zip", "karaf.zip must be set by the build"));
        assertTrue(Files.isRegularFile(zip), "the Karaf distribution is missing: " + zip);
        deleteTree(HOME);
        Path karaf = unzip(zip, HOME);
        configure(karaf);
        ProcessBuilder pb = new ProcessBuilder(karaf.resolve("bin/karaf").toString(), "server")
                .directory(karaf.toFile()).redirectErrorStream(true)
                .redirectOutput(HOME.resolve("server.log").toFile());
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().remove("KARAF_DEBUG");
        server = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        String last = "";
        while (System.nanoTime() < deadline) {
            if (!server.isAlive()) {
                fail("Karaf stopped while starting (status " + server.exitValue() + "); see " + HOME.resolve("server.log"));
            }
            Result r = client("echo karaf-ready");
            if (r.status == 0 && r.out.contains("karaf-ready")) {
                return;
            }
            last = r.out;
            TimeUnit.MILLISECONDS.sleep(500); // polling for the SSH server, not waiting out a timeout
        }
        fail("Karaf's SSH server did not answer within 120 s: " + last);
    }

    @AfterAll
    static void stopKaraf() throws Exception {
        if (server == null) {
            return;
        }
        try {
            if (server.isAlive()) {
                client("system:shutdown -f");
                server.waitFor(60, TimeUnit.SECONDS);
            }
        } finally {
            // whatever is left of the script and its JVM
            server.descendants().forEach(ProcessHandle::destroyForcibly);
            server.destroyForcibly();
            server.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * The {@code karaf@root()> } lines of the document the build names in system property
     * {@code readme} ({@code docs/embedding.md}, section "Karaf") are the commands this class runs.
     */
    @Test
    void readmeShowsExactlyTheseCommands() throws IOException {
        Path readme = Paths.get(System.getProperty("readme", "../docs/embedding.md"));
        List<String> shown = Files.readAllLines(readme).stream().filter(l -> l.startsWith("karaf@root()> "))
                .map(l -> l.substring("karaf@root()> ".length()).replaceAll("\\s+#.*$", "").trim()
                        .replace("1.0.0-SNAPSHOT", VERSION))
                .collect(Collectors.toList());
        assertEquals(SESSION, shown, "the Karaf session of " + readme + " must be the commands this test runs, in order");
    }

    @Test
    void installDemoReconfigureUninstall() throws Exception {
        run(REPO_ADD);
        run(INSTALL);

        // every bundle Active: none Waiting for a component's reference (the shell's main thread)
        String bundles = run(BUNDLE_LIST);
        for (String b : BUNDLES) {
            Matcher m = Pattern.compile("(?m)^\\s*\\d+\\s*\\|\\s*(\\w+)\\s*\\|.*\\|\\s*" + Pattern.quote(b) + "\\s*$").matcher(bundles);
            assertTrue(m.find(), b + " is not installed:\n" + bundles);
            assertEquals("Active", m.group(1), b + " is not Active:\n" + bundles);
        }

        String first = run(DEMO);
        assertTrue(first.contains("demo PASSED"), first);
        assertEquals(8388608, negotiatedMaxReadWriteSize(first), "the default, MS-SMBD section 7");
        assertEquals(2, rdmaReads(first), "16 MiB in 8 MiB RDMA Reads");
        int established = established(first);

        // the running transport takes the new value for the connections made afterwards
        run(CONFIG_SET);
        String second = run(DEMO);
        assertTrue(second.contains("demo PASSED"), second);
        assertEquals(4194304, negotiatedMaxReadWriteSize(second), second);
        assertEquals(4, rdmaReads(second), "16 MiB in 4 MiB RDMA Reads");
        assertTrue(established(second) > established, "the same transport service (its totals go on counting)");

        assertTrue(run(THREADS).contains("smbdirect-"), "the transport's threads run while installed");
        assertTrue(run(SERVICE_LIST).contains("org.smbdirect.transport.SmbDirect"), "the transport is a service");

        run(UNINSTALL);
        run(CONFIG_DELETE);
        assertFalse(run(BUNDLE_LIST).contains("org.smbdirect"), "an org.smbdirect bundle is left");
        assertFalse(run(SERVICE_LIST).contains("org.smbdirect"), "an org.smbdirect service is left");
        // stopped bundles end their threads as they stop; allow the scheduler a moment to be reaped
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        List<String> left;
        do {
            left = run(THREADS).lines().filter(l -> l.contains("smbdirect")).collect(Collectors.toList());
        } while (!left.isEmpty() && System.nanoTime() < deadline);
        assertEquals(List.of(), left, "threads of org.smbdirect are left after feature:uninstall");
    }

    private static int negotiatedMaxReadWriteSize(String demo) {
        Matcher m = Pattern.compile("MaxReadWriteSize\\s+(\\d+)\\s+(\\d+)").matcher(demo);
        assertTrue(m.find(), demo);
        assertEquals(m.group(1), m.group(2), "both sides negotiated the same value");
        return Integer.parseInt(m.group(1));
    }

    private static int rdmaReads(String demo) {
        Matcher m = Pattern.compile("receiver's RDMA Reads (\\d+) \\(16\\.0 MiB\\)").matcher(demo);
        assertTrue(m.find(), demo);
        return Integer.parseInt(m.group(1));
    }

    private static int established(String demo) {
        Matcher m = Pattern.compile("transport: (\\d+) connections established").matcher(demo);
        assertTrue(m.find(), demo);
        return Integer.parseInt(m.group(1));
    }

    /** Runs one command line; fails unless it succeeded. */
    private static String run(String command) throws Exception {
        Result r = client(command);
        System.out.println("karaf@root()> " + command + "\n" + r.out);
        if (r.status != 0 || r.out.contains("Error executing command")) {
            fail("'" + command + "' failed (status " + r.status + "):\n" + r.out);
        }
        return r.out;
    }

    private static Result client(String command) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(HOME.resolve("apache-karaf/bin/client").toString(), "-a",
                String.valueOf(sshPort), "-h", "127.0.0.1", "-u", "karaf", "-p", password, "-b")
                .redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write((command + "\n").getBytes(StandardCharsets.UTF_8));
        }
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("'" + command + "' did not finish within 120 s");
        }
        return new Result(p.exitValue(), ANSI.matcher(new String(out, StandardCharsets.UTF_8)).replaceAll(""));
    }

    private static final class Result {
        final int status;
        final String out;

        Result(int status, String out) {
            this.status = status;
            this.out = out;
        }
    }

    /** Binds everything to 127.0.0.1 on free ports, adds a user, and points the Maven resolver at this build. */
    private static void configure(Path karaf) throws IOException {
        sshPort = freePort();
        byte[] secret = new byte[12];
        new SecureRandom().nextBytes(secret);
        password = HexFormat.of().formatHex(secret);
        Path etc = karaf.resolve("etc");
        edit(etc.resolve("org.apache.karaf.shell.cfg"), "sshPort", String.valueOf(sshPort));
        edit(etc.resolve("org.apache.karaf.shell.cfg"), "sshHost", "127.0.0.1");
        edit(etc.resolve("org.apache.karaf.management.cfg"), "rmiRegistryPort", String.valueOf(freePort()));
        edit(etc.resolve("org.apache.karaf.management.cfg"), "rmiServerPort", String.valueOf(freePort()));
        Files.writeString(etc.resolve("users.properties"), "karaf = " + password + ",_g_:admingroup\n"
                + "_g_\\:admingroup = group,admin,manager,viewer,systembundles,ssh\n");
        Path repo = Paths.get(System.getProperty("karaf.repo", "target/karaf-repo")).toAbsolutePath();
        Path features = repo.resolve("org/smbdirect/features/" + VERSION);
        Files.createDirectories(features);
        Files.copy(Paths.get(System.getProperty("features.xml", "target/feature/feature.xml")),
                features.resolve("features-" + VERSION + "-features.xml"), StandardCopyOption.REPLACE_EXISTING);
        String local = System.getProperty("local.repository", System.getProperty("user.home") + "/.m2/repository");
        Files.writeString(etc.resolve("org.ops4j.pax.url.mvn.cfg"), String.join("\n",
                "org.ops4j.pax.url.mvn.useFallbackRepositories=false",
                "org.ops4j.pax.url.mvn.localRepository=" + local,
                "org.ops4j.pax.url.mvn.defaultRepositories=${karaf.home.uri}${karaf.default.repository}@id=system.repository@snapshots,"
                        + " " + repo.toUri() + "@id=smbdirect.build@snapshots",
                "org.ops4j.pax.url.mvn.repositories=https://repo.maven.apache.org/maven2@id=central",
                "org.ops4j.pax.url.mvn.settings=" + etc.resolve("no-settings.xml"), ""));
        Files.writeString(etc.resolve("no-settings.xml"), "<settings/>\n");
    }

    private static void edit(Path cfg, String key, String value) throws IOException {
        List<String> lines = Files.readAllLines(cfg);
        List<String> out = new ArrayList<>();
        boolean found = false;
        for (String l : lines) {
            if (l.matches("\\s*" + Pattern.quote(key) + "\\s*=.*")) {
                out.add(key + " = " + value);
                found = true;
            } else {
                out.add(l);
            }
        }
        if (!found) {
            out.add(key + " = " + value);
        }
        Files.write(cfg, out);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** Unzips the distribution into {@code dir/apache-karaf}; the scripts get their execute bit back. */
    private static Path unzip(Path zip, Path dir) throws IOException {
        Path karaf = dir.resolve("apache-karaf");
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(zip))) {
            for (ZipEntry e; (e = in.getNextEntry()) != null;) {
                String name = e.getName();
                int slash = name.indexOf('/');
                Path target = karaf.resolve(name.substring(slash + 1)).normalize();
                if (!target.startsWith(karaf)) {
                    throw new IOException("entry outside the distribution: " + name);
                }
                if (e.isDirectory()) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        try (Stream<Path> bin = Files.list(karaf.resolve("bin"))) {
            for (Path p : (Iterable<Path>) bin::iterator) {
                if (Files.isRegularFile(p) && !p.toString().endsWith(".bat")) {
                    Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwxr-xr-x"));
                }
            }
        }
        return karaf;
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            all.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
