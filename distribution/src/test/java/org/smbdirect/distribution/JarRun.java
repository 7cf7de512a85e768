package org.smbdirect.distribution;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a program in a separate JVM and collects what it printed. */
final class JarRun {
    final int exitStatus;
    final String out;
    final String err;

    private JarRun(int exitStatus, String out, String err) {
        this.exitStatus = exitStatus;
        this.out = out;
        this.err = err;
    }

    /** The executable jar under test. */
    static Path jar() {
        String p = System.getProperty("it.jar");
        assertNotNull(p, "system property it.jar");
        Path jar = Paths.get(p);
        assertTrue(Files.isRegularFile(jar), jar + " was built");
        return jar;
    }

    /** The JDK running the build (the tests' own). */
    static Path buildJdk() {
        return Paths.get(System.getProperty("java.home"));
    }

    /** The second JDK, when installed. */
    static Path jdk25() {
        String p = System.getProperty("it.jdk25", "/usr/lib/jvm/temurin-25-jdk-amd64");
        return Paths.get(p);
    }

    static boolean installed(Path jdk) {
        return Files.isExecutable(jdk.resolve("bin").resolve("java"));
    }

    /** Version line of a JDK ({@code java -version}'s first line). */
    static String version(Path jdk) throws Exception {
        JarRun r = run(jdk, Paths.get("."), null, Duration.ofSeconds(60), "-version");
        return r.err.lines().findFirst().orElse("?");
    }

    /**
     * Runs {@code JDK/bin/java ARGS} in a directory, feeding {@code stdin} (then end of input).
     */
    static JarRun run(Path jdk, Path dir, String stdin, Duration timeout, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(jdk.resolve("bin").resolve("java").toString());
        command.addAll(Arrays.asList(args));
        Files.createDirectories(dir);
        Process p = new ProcessBuilder(command).directory(dir.toFile()).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Thread o = pump(p.getInputStream(), out);
        Thread e = pump(p.getErrorStream(), err);
        try (OutputStream in = p.getOutputStream()) {
            if (stdin != null) {
                in.write(stdin.getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException ignored) {
            // the program ended before reading everything; its output says why
        }
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            o.join(5000);
            e.join(5000);
            throw new AssertionError("no exit within " + timeout.toSeconds() + " s: " + command + "\nstdout:\n"
                    + out.toString(StandardCharsets.UTF_8) + "\nstderr:\n" + err.toString(StandardCharsets.UTF_8));
        }
        o.join();
        e.join();
        return new JarRun(p.exitValue(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private static Thread pump(InputStream in, ByteArrayOutputStream to) {
        Thread t = new Thread(() -> {
            try {
                in.transferTo(to);
            } catch (IOException ignored) {
                // the process ended
            }
        });
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Override
    public String toString() {
        return "exit status " + exitStatus + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
}
