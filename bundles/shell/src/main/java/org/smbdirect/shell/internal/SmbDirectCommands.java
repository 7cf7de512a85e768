package org.smbdirect.shell.internal;

import java.io.PrintStream;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;

import org.apache.felix.service.command.CommandSession;
import org.apache.felix.service.command.Descriptor;
import org.osgi.framework.BundleContext;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.osgi.service.metatype.MetaTypeService;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.transport.SmbDirect;

/**
 * The Gogo commands of scope {@code smbdirect}. Every command takes its arguments as words and
 * parses them itself, so that wrong arguments give the command's usage and a clear error rather
 * than Gogo's coercion message; no command lets an exception (and its stack trace) reach the
 * shell.
 */
// Immediate: the component holds the shell's listeners and connections between commands, so it
// lives while its references do, not only while Gogo happens to hold the service (the main thread
// that used to hold it exists only in the distribution since MainEnabler).
@Component(service = SmbDirectCommands.class, immediate = true, property = {
    "osgi.command.scope=smbdirect",
    "osgi.command.function=providers",
    "osgi.command.function=provider",
    "osgi.command.function=sim",
    "osgi.command.function=connections",
    "osgi.command.function=listen",
    "osgi.command.function=connect",
    "osgi.command.function=send",
    "osgi.command.function=close",
    "osgi.command.function=transfer",
    "osgi.command.function=bench",
    "osgi.command.function=capture",
    "osgi.command.function=demo"})
