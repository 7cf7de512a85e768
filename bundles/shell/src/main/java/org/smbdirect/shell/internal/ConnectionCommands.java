package org.smbdirect.shell.internal;

import static org.smbdirect.shell.internal.SmbDirectCommands.DEFAULT_TIMEOUT;
import static org.smbdirect.shell.internal.SmbDirectCommands.path;
import static org.smbdirect.shell.internal.SmbDirectCommands.yesNo;

import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.felix.service.command.CommandSession;
import org.osgi.framework.ServiceReference;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.shell.internal.Endpoints.ConnectionEntry;
import org.smbdirect.shell.internal.Endpoints.Entry;
import org.smbdirect.shell.internal.Endpoints.ListenerEntry;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TransportStatistics;

/**
 * The commands about connections and what travels on them: {@code connections}, {@code listen},
 * {@code connect}, {@code send}, {@code close}, {@code transfer} and {@code bench}, over the
 * listeners and connections the shell made ({@link Endpoints}).
 */
final class ConnectionCommands {
    private final Shell shell;
    private final Endpoints endpoints;

    ConnectionCommands(Shell shell, Endpoints endpoints) {
        this.shell = shell;
        this.endpoints = endpoints;
    }

    void doConnections() throws Exception {
        PrintStream out = System.out;
        SmbDirect t = shell.transport();
        List<SmbDirectConnection> all = t.connections();
        for (Entry e : endpoints.all()) {
            if (e instanceof ListenerEntry) {
                ListenerEntry l = (ListenerEntry) e;
                InetSocketAddress at = l.address();
                out.println("listener " + l.id + ": " + (at == null ? "(no provider)" : at) + " (" + l.kind() + ")");
            }
        }
        if (all.isEmpty()) {
            out.println("no connections");
        }
        for (SmbDirectConnection c : all) {
            ConnectionEntry e = endpoints.of(c);
            ConnectionParameters p = c.parameters();
            ConnectionStatistics s = c.statistics();
            out.println("connection " + (e == null ? "-" : Integer.toString(e.id)) + ": " + c.localAddress() + " -> "
                    + c.remoteAddress() + "  " + (p.initiator() ? "initiator" : "listener") + "  " + p.provider() + "  "
                    + (c.isOpen() ? "open" : "closed") + (e == null ? "" : "  " + e.kind() + ", " + e.origin));
            out.println("  negotiated: protocol " + String.format("0x%04x", p.protocolVersion()) + ", MaxSendSize "
                    + p.maxSendSize() + ", MaxReceiveSize " + p.maxReceiveSize() + ", MaxFragmentedSendSize "
                    + p.maxFragmentedSendSize() + ", MaxFragmentedRecvSize " + p.maxFragmentedRecvSize()
                    + ", MaxReadWriteSize " + p.maxReadWriteSize());
            out.println("              ReceiveCreditMax " + p.receiveCreditMax() + ", SendCreditTarget "
                    + p.sendCreditTarget() + ", IRD/ORD " + p.ird() + "/" + p.ord() + ", keepalive "
                    + p.keepaliveInterval().toSeconds() + " s, RDMA Read " + yesNo(p.rdmaRead()) + ", remote invalidate "
                    + yesNo(p.remoteInvalidate()));
            out.println("  statistics: messages " + s.messagesSent() + " sent (" + Units.bytes(s.bytesSent()) + "), "
                    + s.messagesReceived() + " received (" + Units.bytes(s.bytesReceived()) + "); fragments "
                    + s.fragmentsSent() + "/" + s.fragmentsReceived() + "; credits granted " + s.creditsGranted()
                    + ", received " + s.creditsReceived() + ", stalls " + s.creditStalls() + "; keepalives "
                    + s.keepalivesSent() + "/" + s.keepalivesReceived() + " (" + s.keepalivesAnswered() + " answered)");
            out.println("              RDMA Read " + s.rdmaReads() + " (" + Units.bytes(s.rdmaReadBytes())
                    + "), RDMA Write " + s.rdmaWrites() + " (" + Units.bytes(s.rdmaWriteBytes()) + "); registrations "
                    + s.registrationsLive() + "; send credits " + s.sendCredits() + ", receive credits "
                    + s.receiveCredits());
            if (e != null) {
                BulkSession session = e.session();
                if (session != null) {
                    BulkStatistics b = session.statistics();
                    out.println("  bulk: sends inline " + b.inlineSends() + ", by RDMA Read " + b.readTransfers()
                            + ", by RDMA Write " + b.writeTransfers() + "; sent " + Units.bytes(b.bytesSent())
                            + ", received " + Units.bytes(b.bytesReceived()) + "; no-buffers " + b.noBuffers()
                            + "; peer can RDMA Read: " + yesNo(session.peerCanRdmaRead()));
                }
                out.println("  received: " + e.messagesReceived() + " " + (session != null ? "sends" : "messages") + ", "
                        + e.received().bytes() + " bytes, CRC-32C " + Checksum.hex(e.received().value())
                        + lastOf(e.recent()));
            }
        }
        TransportStatistics ts = t.statistics();
        out.println("transport " + (t.provider() == null ? "(no provider)" : t.provider()) + ": open "
                + ts.connectionsOpen() + ", established " + ts.connectionsEstablished() + ", failed "
                + ts.connectionsFailed() + ", terminations " + ts.terminations());
    }

