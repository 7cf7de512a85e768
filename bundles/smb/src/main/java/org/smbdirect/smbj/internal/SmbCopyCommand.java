package org.smbdirect.smbj.internal;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.apache.felix.service.command.CommandSession;
import org.apache.felix.service.command.Descriptor;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.smbdirect.smbj.RdmaChannelStatistics;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.msdtyp.AccessMask;
import com.hierynomus.mserref.NtStatus;
import com.hierynomus.mssmb2.SMB2CreateDisposition;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2ShareAccess;
import com.hierynomus.mssmb2.SMBApiException;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.auth.AuthenticationContext;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.session.Session;
import com.hierynomus.smbj.share.DiskShare;
import com.hierynomus.smbj.share.File;

/**
 * The Gogo command {@code smbdirect:smbcopy}: a local file to {@code //SERVER/SHARE/PATH} and back
 * over SMB3 on SMB Direct, with a progress bar, throughput, the path the data took, and a
 * comparison of what came back. Lives here so that the shell bundle needs no smbj.
 */
@Component(service = SmbCopyCommand.class, property = {"osgi.command.scope=smbdirect", "osgi.command.function=smbcopy"})
public final class SmbCopyCommand {
    static final String USAGE = "smbcopy [--user USER] [--password PASSWORD] [--domain DOMAIN] [--dialect 3.0|3.0.2|3.1.1]\n"
            + "        [--sign] [--strict-signatures] [--inline] [--timeout SECONDS] LOCALFILE smb://SERVER[:PORT]/SHARE/PATH [BACKFILE]\n"
            + "  Copies LOCALFILE to the share over SMB3 on SMB Direct, reads it back and compares (and writes\n"
            + "  it to BACKFILE if given). Prints progress, throughput and the path the data took: through\n"
            + "  the RDMA channel (the server RDMA-reads and -writes registered buffers) or inline.\n"
            + "  smb://...     also '//SERVER/SHARE/PATH', quoted: in Gogo an unquoted // starts a comment\n"
            + "  SERVER        the server's address on the RDMA fabric; PORT defaults to SMB Direct's port\n"
            + "                for the provider's transport (445 on InfiniBand and RoCE, 5445 on iWARP)\n"
            + "  --user        default: anonymous; --password also from the environment SMB_PASSWORD\n"
            + "  --dialect     one dialect (default: smbj's choice, 3.1.1 down to 2.0.2)\n"
            + "  --sign        require signing\n"
            + "  --strict-signatures\n"
            + "                refuse ksmbd's signature of READ responses without data (over the\n"
            + "                transport length and the response; accepted and counted by default)\n"
            + "  --inline      no RDMA channel: all data inline in SMB Direct messages\n"
            + "  --timeout     seconds smbj waits for a response (default 60)";

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile SmbjTransport smbj;