public final class SmbDirectCommands {
    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    static final String USAGE_PROVIDERS = "providers\n"
            + "  Lists the RDMA providers (OSGi services) with their capabilities; * marks the one new\n"
            + "  connections and listeners use.";
    static final String USAGE_PROVIDER = "provider [NAME | --type TYPE | --any]\n"
            + "  Shows or chooses the RDMA provider the transport uses for new connections and listeners,\n"
            + "  by setting provider.target of configuration org.smbdirect.protocol. Established\n"
            + "  connections stay on their provider; listeners move.\n"
            + "  NAME          the provider.name to use, e.g. sim0\n"
            + "  --type TYPE   any provider of a type, e.g. sim or verbs\n"
            + "  --any         any provider (the default)";
    static final String USAGE_SIM = "sim [list]\n"
            + "sim add NAME [KEY=VALUE...]\n"
            + "sim set NAME KEY=VALUE...\n"
            + "sim remove NAME\n"
            + "  Manages simulated RDMA providers through Config Admin (factory PID org.smbdirect.rdma.sim).\n"
            + "  Keys as in provider-sim/README.md, e.g. rdmaRead=false fabric=lab faults.disconnectAfterOperations=100.\n"
            + "  Latency, faults, capture and connect timeout apply at once; other keys replace the provider.\n"
            + "  Note: once any is added, the unconfigured default provider gives way (Declarative Services).";
    static final String USAGE_CONNECTIONS = "connections\n"
            + "  Lists the transport's connections with negotiated parameters and statistics, the shell's\n"
            + "  listeners, and the transport's totals.";
    static final String USAGE_LISTEN = "listen [--bulk] [ADDRESS][:PORT]\n"
            + "  Listens for SMB Direct peers; what arrives is printed and counted (see connections).\n"
            + "  --bulk        speak the bulk-transfer session protocol (receive transfers)\n"
            + "  ADDRESS       an address of the provider: A.B.C.D, or [IPV6] before :PORT\n"
            + "                (default: the provider's first)\n"
            + "  PORT          default: SMB Direct's port on the provider's transport, 445 on\n"
            + "                InfiniBand and RoCE, 5445 on iWARP; 0 picks one";
    static final String USAGE_CONNECT = "connect [--bulk] [--timeout SECONDS] [ADDRESS][:PORT]\n"
            + "  Connects to a listening peer and negotiates; prints the negotiated parameters.\n"
            + "  --bulk        open a bulk-transfer session (the peer listens with --bulk)\n"
            + "  ADDRESS       the peer: A.B.C.D, HOST, IPV6, or [IPV6] before :PORT\n"
            + "  PORT          default: SMB Direct's port on the provider's transport (445 on\n"
            + "                InfiniBand and RoCE, 5445 on iWARP)\n"
            + "  :PORT         the current provider's own address (a loopback connection)";
    static final String USAGE_SEND = "send ID TEXT...\n"
            + "send ID --size SIZE\n"
            + "  Sends one message on connection ID: the words of TEXT, or SIZE generated bytes.";
    static final String USAGE_CLOSE = "close ID...\n"
            + "  Closes connections or listeners made from the shell.";
    static final String USAGE_TRANSFER = "transfer (--size SIZE | --file PATH) [--chunk SIZE] [--timeout SECONDS] (ID | [ADDRESS][:PORT])\n"
            + "  Sends a generated payload or a file through the bulk layer, with a progress bar and a\n"
            + "  summary (bytes, time, throughput, path taken, CRC-32C). To an ADDRESS a session is opened\n"
            + "  for the transfer (the peer listens with --bulk; :PORT is this provider's own address);\n"
            + "  ID is an open bulk session.\n"
            + "  --size SIZE   generated payload, e.g. 64M\n"
            + "  --file PATH   a file\n"
            + "  --chunk SIZE  bytes per send (default 8M); up to 4 sends in flight\n"
            + "  --timeout S   give up when nothing completes for S seconds (default 60)";
    static final String USAGE_BENCH = "bench [--op write|read|send|bulk] [--size SIZE[,SIZE...] | --all] [--iterations N] [--depth N]\n"
            + "  Measures bandwidth over a loopback connection of the current provider and prints a\n"
            + "  perftest-style table (MB = 2^20 bytes).\n"
            + "  --op          RDMA Write (default), RDMA Read, message send, or bulk transfer\n"
            + "  --size        message sizes (default 65536)\n"
            + "  --all         every power of two from 2 bytes to the connection's limit\n"
            + "  --iterations  measured iterations per size (default 1000)\n"
            + "  --depth       operations outstanding (default 8)";
    static final String USAGE_CAPTURE = "capture [status]\n"
            + "capture on [PATH] [--provider NAME] [--snap BYTES] [--mtu BYTES]\n"
            + "capture off [--provider NAME]\n"
            + "  Writes the simulated providers' traffic as RoCEv2 frames to a pcap file (Config Admin,\n"
            + "  keys capture.* of org.smbdirect.rdma.sim). Default PATH smbdirect-sim.pcap.\n"
            + "  Read it with: tshark -r PATH -Y smb_direct -O smb_direct";
    static final String USAGE_DEMO = "demo [--size SIZE] [--capture PATH | --no-capture] [--timeout SECONDS]\n"
            + "  Two endpoints on the simulated fabric negotiate, exchange messages and move a payload\n"
            + "  (default 64M) by RDMA Read and by RDMA Write through the bulk layer; checksums are\n"
            + "  verified; a pcap capture is written (default ./smbdirect-demo.pcap).";

    private final BundleContext context;
    private final Endpoints endpoints = new Endpoints();
    private final Shell references = new References();
    private final ProviderCommands providerCommands = new ProviderCommands(references);
    private final ConnectionCommands connectionCommands = new ConnectionCommands(references, endpoints);

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile SmbDirect transport;

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile BulkTransfer bulk;

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile ConfigurationAdmin configurationAdmin;

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    private volatile MetaTypeService metatype;

    /**
     * Creates the commands.
     *
     * @param context the bundle's context, to find providers and wait for services
     */
    @Activate
    public SmbDirectCommands(BundleContext context) {
        this.context = context;
    }

    @Deactivate
    void deactivate() {
        endpoints.closeAll();
    }

    // ================================================================== the commands