    private static String lastOf(List<String> recent) {
        return recent.isEmpty() ? "" : "; last " + recent.get(recent.size() - 1);
    }

    // ================================================================== listen, connect, send, close

    void doListen(CommandSession session, Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 1);
        SmbDirect t = shell.transport();
        InetSocketAddress local = address(pos.isEmpty() ? null : pos.get(0), true);
        PrintStream notices = session == null ? null : session.getConsole();
        ListenerEntry l;
        if (a.flag("bulk")) {
            BulkTransfer b = shell.bulk();
            BulkListener bl = b.listen(local, s -> endpoints.newConnection("accepted (bulk)", notices)
                    .attach(s.connection(), s));
            l = endpoints.addListener(null, bl);
        } else {
            SmbDirectListener ml = t.listen(local, c -> {
                ConnectionEntry e = endpoints.newConnection("accepted", notices);
                e.attach(c, null);
                return e;
            });
            l = endpoints.addListener(ml, null);
        }
        out.println("listener " + l.id + " on " + l.address() + " (" + t.provider() + ", " + l.kind() + ")");
    }

    void doConnect(CommandSession session, Args a) throws Exception {
        PrintStream out = System.out;
        String target = a.positional(1, 1).get(0);
        InetSocketAddress remote = address(target, false);
        Duration timeout = Duration.ofSeconds(a.integer("timeout", (int) DEFAULT_TIMEOUT.toSeconds(), 1, 3600));
        PrintStream notices = session == null ? null : session.getConsole();
        ConnectionEntry e = endpoints.newConnection("connected", notices);
        SmbDirectConnection c;
        if (a.flag("bulk")) {
            BulkSession s = shell.bulk().connect(remote, e, timeout);
            c = s.connection();
            e.attach(c, s);
        } else {
            c = shell.transport().connect(remote, e, timeout);
            e.attach(c, null);
        }
        ConnectionParameters p = c.parameters();
        out.println("connection " + e.id + ": " + c.localAddress() + " -> " + c.remoteAddress() + " (" + p.provider()
                + ", " + e.kind() + ")");
        out.println("  negotiated: MaxSendSize " + p.maxSendSize() + ", MaxReceiveSize " + p.maxReceiveSize()
                + ", MaxFragmentedSendSize " + p.maxFragmentedSendSize() + ", MaxReadWriteSize " + p.maxReadWriteSize()
                + ", credits " + p.receiveCreditMax() + "/" + p.sendCreditTarget() + ", IRD/ORD " + p.ird() + "/"
                + p.ord() + (e.session() == null ? "" : ", peer can RDMA Read: " + yesNo(e.session().peerCanRdmaRead())));
    }

    void doSend(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional();
        if (pos.isEmpty()) {
            throw new UsageException("send needs a connection ID");
        }
        ConnectionEntry e = connection(pos.get(0));
        ByteBuffer message;
        if (a.value("size") != null) {
            a.positional(1, 1);
            long n = a.size("size", 0);
            if (n < 1 || n > Integer.MAX_VALUE - 8) {
                throw new UsageException("--size must be between 1 byte and 2 GiB");
            }
            message = ByteBuffer.allocateDirect((int) n);
            Checksum.fill(message, n);
        } else {
            if (pos.size() < 2) {
                throw new UsageException("nothing to send: give TEXT or --size SIZE");
            }
            message = ByteBuffer.wrap(String.join(" ", pos.subList(1, pos.size())).getBytes(StandardCharsets.UTF_8));
        }
        int n = message.remaining();
        try {
            if (e.session() != null) {
                e.session().sendAndWait(message, DEFAULT_TIMEOUT);
            } else {
                int max = e.connection().parameters().maxFragmentedSendSize();
                if (n > max) {
                    throw new UsageException(n + " bytes exceed the connection's MaxFragmentedSendSize of " + max
                            + " (use transfer over a bulk session for large data)");
                }
                e.connection().sendAndWait(message, DEFAULT_TIMEOUT);
            }
        } catch (IllegalArgumentException | IllegalStateException ex) {
            throw new UsageException(ex.getMessage());
        }
        out.println("sent " + n + " bytes on connection " + e.id + ", CRC-32C " + Checksum.hex(Checksum.of(message)));
    }

    private ConnectionEntry connection(String id) throws UsageException {
        Entry e = entry(id);
        if (!(e instanceof ConnectionEntry)) {
            throw new UsageException(id + " is a listener, not a connection");
        }
        return (ConnectionEntry) e;
    }

    private Entry entry(String id) throws UsageException {
        int n;
        try {
            n = Integer.parseInt(id);
        } catch (NumberFormatException ex) {
            throw new UsageException("'" + id + "' is not an ID (see connections)");
        }
        Entry e = endpoints.get(n);
        if (e == null) {
            throw new UsageException("no connection or listener " + n + " (see connections)");
        }
        return e;
    }

    void doClose(Args a) throws Exception {
        List<String> ids = a.positional(1, Integer.MAX_VALUE);
        List<Entry> found = new ArrayList<>();
        for (String id : ids) {
            found.add(entry(id));
        }
        for (Entry e : found) {
            endpoints.remove(e.id);
            e.close();
            System.out.println("closed " + (e instanceof ListenerEntry ? "listener " : "connection ") + e.id);
        }
    }

    // ================================================================== transfer

    void doTransfer(CommandSession session, Args a) throws Exception {
        PrintStream out = System.out;
        String target = a.positional(1, 1).get(0);
        if ((a.value("size") == null) == (a.value("file") == null)) {
            throw new UsageException("give either --size SIZE or --file PATH");
        }
        long chunk = a.size("chunk", 8 * Units.MIB);
        if (chunk < 1 || chunk > 1 << 30) {
            throw new UsageException("--chunk must be between 1 byte and 1 GiB");
        }
        Duration stall = Duration.ofSeconds(a.integer("timeout", 60, 1, 86400));
        Transfer.Source source;
        if (a.value("file") != null) {
            source = Transfer.file(path(a.value("file")));
        } else {
            long size = a.size("size", 0);
            if (size < 1) {
                throw new UsageException("--size must be at least 1 byte");
            }
            source = Transfer.generated(size, size);
        }
        try (Transfer.Source src = source) {
            BulkTransfer b = shell.bulk();
            if (chunk > b.configuration().maxMessageSize()) {
                throw new UsageException("--chunk exceeds the bulk layer's maxMessageSize of "
                        + b.configuration().maxMessageSize());
            }
            BulkSession s;
            boolean own;
            if (target.matches("\\d+")) {
                ConnectionEntry e = connection(target);
                if (e.session() == null) {
                    throw new UsageException("connection " + target + " is not a bulk session (connect --bulk)");
                }
                s = e.session();
                own = false;
            } else {
                InetSocketAddress remote = address(target, false);
                s = b.connect(remote, (x, d) -> {
                }, DEFAULT_TIMEOUT);
                own = true;
            }
            try {
                out.println("sending " + src.describe() + " to " + s.connection().remoteAddress() + " over "
                        + s.connection().parameters().provider() + "; the peer "
                        + (s.peerCanRdmaRead() ? "RDMA-reads" : "cannot RDMA Read, the data is RDMA-written"));
                int depth = Math.max(1, Math.min(4, b.configuration().maxInFlight()));
                Transfer.Result r = Transfer.run(s, src, (int) chunk, depth, stall, out, System.console() != null);
                if (r.failure != null) {
                    out.println("transfer FAILED after " + Units.bytes(r.bytes) + " of " + Units.bytes(src.size()) + ": "
                            + Transfer.describe(r.failure));
                    return;
                }
                out.println("transferred " + r.bytes + " bytes (" + Units.bytes(r.bytes) + ") in " + Units.seconds(r.nanos)
                        + ": " + Units.rate(r.bytes, r.nanos) + "; path: " + r.path + "; CRC-32C " + Checksum.hex(r.crc));
            } finally {
                if (own) {
                    s.close();
                }
            }
        }
    }

    // ================================================================== bench

    void doBench(Args a) throws Exception {
        a.positional(0, 0);
        Bench.Op op;
        String o = a.value("op", "write").toLowerCase(Locale.ROOT);
        switch (o) {
            case "write":
                op = Bench.Op.WRITE;
                break;
            case "read":
                op = Bench.Op.READ;
                break;
            case "send":
                op = Bench.Op.SEND;
                break;
            case "bulk":
                op = Bench.Op.BULK;
                break;
            default:
                throw new UsageException("--op must be write, read, send or bulk, was '" + o + "'");
        }
        int iterations = a.integer("iterations", 1000, 1, 100_000_000);
        int depth = a.integer("depth", 8, 1, 1024);
        Duration stall = Duration.ofSeconds(a.integer("timeout", 30, 1, 3600));
        if (a.flag("all") && a.value("size") != null) {
            throw new UsageException("give --size or --all, not both");
        }
        SmbDirect t = shell.transport();
        List<Long> sizes = new ArrayList<>();
        if (a.flag("all")) {
            long limit = op == Bench.Op.SEND ? t.configuration().maxFragmentedRecvSize()
                    : op == Bench.Op.BULK ? 8 * Units.MIB : t.configuration().maxReadWriteSize();
            for (long s = 2; s <= limit; s <<= 1) {
                sizes.add(s);
            }
        } else {
            for (String s : a.value("size", "65536").split(",")) {
                long v = Units.parseSize("--size", s);
                if (v < 1 || v > 1 << 30) {
                    throw new UsageException("--size must be between 1 byte and 1 GiB, was " + s);
                }
                sizes.add(v);
            }
        }
        InetAddress address = localAddress(t);
        new Bench(t, shell.bulkOrNull(), address, System.out, stall).run(op, sizes, iterations, depth);
    }

    /**
     * The socket address an argument names ({@link PeerAddress}): an absent host is the current
     * provider's own address (a loopback connection, or where to listen), an absent port the one
     * SMB Direct uses on the provider's transport type (445 on InfiniBand and RoCE, 5445 on iWARP).
     */
    private InetSocketAddress address(String text, boolean listening) throws UsageException {
        PeerAddress a = PeerAddress.parse(text, listening ? 0 : 1);
        SmbDirect t = shell.transport();
        if (a.host == null && !listening && a.port < 0) {
            throw new UsageException("give the peer's ADDRESS[:PORT], e.g. 10.0.1.2:" + t.defaultPort()
                    + " or [fd00::2]:" + t.defaultPort() + ", or :PORT for this provider's own address");
        }
        InetAddress host = a.host != null ? a.host : localAddress(t);
        return new InetSocketAddress(host, a.port >= 0 ? a.port : t.defaultPort());
    }

    /** The first address of the provider the transport uses. */
    private InetAddress localAddress(SmbDirect t) throws UsageException {
        String used = t.provider();
        if (used == null) {
            throw new UsageException("no RDMA provider is available to the transport (see providers)");
        }
        for (ServiceReference<RdmaProvider> r : Services.providers(shell.context())) {
            RdmaProvider p = shell.context().getService(r);
            if (p == null) {
                continue;
            }
            try {
                if ((p.type() + "/" + p.name()).equals(used) && !p.addresses().isEmpty()) {
                    return p.addresses().get(0);
                }
            } finally {
                shell.context().ungetService(r);
            }
        }
        throw new UsageException("the provider " + used + " has no address");
    }

}
