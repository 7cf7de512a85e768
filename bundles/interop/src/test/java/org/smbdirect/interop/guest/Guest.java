package org.smbdirect.interop.guest;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectFactory;

/**
 * The guest as the interop tests see it: its RDMA device and address, the Linux peers behind
 * {@code linux-peers.sh}, and an SMB Direct engine on the verbs provider, made through the public
 * plain-Java API (ServiceLoader) as an embedding user would.
 */
final class Guest {
    /** The share every test uses, on the guest's tmpfs. */
    static final Path SHARE = Paths.get("/tmp/interop-share");
    static final String USER = "interop";
    static final String PASSWORD = "interop-pass-1";

    private Guest() {
    }

    /** The guest's RDMA address (the dummy interface carrying rxe0 or siw0). */
    static InetAddress address() throws IOException {
        return InetAddress.getByName(env("RDMA_VM_IP", "10.99.0.1"));
    }

    /** The guest's IPv6 RDMA address (run-in-vm.sh's RDMA_VM_IP6 on the same interface). */
    static InetAddress address6() throws IOException {
        return InetAddress.getByName(env("RDMA_VM_IP6", "fd99::1"));
    }

    /**
     * Whether the guest runs Linux 7 or later, whose ksmbd and cifs sit on the shared SMB Direct
     * module {@code fs/smb/smbdirect}; otherwise it is the 6.1 generation (SMB Direct inside ksmbd
     * and cifs). The JVM's {@code os.version} is the running kernel's release.
     */
    static boolean linux7() {
        String release = System.getProperty("os.version", "");
        int dot = release.indexOf('.');
        try {
            return dot > 0 && Integer.parseInt(release.substring(0, dot)) >= 7;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** The kernel generation, for test output: "Linux 7.2.13+deb14-amd64". */
    static String kernel() {
        return "Linux " + System.getProperty("os.version", "?");
    }

    /** {@code rxe} or {@code siw}. */
    static String transport() {
        return System.getProperty("interop.transport", "rxe");
    }

    static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v;
    }

    /**
     * The verbs provider's configuration: {@code -Dinterop.verbsConfig=key=value,...} (through
     * {@code -Dinterop.jvmOpts}), for example {@code registrationCache=0} to measure without the
     * registration cache; empty for the defaults.
     */
    static Map<String, String> verbsConfiguration() {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        for (String kv : System.getProperty("interop.verbsConfig", "").split(",")) {
            int eq = kv.indexOf('=');
            if (eq > 0) {
                m.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            } else if (!kv.isBlank()) {
                throw new IllegalArgumentException("interop.verbsConfig takes key=value pairs, not " + kv);
            }
        }
        return m;
    }

    /** An engine on the guest's verbs provider. */
    static SmbDirect engine(SmbDirectConfig config) throws org.smbdirect.rdma.RdmaException {
        List<RdmaProvider> providers = providers();
        return ServiceLoader.load(SmbDirectFactory.class).findFirst()
                .orElseThrow(() -> new AssertionError("no SmbDirectFactory on the class path")).create(providers, config);
    }

    /** The guest's verbs providers (one per device), for a test that speaks the provider API itself; the caller closes them. */
    static List<RdmaProvider> providers() throws org.smbdirect.rdma.RdmaException {
        RdmaProviderFactory verbs = ServiceLoader.load(RdmaProviderFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(f -> f.type().equals("verbs")).findFirst()
                .orElseThrow(() -> new AssertionError("no verbs RdmaProviderFactory on the class path"));
        List<RdmaProvider> providers = verbs.create(verbsConfiguration());
        if (providers.isEmpty()) {
            throw new AssertionError("the verbs provider found no RDMA device in the guest");
        }
        return providers;
    }

    /** Runs {@code linux-peers.sh} with the arguments; returns its output, failing on a non-zero exit. */
    static String peers(String... args) throws IOException, InterruptedException {
        Result r = peersResult(300, args);
        if (r.exit != 0) {
            throw new AssertionError("linux-peers.sh " + String.join(" ", args) + " exited " + r.exit + ":\n" + r.output);
        }
        return r.output;
    }

    /** Runs {@code linux-peers.sh}; returns exit status and output. */
    static Result peersResult(int timeoutSeconds, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", System.getProperty("interop.peers", "linux-peers.sh")));
        cmd.addAll(List.of(args));
        return run(timeoutSeconds, cmd);
    }

    /** Runs a command, output and errors together; kills it after the timeout. */
    static Result run(int timeoutSeconds, List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[][] output = new byte[1][];
        Thread reader = new Thread(() -> {
            try {
                output[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                output[0] = ("(output unreadable: " + e + ")").getBytes(StandardCharsets.UTF_8);
            }
        });
        reader.start();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        reader.join(10_000);
        String text = output[0] == null ? "" : new String(output[0], StandardCharsets.UTF_8);
        return new Result(p.isAlive() ? -1 : p.exitValue(), text);
    }

    /**
     * Requests ksmbd served through the RDMA channel so far: with its debug component rdma, ksmbd
     * logs "RDMA r/w request N: token T, length L" for each buffer descriptor; descriptor 0 starts
     * a request (Linux 6.1 and 7; Linux 7's shared module adds "RDMA read, len L, needed credits
     * C" per request, not counted here).
     */
    static int ksmbdRdmaRequests() throws IOException, InterruptedException {
        String log = run(60, List.of("dmesg")).output;
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("RDMA r/w request (0x)?0: token").matcher(log);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    /** smbj's session for the share's user (NTLM). */
    static com.hierynomus.smbj.session.Session login(com.hierynomus.smbj.connection.Connection c) {
        return c.authenticate(new com.hierynomus.smbj.auth.AuthenticationContext(USER, PASSWORD.toCharArray(), "WORKGROUP"));
    }

    /** Opens a file on the share for reading and writing, created or emptied. */
    static com.hierynomus.smbj.share.File create(com.hierynomus.smbj.share.DiskShare share, String name) {
        return share.openFile(name, java.util.EnumSet.of(com.hierynomus.msdtyp.AccessMask.GENERIC_ALL), null,
                com.hierynomus.mssmb2.SMB2ShareAccess.ALL, com.hierynomus.mssmb2.SMB2CreateDisposition.FILE_OVERWRITE_IF, null);
    }

    /** Reads a file's first {@code size} bytes with smbj's File.read, as many requests as that takes. */
    static byte[] readAll(com.hierynomus.smbj.share.File file, int size) {
        return readAll(file, new byte[size]);
    }

    /** Reads the file's first {@code back.length} bytes into {@code back}, READ after READ. */
    static byte[] readAll(com.hierynomus.smbj.share.File file, byte[] back) {
        int size = back.length;
        for (int off = 0; off < size;) {
            int n = file.read(back, off, off, size - off);
            if (n <= 0) {
                throw new AssertionError("READ at " + off + " of " + size + " returned " + n);
            }
            off += n;
        }
        return back;
    }

    /**
     * No registration left on an open connection once its transfers are done, but those the smbj
     * transport made ahead for the next READ and WRITE where registrations are memory regions of
     * their own (soft-iWARP: no memory windows, no send with invalidate), and none of those on RoCE.
     * Where they are made, the last request's registration ends just after smbj has its response:
     * it is given a moment.
     */
    static void nothingLeftButWhatIsMadeAhead(org.smbdirect.smbj.SmbjTransport t,
            com.hierynomus.smbj.connection.Connection connection, org.smbdirect.transport.SmbDirectConnection direct,
            String what) throws InterruptedException {
        int ahead = t.registeredAhead(connection);
        if (direct.parameters().remoteInvalidate() && ahead != 0) {
            throw new AssertionError(what + ": " + ahead + " made ahead where registrations are memory windows");
        }
        waitFor(() -> direct.statistics().registrationsLive() <= ahead, what + ": " + direct.statistics().registrationsLive()
                + " registrations left, " + ahead + " made ahead allowed");
    }

    /** Waits up to 10 s for what the transport does just after smbj has a response, failing with {@code what}. */
    static void waitFor(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError(what + ": not within 10 s");
            }
            TimeUnit.MILLISECONDS.sleep(5);
        }
    }

    /** Appends lines to {@code negotiated.txt}, which the host prints and docs/interoperability.md quotes. */
    static void record(String line) {
        System.out.println(line);
        String out = System.getProperty("interop.out");
        if (out == null) {
            return;
        }
        try {
            Files.writeString(Paths.get(out, "negotiated.txt"), line + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.out.println("(negotiated.txt not written: " + e + ")");
        }
    }

    /** A command's exit status and output. */
    static final class Result {
        final int exit;
        final String output;

        Result(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }
}