    /**
     * Lists the RDMA providers.
     *
     * @param session the shell session
     * @param args none
     */
    @Descriptor("list the RDMA providers with their capabilities")
    public void providers(CommandSession session, @Descriptor("(no arguments)") String[] args) {
        run(USAGE_PROVIDERS, () -> {
            Args.parse(args).positional(0, 0);
            providerCommands.doProviders();
        });
    }

    /**
     * Shows or chooses the provider new connections use.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("show or choose the RDMA provider for new connections (provider.target)")
    public void provider(CommandSession session, @Descriptor("[NAME | --type TYPE | --any]") String[] args) {
        run(USAGE_PROVIDER, () -> providerCommands.doProvider(Args.parse(args, "type=", "any")));
    }

    /**
     * Manages simulated providers.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("add, change, remove and list simulated RDMA providers (Config Admin)")
    public void sim(CommandSession session,
            @Descriptor("[list] | add NAME [KEY=VALUE...] | set NAME KEY=VALUE... | remove NAME") String[] args) {
        run(USAGE_SIM, () -> providerCommands.doSim(Args.parse(args)));
    }

    /**
     * Lists connections.
     *
     * @param session the shell session
     * @param args none
     */
    @Descriptor("list connections with negotiated parameters and statistics")
    public void connections(CommandSession session, @Descriptor("(no arguments)") String[] args) {
        run(USAGE_CONNECTIONS, () -> {
            Args.parse(args).positional(0, 0);
            connectionCommands.doConnections();
        });
    }

    /**
     * Listens for peers.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("listen for SMB Direct peers (messages, or bulk transfers with --bulk)")
    public void listen(CommandSession session, @Descriptor("[--bulk] [ADDRESS][:PORT]") String[] args) {
        run(USAGE_LISTEN, () -> connectionCommands.doListen(session, Args.parse(args, "b|bulk")));
    }

    /**
     * Connects to a peer.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("connect to a peer and negotiate")
    public void connect(CommandSession session,
            @Descriptor("[--bulk] [--timeout SECONDS] ADDRESS[:PORT]") String[] args) {
        run(USAGE_CONNECT, () -> connectionCommands.doConnect(session, Args.parse(args, "b|bulk", "t|timeout=")));
    }

    /**
     * Sends a message.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("send a message on a connection")
    public void send(CommandSession session, @Descriptor("ID (TEXT... | --size SIZE)") String[] args) {
        run(USAGE_SEND, () -> connectionCommands.doSend(Args.parse(args, "s|size=")));
    }

    /**
     * Closes connections or listeners.
     *
     * @param session the shell session
     * @param args the ids
     */
    @Descriptor("close connections or listeners by ID")
    public void close(CommandSession session, @Descriptor("ID...") String[] args) {
        run(USAGE_CLOSE, () -> connectionCommands.doClose(Args.parse(args)));
    }

