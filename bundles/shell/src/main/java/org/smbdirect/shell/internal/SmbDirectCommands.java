package org.smbdirect.shell.internal;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.apache.felix.service.command.CommandSession;
import org.apache.felix.service.command.Descriptor;
import org.osgi.framework.BundleContext;
import org.osgi.framework.ServiceReference;
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
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkStatistics;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.shell.internal.Endpoints.ConnectionEntry;
import org.smbdirect.shell.internal.Endpoints.Entry;
import org.smbdirect.shell.internal.Endpoints.ListenerEntry;
import org.smbdirect.transport.ConnectionParameters;
import org.smbdirect.transport.ConnectionStatistics;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TransportStatistics;

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
            doProviders();
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
        run(USAGE_PROVIDER, () -> doProvider(Args.parse(args, "type=", "any")));
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
        run(USAGE_SIM, () -> doSim(Args.parse(args)));
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
            doConnections();
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
        run(USAGE_LISTEN, () -> doListen(session, Args.parse(args, "b|bulk")));
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
        run(USAGE_CONNECT, () -> doConnect(session, Args.parse(args, "b|bulk", "t|timeout=")));
    }

    /**
     * Sends a message.
     *
     * @param session the shell session
     * @param args see the usage
     */
    @Descriptor("send a message on a connection")
    public void send(CommandSession session, @Descriptor("ID (TEXT... | --size SIZE)") String[] args) {
        run(USAGE_SEND, () -> doSend(Args.parse(args, "s|size=")));
    }

    /**
     * Closes connections or listeners.
     *
     * @param session the shell session
     * @param args the ids
     */
    @Descriptor("close connections or listeners by ID")
    public void close(CommandSession session, @Descriptor("ID...") String[] args) {
        run(USAGE_CLOSE, () -> doClose(Args.parse(args)));
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
        run(USAGE_TRANSFER, () -> doTransfer(session, Args.parse(args, "s|size=", "f|file=", "c|chunk=", "t|timeout=")));
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
        run(USAGE_BENCH, () -> doBench(Args.parse(args, "o|op=", "s|size=", "a|all", "n|iterations=", "d|depth=",
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
        run(USAGE_CAPTURE, () -> doCapture(Args.parse(args, "p|provider=", "snap=", "mtu=")));
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

    private SmbDirect transport() throws UsageException {
        SmbDirect t = transport;
        if (t == null) {
            throw new UsageException("no SmbDirect transport service: is bundle org.smbdirect.protocol active?");
        }
        return t;
    }

    private BulkTransfer bulk() throws UsageException {
        BulkTransfer b = bulk;
        if (b == null) {
            throw new UsageException("no bulk-transfer service: is bundle org.smbdirect.bulk active?");
        }
        return b;
    }

    private Configs configs() throws UsageException {
        ConfigurationAdmin ca = configurationAdmin;
        if (ca == null) {
            throw new UsageException("no Configuration Admin service: install one (e.g. org.apache.felix.configadmin)");
        }
        return new Configs(ca, metatype, context);
    }

    // ================================================================== providers, provider, sim

    private void doProviders() throws Exception {
        PrintStream out = System.out;
        List<ServiceReference<RdmaProvider>> refs = Services.providers(context);
        SmbDirect t = transport;
        String used = t == null ? null : t.provider();
        if (refs.isEmpty()) {
            out.println("no RDMA providers");
        } else {
            String f = "%1s %-12s %-6s %-15s %-5s %-5s %6s %6s %10s %7s %7s  %s%n";
            out.printf(Locale.ROOT, f, "", "name", "type", "address", "read", "inval", "inline", "maxSge", "maxRegion",
                    "IRD/ORD", "ranking", "capture");
            for (ServiceReference<RdmaProvider> r : refs) {
                RdmaProvider p = context.getService(r);
                if (p == null) {
                    continue;
                }
                try {
                    ProviderCapabilities c = p.capabilities();
                    String address = p.addresses().isEmpty() ? "-" : p.addresses().get(0).getHostAddress();
                    Object ranking = r.getProperty("service.ranking");
                    out.printf(Locale.ROOT, f, (p.type() + "/" + p.name()).equals(used) ? "*" : "", p.name(), p.type(),
                            address, yesNo(c.rdmaRead()), yesNo(c.remoteInvalidate()), c.inlineLimit(), c.maxSge(),
                            Units.bytes(c.maxRegionSize()), c.maxIrd() + "/" + c.maxOrd(), ranking == null ? 0 : ranking,
                            captureOf(p));
                } finally {
                    context.ungetService(r);
                }
            }
        }
        // providers that offer nothing say why (the verbs provider without a device or native library)
        ServiceReference<?>[] unavailable = context.getServiceReferences((String) null, "(provider.unavailable=*)");
        if (unavailable != null) {
            for (ServiceReference<?> r : unavailable) {
                out.println(r.getProperty("provider.type") + ": no provider: " + r.getProperty("provider.unavailable"));
            }
        }
        if (t == null) {
            out.println("no SmbDirect transport service");
        } else {
            String target = configurationAdmin == null ? "?" : configs().providerTarget();
            out.println("provider.target " + target + "; new connections and listeners use "
                    + (used == null ? "none (no matching provider)" : used));
        }
    }

    /** The capture file of a simulated provider, from its configuration, or "off". */
    private String captureOf(RdmaProvider p) {
        if (!"sim".equals(p.type()) || configurationAdmin == null) {
            return "-";
        }
        try {
            Configs c = configs();
            Configuration conf = c.simConfiguration(p.name());
            if (conf == null && c.simFactoryConfigurations().isEmpty()) {
                conf = c.simSingleton();
            }
            if (conf == null || !Boolean.parseBoolean(String.valueOf(Configs.get(conf, "capture.enabled")))) {
                return "off";
            }
            Object path = Configs.get(conf, "capture.path");
            return path == null ? "smbdirect-sim.pcap" : path.toString();
        } catch (IOException | UsageException e) {
            return "?";
        }
    }

    private void doProvider(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 1);
        int choices = pos.size() + (a.value("type") != null ? 1 : 0) + (a.flag("any") ? 1 : 0);
        if (choices > 1) {
            throw new UsageException("give one of NAME, --type or --any");
        }
        SmbDirect t = transport();
        Configs c = configs();
        if (choices == 0) {
            out.println("provider.target " + c.providerTarget() + "; new connections and listeners use "
                    + (t.provider() == null ? "none (no matching provider)" : t.provider()));
            return;
        }
        String filter;
        String expect = null;
        List<ServiceReference<RdmaProvider>> refs = Services.providers(context);
        if (a.flag("any")) {
            filter = Configs.ANY_PROVIDER;
        } else if (a.value("type") != null) {
            String type = a.value("type");
            checkFilterValue(type);
            if (refs.stream().noneMatch(r -> type.equals(Services.string(r, RdmaProvider.PROP_TYPE)))) {
                throw new UsageException("no RDMA provider of type " + type + "; types: " + types(refs));
            }
            filter = "(provider.type=" + type + ")";
        } else {
            String name = pos.get(0);
            checkFilterValue(name);
            ServiceReference<RdmaProvider> match = null;
            for (ServiceReference<RdmaProvider> r : refs) {
                if (name.equals(Services.string(r, RdmaProvider.PROP_NAME))) {
                    match = r;
                }
            }
            if (match == null) {
                throw new UsageException("no RDMA provider named " + name + "; providers: " + names(refs));
            }
            filter = "(provider.name=" + name + ")";
            expect = Services.string(match, RdmaProvider.PROP_TYPE) + "/" + name;
        }
        c.setProviderTarget(filter);
        long deadline = System.nanoTime() + DEFAULT_TIMEOUT.toNanos();
        while (expect != null && !expect.equals(t.provider())) {
            if (System.nanoTime() - deadline > 0) {
                throw new SmbDirectException("the transport did not move to " + expect + " within "
                        + DEFAULT_TIMEOUT.toSeconds() + " s (it uses " + t.provider() + ")");
            }
            Thread.sleep(10);
        }
        if (expect == null) {
            Thread.sleep(100); // the change reaches the component asynchronously
        }
        out.println("provider.target set to " + filter + "; new connections and listeners use " + t.provider()
                + " (established connections stay where they are)");
    }

    private static void checkFilterValue(String v) throws UsageException {
        if (v.isEmpty() || v.matches(".*[()*\\\\=\\s].*")) {
            throw new UsageException("'" + v + "' is not a provider name or type");
        }
    }

    private static String names(List<ServiceReference<RdmaProvider>> refs) {
        List<String> n = new ArrayList<>();
        for (ServiceReference<RdmaProvider> r : refs) {
            n.add(Services.string(r, RdmaProvider.PROP_NAME));
        }
        return n.isEmpty() ? "(none)" : String.join(", ", n);
    }

    private static String types(List<ServiceReference<RdmaProvider>> refs) {
        List<String> n = new ArrayList<>();
        for (ServiceReference<RdmaProvider> r : refs) {
            String type = Services.string(r, RdmaProvider.PROP_TYPE);
            if (!n.contains(type)) {
                n.add(type);
            }
        }
        return n.isEmpty() ? "(none)" : String.join(", ", n);
    }

    private void doSim(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional();
        Configs c = configs();
        String verb = pos.isEmpty() ? "list" : pos.get(0);
        switch (verb) {
            case "list": {
                a.positional(0, 1);
                List<Configuration> factory = c.simFactoryConfigurations();
                if (factory.isEmpty()) {
                    out.println("no simulated providers configured: the default provider runs with "
                            + (c.simSingleton().getProperties() == null ? "the defaults" : "configuration " + Configs.SIM_PID));
                }
                for (Configuration conf : factory) {
                    Map<String, Object> shown = new LinkedHashMap<>();
                    for (java.util.Enumeration<String> k = conf.getProperties().keys(); k.hasMoreElements();) {
                        String key = k.nextElement();
                        if (!key.startsWith("service.") && !key.equals("name")) {
                            shown.put(key, conf.getProperties().get(key));
                        }
                    }
                    out.println(Configs.get(conf, "name") + " " + shown);
                }
                return;
            }
            case "add": {
                if (pos.size() < 2) {
                    throw new UsageException("sim add needs the provider's NAME");
                }
                String name = pos.get(1);
                checkName(name);
                if (c.simConfiguration(name) != null) {
                    throw new UsageException("a simulated provider named " + name + " is already configured");
                }
                Map<String, Object> settings = c.simSettings(pos.subList(2, pos.size()));
                boolean first = c.simFactoryConfigurations().isEmpty();
                java.util.Dictionary<String, Object> dropped = c.createSim(name, settings);
                if (!awaitProvider(name)) {
                    Configuration conf = c.simConfiguration(name);
                    if (conf != null) {
                        conf.delete();
                    }
                    throw new SmbDirectException("provider " + name + " did not start within "
                            + DEFAULT_TIMEOUT.toSeconds() + " s (its settings were refused: see the log); configuration removed");
                }
                out.println("simulated provider " + name + " added" + (settings.isEmpty() ? "" : " with " + settings)
                        + (first ? "; the unconfigured default provider gave way to it" : ""));
                if (dropped != null && Boolean.parseBoolean(String.valueOf(dropped.get("capture.enabled")))) {
                    out.println("  (its capture to " + dropped.get("capture.path") + " ended with it)");
                }
                return;
            }
            case "set": {
                if (pos.size() < 3) {
                    throw new UsageException("sim set needs NAME and at least one KEY=VALUE");
                }
                String name = pos.get(1);
                Configuration conf = c.simConfiguration(name);
                if (conf == null) {
                    throw new UsageException("no simulated provider named " + name + " is configured (see sim list)");
                }
                Map<String, Object> settings = c.simSettings(pos.subList(2, pos.size()));
                Configs.update(conf, settings);
                if (!awaitProvider(name)) {
                    throw new SmbDirectException("provider " + name + " is not running after the change (see the log)");
                }
                out.println("simulated provider " + name + " updated with " + settings);
                return;
            }
            case "remove": {
                a.positional(2, 2);
                String name = pos.get(1);
                Configuration conf = c.simConfiguration(name);
                if (conf == null) {
                    throw new UsageException("no simulated provider named " + name + " is configured (see sim list)");
                }
                conf.delete();
                Services.awaitGone(context, RdmaProvider.class, "(provider.name=" + name + ")", DEFAULT_TIMEOUT);
                out.println("simulated provider " + name + " removed");
                return;
            }
            default:
                throw new UsageException("unknown sub-command '" + verb + "'");
        }
    }

    private static void checkName(String name) throws UsageException {
        if (!name.matches("[A-Za-z0-9._-]{1,64}")) {
            throw new UsageException("'" + name + "' is not a provider name (letters, digits, . _ -; at most 64)");
        }
    }

    private boolean awaitProvider(String name) throws InterruptedException {
        var t = Services.await(context, RdmaProvider.class, "(provider.name=" + name + ")", DEFAULT_TIMEOUT);
        if (t == null) {
            return false;
        }
        t.close();
        return true;
    }

    // ================================================================== connections

    private void doConnections() throws Exception {
        PrintStream out = System.out;
        SmbDirect t = transport();
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
                    + s.keepalivesSent() + "/" + s.keepalivesReceived());
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

    private void doListen(CommandSession session, Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 1);
        SmbDirect t = transport();
        InetSocketAddress local = address(pos.isEmpty() ? null : pos.get(0), true);
        PrintStream notices = session == null ? null : session.getConsole();
        ListenerEntry l;
        if (a.flag("bulk")) {
            BulkTransfer b = bulk();
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

    private void doConnect(CommandSession session, Args a) throws Exception {
        PrintStream out = System.out;
        String target = a.positional(1, 1).get(0);
        InetSocketAddress remote = address(target, false);
        Duration timeout = Duration.ofSeconds(a.integer("timeout", (int) DEFAULT_TIMEOUT.toSeconds(), 1, 3600));
        PrintStream notices = session == null ? null : session.getConsole();
        ConnectionEntry e = endpoints.newConnection("connected", notices);
        SmbDirectConnection c;
        if (a.flag("bulk")) {
            BulkSession s = bulk().connect(remote, e, timeout);
            c = s.connection();
            e.attach(c, s);
        } else {
            c = transport().connect(remote, e, timeout);
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

    private void doSend(Args a) throws Exception {
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

    private void doClose(Args a) throws Exception {
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

    private void doTransfer(CommandSession session, Args a) throws Exception {
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
            BulkTransfer b = bulk();
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

    private void doBench(Args a) throws Exception {
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
        SmbDirect t = transport();
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
        new Bench(t, bulk, address, System.out, stall).run(op, sizes, iterations, depth);
    }

    // ================================================================== capture

    private void doCapture(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 2);
        String verb = pos.isEmpty() ? "status" : pos.get(0);
        Configs c = configs();
        String provider = a.value("provider");
        switch (verb) {
            case "status": {
                a.positional(0, 1);
                for (Configuration conf : c.simTargets(provider)) {
                    Object name = Configs.get(conf, "name");
                    boolean on = Boolean.parseBoolean(String.valueOf(Configs.get(conf, "capture.enabled")));
                    Object path = Configs.get(conf, "capture.path");
                    out.println("capture " + (on ? "on" : "off") + " for " + (name == null ? "the default provider" : name)
                            + (on ? ": " + (path == null ? "smbdirect-sim.pcap" : path) : ""));
                }
                return;
            }
            case "on": {
                Path path = path(pos.size() > 1 ? pos.get(1) : "smbdirect-sim.pcap");
                Map<String, Object> change = new LinkedHashMap<>();
                change.put("capture.enabled", true);
                change.put("capture.path", path.toString());
                if (a.value("snap") != null) {
                    change.put("capture.snapLength", a.integer("snap", 65535, 64, 262144));
                }
                if (a.value("mtu") != null) {
                    int mtu = a.integer("mtu", 4096, 256, 4096);
                    if (Integer.bitCount(mtu) != 1) {
                        throw new UsageException("--mtu must be 256, 512, 1024, 2048 or 4096");
                    }
                    change.put("capture.mtu", mtu);
                }
                List<Configuration> targets = c.simTargets(provider);
                if (targets.size() > 1) {
                    throw new UsageException(targets.size() + " simulated providers are configured: name one with "
                            + "--provider (each needs its own file)");
                }
                boolean already = true;
                for (Configuration conf : targets) {
                    already &= Boolean.parseBoolean(String.valueOf(Configs.get(conf, "capture.enabled")))
                            && path.toString().equals(String.valueOf(Configs.get(conf, "capture.path")))
                            && change.size() == 2;
                }
                if (already) {
                    out.println("capture already on: " + path);
                    return;
                }
                Path parent = path.getParent();
                if (parent != null && !Files.isDirectory(parent)) {
                    throw new UsageException("directory not found: " + parent);
                }
                Files.deleteIfExists(path);
                for (Configuration conf : targets) {
                    Configs.update(conf, change);
                }
                long deadline = System.nanoTime() + DEFAULT_TIMEOUT.toNanos();
                while (!Files.exists(path)) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new SmbDirectException("the capture file " + path + " did not appear within "
                                + DEFAULT_TIMEOUT.toSeconds() + " s (see the log)");
                    }
                    Thread.sleep(10);
                }
                out.println("capture on: " + path);
                out.println("  decode: tshark -r " + path + " -Y smb_direct -O smb_direct");
                return;
            }
            case "off": {
                a.positional(1, 1);
                Map<String, Object> change = new LinkedHashMap<>();
                change.put("capture.enabled", false);
                List<String> paths = new ArrayList<>();
                for (Configuration conf : c.simTargets(provider)) {
                    Object path = Configs.get(conf, "capture.path");
                    if (Boolean.parseBoolean(String.valueOf(Configs.get(conf, "capture.enabled"))) && path != null) {
                        paths.add(path.toString());
                    }
                    Configs.update(conf, change);
                }
                out.println("capture off" + (paths.isEmpty() ? "" : "; written: " + String.join(", ", paths)));
                for (String p : paths) {
                    out.println("  decode: tshark -r " + p + " -Y smb_direct -O smb_direct");
                }
                return;
            }
            default:
                throw new UsageException("unknown sub-command '" + verb + "' (on, off or status)");
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

    /**
     * The socket address an argument names ({@link PeerAddress}): an absent host is the current
     * provider's own address (a loopback connection, or where to listen), an absent port the one
     * SMB Direct uses on the provider's transport type (445 on InfiniBand and RoCE, 5445 on iWARP).
     */
    private InetSocketAddress address(String text, boolean listening) throws UsageException {
        PeerAddress a = PeerAddress.parse(text, listening ? 0 : 1);
        SmbDirect t = transport();
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
        for (ServiceReference<RdmaProvider> r : Services.providers(context)) {
            RdmaProvider p = context.getService(r);
            if (p == null) {
                continue;
            }
            try {
                if ((p.type() + "/" + p.name()).equals(used) && !p.addresses().isEmpty()) {
                    return p.addresses().get(0);
                }
            } finally {
                context.ungetService(r);
            }
        }
        throw new UsageException("the provider " + used + " has no address");
    }

    private static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }
}