    /**
     * Copies a file to a share and back.
     *
     * @param session the shell session
     * @param args see {@link #USAGE}
     */
    @Descriptor("copy a local file to //server/share/path and back over SMB3 on SMB Direct")
    public void smbcopy(CommandSession session, @Descriptor("see help smbcopy") String[] args) {
        PrintStream out = System.out;
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            out.println("smbcopy: " + e.getMessage());
            out.println(USAGE);
            return;
        }
        SmbjTransport t = smbj;
        if (t == null) {
            out.println("smbcopy: no SMB3 transport: the SmbDirect service is not available (see providers)");
            return;
        }
        try {
            copy(t, o, out);
        } catch (Exception e) {
            out.println("smbcopy: " + explain(e, o));
        }
    }

    private static void copy(SmbjTransport base, Options o, PrintStream out) throws Exception {
        long size = Files.size(o.local);
        SmbjTransport t = o.inline || o.strictSignatures ? SmbjTransport.create(base.transport(),
                base.options().toBuilder().rdmaChannel(base.options().rdmaChannel() && !o.inline)
                        .strictSignatures(base.options().strictSignatures() || o.strictSignatures).build())
                : base;
        SmbConfig.Builder b = t.configBuilder().withTimeout(o.timeoutSeconds, TimeUnit.SECONDS).withSigningRequired(o.sign);
        if (o.dialect != null) {
            b.withDialects(o.dialect);
        }
        try (SMBClient client = new SMBClient(b.build());
                Connection connection = client.connect(o.server, o.port)) {
            SmbDirectConnection direct = t.connectionOf(connection).orElseThrow();
            out.printf(Locale.ROOT, "connected to %s over SMB Direct (%s, %s): %s, MaxReadWriteSize %d%n",
                    direct.remoteAddress(), direct.parameters().provider(), direct.parameters().transport(),
                    connection.getNegotiatedProtocol().getDialect(), direct.parameters().maxReadWriteSize());
            try (Session session = connection.authenticate(o.user == null ? AuthenticationContext.anonymous()
                    : new AuthenticationContext(o.user, o.password.toCharArray(), o.domain));
                    DiskShare share = (DiskShare) session.connectShare(o.share)) {
                int chunk = Math.max(4096, Math.min(connection.getNegotiatedProtocol().getMaxWriteSize(),
                        connection.getNegotiatedProtocol().getMaxReadSize()));
                byte[] buffer = new byte[(int) Math.min(chunk, Math.max(size, 1))];
                RdmaChannelStatistics before = t.statistics();
                long start = System.nanoTime();
                long crcUp;
                try (File file = share.openFile(o.path, EnumSet.of(AccessMask.GENERIC_READ, AccessMask.GENERIC_WRITE), null,
                        SMB2ShareAccess.ALL, SMB2CreateDisposition.FILE_OVERWRITE_IF, null);
                        FileChannel in = FileChannel.open(o.local, StandardOpenOption.READ)) {
                    out.printf(Locale.ROOT, "%s -> //%s/%s/%s (%s)%n", o.local, o.server, o.share, o.path, bytes(size));
                    Progress p = new Progress(out, size);
                    CRC32C crc = new CRC32C();
                    for (long done = 0; done < size;) {
                        int n = in.read(ByteBuffer.wrap(buffer, 0, (int) Math.min(buffer.length, size - done)));
                        crc.update(buffer, 0, n);
                        file.write(buffer, done, 0, n);
                        done += n;
                        p.update(done);
                    }
                    p.finish();
                    crcUp = crc.getValue();
                    RdmaChannelStatistics middle = t.statistics();
                    long writeNanos = System.nanoTime() - start;
                    out.printf(Locale.ROOT, "wrote %s in %.3f s: %.1f MiB/s; path: %s%n", bytes(size), writeNanos / 1e9,
                            mibps(size, writeNanos), path(before, middle, false));

                    long read = 0;
                    CRC32C back = new CRC32C();
                    start = System.nanoTime();
                    p = new Progress(out, size);
                    try (FileChannel copy = o.back == null ? null : FileChannel.open(o.back, StandardOpenOption.CREATE,
                            StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING)) {
                        while (read < size) {
                            int n = file.read(buffer, read, 0, (int) Math.min(buffer.length, size - read));
                            if (n <= 0) {
                                throw new IOException("the server returned " + n + " bytes at offset " + read + " of " + size);
                            }
                            back.update(buffer, 0, n);
                            if (copy != null) {
                                copy.write(ByteBuffer.wrap(buffer, 0, n));
                            }
                            read += n;
                            p.update(read);
                        }
                    }
                    p.finish();
                    long readNanos = System.nanoTime() - start;
                    RdmaChannelStatistics after = t.statistics();
                    out.printf(Locale.ROOT, "read back %s in %.3f s: %.1f MiB/s; path: %s%n", bytes(size), readNanos / 1e9,
                            mibps(size, readNanos), path(middle, after, true));
                    long tolerated = after.toleratedReadSignatures() - middle.toleratedReadSignatures();
                    if (tolerated > 0) {
                        out.printf(Locale.ROOT, "%d READ responses signed as ksmbd signs them (over the transport length "
                                + "and the response, not MS-SMB2's): accepted; --strict-signatures refuses them%n", tolerated);
                    }
                    out.printf(Locale.ROOT, "CRC-32C sent %08x, received %08x: %s%n", crcUp, back.getValue(),
                            crcUp == back.getValue() ? "match" : "MISMATCH");
                    if (crcUp != back.getValue()) {
                        throw new IOException("what came back differs from " + o.local);
                    }
                }
                printLeft(t, connection, direct, out);
            }
        }
    }

    /**
     * The registrations left on the connection after the copy: none, as every request's ended with
     * its response. Where registrations are memory regions of their own (soft-iWARP), the last one
     * ends just after smbj has the response, which is given up to a second, and those made ahead
     * for the next READ and WRITE ({@link RegistrationAhead}) are named as such.
     */
    private static void printLeft(SmbjTransport t, Connection connection, SmbDirectConnection direct, PrintStream out)
            throws InterruptedException {
        int ahead = t.registeredAhead(connection);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        while (direct.statistics().registrationsLive() > ahead && System.nanoTime() < deadline) {
            TimeUnit.MILLISECONDS.sleep(5);
        }
        out.println("registrations left on the connection: " + (direct.statistics().registrationsLive() - ahead)
                + (ahead > 0 ? ", besides " + ahead + " made ahead for the next requests" : ""));
    }

    /** The path the data of a direction took, from the transport's counters. */
    static String path(RdmaChannelStatistics a, RdmaChannelStatistics b, boolean read) {
        long rdma = read ? b.rdmaReads() - a.rdmaReads() : b.rdmaWrites() - a.rdmaWrites();
        long rdmaBytes = read ? b.rdmaReadBytes() - a.rdmaReadBytes() : b.rdmaWriteBytes() - a.rdmaWriteBytes();
        long inline = read ? b.inlineReads() - a.inlineReads() : b.inlineWrites() - a.inlineWrites();
        long inlineBytes = read ? b.inlineReadBytes() - a.inlineReadBytes() : b.inlineWriteBytes() - a.inlineWriteBytes();
        long split = read ? b.splitReads() - a.splitReads() : b.splitWrites() - a.splitWrites();
        List<String> parts = new ArrayList<>();
        if (rdma > 0) {
            parts.add(String.format(Locale.ROOT, "RDMA channel, %d %s%s, %s (the server RDMA-%s them)", rdma,
                    read ? "READs" : "WRITEs", split > 0 ? " (" + split + " of smbj's, sent in parts)" : "",
                    bytes(rdmaBytes), read ? "wrote" : "read"));
        }
        if (inline > 0) {
            parts.add(String.format(Locale.ROOT, "inline, %d %s, %s", inline, read ? "READs" : "WRITEs", bytes(inlineBytes)));
        }
        return parts.isEmpty() ? "no data" : String.join("; ", parts);
    }

    /** One line for the usual mistakes. */
    static String explain(Throwable e, Options o) {
        String transport = null;
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SMBApiException) {
                SMBApiException api = (SMBApiException) t;
                NtStatus s = api.getStatus();
                if (s == NtStatus.STATUS_LOGON_FAILURE) {
                    return "authentication failed for " + (o.user == null ? "anonymous" : "user " + o.user)
                            + " at " + o.server + " (" + s + ")";
                }
                if (s == NtStatus.STATUS_BAD_NETWORK_NAME) {
                    return "share '" + o.share + "' not found on " + o.server + " (" + s + ")";
                }
                if (s == NtStatus.STATUS_OBJECT_PATH_NOT_FOUND || s == NtStatus.STATUS_OBJECT_NAME_INVALID) {
                    return "path '" + o.path + "' not usable on //" + o.server + "/" + o.share + " (" + s + ")";
                }
                if (s == NtStatus.STATUS_USER_SESSION_DELETED) {
                    return o.server + " ended the session (" + s + "): the server is stopping, or logged the session off";
                }
                if (s == NtStatus.STATUS_ACCESS_DENIED) {
                    return "access to //" + o.server + "/" + o.share + "/" + o.path + " denied (" + s + ")";
                }
                return o.server + " answered " + s + ": " + api.getMessage();
            }
            String m = t.getMessage();
            if (m != null && (m.startsWith("no SMB Direct connection") || m.contains("SMB Direct connection to")
                    || m.contains("failed signature verification"))) {
                transport = m; // the innermost says it without the wrappers' class names
            }
        }
        if (transport != null) {
            return transport;
        }
        if (e instanceof java.nio.file.NoSuchFileException) {
            return "no such local file: " + e.getMessage();
        }
        return e.toString();
    }

    private static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        return n < 1 << 20 ? String.format(Locale.ROOT, "%.1f KiB", n / 1024.0)
                : String.format(Locale.ROOT, "%.1f MiB", n / 1048576.0);
    }

    private static double mibps(long n, long nanos) {
        return nanos <= 0 ? 0 : n / 1048576.0 / (nanos / 1e9);
    }

    /** A bar redrawn in place (at most 10 times a second), or a line per quarter when not on a terminal. */
    private static final class Progress {
        private final PrintStream out;
        private final long total;
        private final boolean terminal = System.console() != null;
        private final long start = System.nanoTime();
        private long drawn;
        private int quarters;

        Progress(PrintStream out, long total) {
            this.out = out;
            this.total = Math.max(1, total);
        }

        void update(long done) {
            long now = System.nanoTime();
            int quarter = (int) (4 * done / total);
            if (terminal ? now - drawn > 100_000_000L || done >= total : quarter > quarters) {
                drawn = now;
                quarters = quarter;
                int filled = (int) (30 * done / total);
                String line = String.format(Locale.ROOT, "[%s%s] %3d%%  %s  %.1f MiB/s", "#".repeat(filled),
                        ".".repeat(30 - filled), 100 * done / total, bytes(done), mibps(done, now - start));
                if (terminal) {
                    out.print("\r" + line);
                } else {
                    out.println(line);
                }
            }
        }

        void finish() {
            if (terminal) {
                out.println();
            }
        }
    }

    /** The parsed command line. */
    static final class Options {
        Path local;
        Path back;
        String server;
        int port = 445;
        String share;
        String path;
        String user;
        String password = System.getenv("SMB_PASSWORD") == null ? "" : System.getenv("SMB_PASSWORD");
        String domain = "";
        SMB2Dialect dialect;
        boolean sign;
        boolean inline;
        boolean strictSignatures;
        long timeoutSeconds = 60;

        static Options parse(String[] args) {
            Options o = new Options();
            List<String> positional = new ArrayList<>();
            for (int i = 0; args != null && i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--user":
                        o.user = value(args, ++i, a);
                        break;
                    case "--password":
                        o.password = value(args, ++i, a);
                        break;
                    case "--domain":
                        o.domain = value(args, ++i, a);
                        break;
                    case "--dialect":
                        o.dialect = dialect(value(args, ++i, a));
                        break;
                    case "--timeout":
                        o.timeoutSeconds = seconds(value(args, ++i, a));
                        break;
                    case "--sign":
                        o.sign = true;
                        break;
                    case "--inline":
                        o.inline = true;
                        break;
                    case "--strict-signatures":
                        o.strictSignatures = true;
                        break;
                    default:
                        if (a.startsWith("--")) {
                            throw new IllegalArgumentException("unknown option " + a);
                        }
                        positional.add(a);
                }
            }
            if (positional.size() < 2 || positional.size() > 3) {
                throw new IllegalArgumentException("expected LOCALFILE smb://SERVER/SHARE/PATH [BACKFILE] (an unquoted "
                        + "//SERVER/... is a comment to Gogo)");
            }
            o.local = Paths.get(positional.get(0));
            o.unc(positional.get(1));
            o.back = positional.size() == 3 ? Paths.get(positional.get(2)) : null;
            return o;
        }

        /**
         * {@code smb://SERVER[:PORT]/SHARE/PATH} or {@code //SERVER[:PORT]/SHARE/PATH}, with / or \ as
         * separators; [IPV6] for an IPv6 literal.
         */
        private void unc(String unc) {
            String u = unc.replace('\\', '/');
            if (u.regionMatches(true, 0, "smb://", 0, 6)) {
                u = u.substring(4);
            }
            if (!u.startsWith("//")) {
                throw new IllegalArgumentException("'" + unc + "' is not //SERVER/SHARE/PATH");
            }
            String[] parts = u.substring(2).split("/", 3);
            if (parts.length < 3 || parts[0].isEmpty() || parts[1].isEmpty() || parts[2].isEmpty()) {
                throw new IllegalArgumentException("'" + unc + "' is not //SERVER/SHARE/PATH");
            }
            String host = parts[0];
            int colon = host.lastIndexOf(':');
            if (colon > 0 && host.indexOf(']') < colon && (host.startsWith("[") || host.indexOf(':') == colon)) {
                try {
                    port = Integer.parseInt(host.substring(colon + 1));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("'" + host.substring(colon + 1) + "' is not a port");
                }
                if (port < 1 || port > 65535) {
                    throw new IllegalArgumentException("port " + port + " is not between 1 and 65535");
                }
                host = host.substring(0, colon);
            }
            server = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
            share = parts[1];
            path = parts[2].replace('/', '\\');
        }

        private static String value(String[] args, int i, String option) {
            if (i >= args.length) {
                throw new IllegalArgumentException("option " + option + " needs a value");
            }
            return args[i];
        }

        private static SMB2Dialect dialect(String v) {
            switch (v) {
                case "3.0":
                    return SMB2Dialect.SMB_3_0;
                case "3.0.2":
                    return SMB2Dialect.SMB_3_0_2;
                case "3.1.1":
                    return SMB2Dialect.SMB_3_1_1;
                default:
                    throw new IllegalArgumentException("dialect '" + v + "': one of 3.0, 3.0.2, 3.1.1 (SMB Direct needs SMB 3)");
            }
        }

        private static long seconds(String v) {
            try {
                long s = Long.parseLong(v);
                if (s < 1 || s > 3600) {
                    throw new IllegalArgumentException("--timeout must be between 1 and 3600 seconds, was " + s);
                }
                return s;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--timeout: '" + v + "' is not a number of seconds");
            }
        }
    }
}