    /**
     * Transfers a file or a generated payload.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("transfer a file or a generated payload through the bulk layer")
    public void transfer(CommandSession session, @Descriptor(
            "(--size SIZE | --file PATH) [--chunk SIZE] [--timeout SECONDS] (ID | ADDRESS[:PORT])") String[] args) {
        run(USAGE_TRANSFER, () -> connectionCommands.doTransfer(session, Args.parse(args, "s|size=", "f|file=", "c|chunk=", "t|timeout=")));
    }

    /**
     * Measures bandwidth.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("measure bandwidth on a loopback connection (perftest-style table)")
    public void bench(CommandSession session, @Descriptor(
            "[--op write|read|send|bulk] [--size SIZE[,SIZE...] | --all] [--iterations N] [--depth N]") String[] args) {
        run(USAGE_BENCH, () -> connectionCommands.doBench(Args.parse(args, "o|op=", "s|size=", "a|all", "n|iterations=", "d|depth=",
                "t|timeout=")));
    }

    /**
     * Turns packet capture on or off.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("capture the simulated providers' traffic to a pcap file")
    public void capture(CommandSession session,
            @Descriptor("[status] | on [PATH] [--provider NAME] [--snap BYTES] [--mtu BYTES] | off [--provider NAME]")
            String[] args) {
        run(USAGE_CAPTURE, () -> providerCommands.doCapture(Args.parse(args, "p|provider=", "snap=", "mtu=")));
    }

    /**
     * Runs the demo.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("run the demo: negotiate, messages, RDMA Read and RDMA Write transfers, capture")
    public void demo(CommandSession session,
            @Descriptor("[--size SIZE] [--capture PATH | --no-capture] [--timeout SECONDS]") String[] args) {
        run(USAGE_DEMO, () -> {
            int status = runDemo(System.out, args);
            if (status == 1) {
                System.out.println("(the demo's configuration was removed; the shell carries on)");
            }
        });
    }

    /**
     * The demo as the executable jar's {@code demo} argument runs it.
     *
     * @param out where to print
     * @param args the demo's arguments
     * @return the exit status: 0 passed, 1 failed, 2 wrong arguments
     * @throws InterruptedException when interrupted
     */
    int runDemo(PrintStream out, Object[] args) throws InterruptedException {
        long size;
        Path capture;
        Duration timeout;
        try {
            Args a = Args.parse(args, "s|size=", "c|capture=", "no-capture", "t|timeout=");
            a.positional(0, 0);
            size = a.size("size", 64 * Units.MIB);
            if (size < 1 || size > Integer.MAX_VALUE - 8) {
                throw new UsageException("--size must be between 1 byte and 2 GiB");
            }
            capture = a.flag("no-capture") ? null : path(a.value("capture", "smbdirect-demo.pcap"));
            timeout = Duration.ofSeconds(a.integer("timeout", 120, 1, 86400));
        } catch (UsageException e) {
            out.println("error: " + e.getMessage());
            out.println("usage: " + USAGE_DEMO);
            return 2;
        }
        return new Demo(context, out, size, capture, timeout).run();
    }

    // ================================================================== running a command

    /** A command body. */
    interface Body {
        void run() throws Exception;
    }

    /**
     * Runs a command: wrong arguments print the error and the usage, failures one line; nothing
     * is thrown into the shell.
     */
    static void run(String usage, Body body) {
        PrintStream out = System.out;
        try {
            body.run();
        } catch (UsageException e) {
            out.println("error: " + e.getMessage());
            out.println("usage: " + usage);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            out.println("interrupted");
        } catch (Exception e) {
            out.println("error: " + Transfer.describe(e));
        }
        out.flush();
    }

    /** The component's references, for the commands' classes. */
    private final class References implements Shell {
        @Override
        public BundleContext context() {
            return context;
        }

        @Override
        public SmbDirect transport() throws UsageException {
            return required(transport, "no SmbDirect transport service: is bundle org.smbdirect.protocol active?");
        }

        @Override
        public SmbDirect transportOrNull() {
            return transport;
        }

        @Override
        public BulkTransfer bulk() throws UsageException {
            return required(bulk, "no bulk-transfer service: is bundle org.smbdirect.bulk active?");
        }

        @Override
        public BulkTransfer bulkOrNull() {
            return bulk;
        }

        @Override
        public Configs configs() throws UsageException {
            return new Configs(required(configurationAdmin,
                    "no Configuration Admin service: install one (e.g. org.apache.felix.configadmin)"), metatype, context);
        }

        @Override
        public boolean hasConfigurationAdmin() {
            return configurationAdmin != null;
        }

        /** A service the command needs, read once (the field may change under it). */
        private <T> T required(T service, String missing) throws UsageException {
            if (service == null) {
                throw new UsageException(missing);
            }
            return service;
        }
    }

    // ================================================================== helpers

    /** A path for the user: relative to the current directory, absolute and normalised. */
    static Path path(String text) throws UsageException {
        try {
            return Paths.get(text).toAbsolutePath().normalize();
        } catch (InvalidPathException e) {
            throw new UsageException("'" + text + "' is not a valid path: " + e.getReason());
        }
    }

    static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }
}
