package org.smbdirect.shell.internal;

import static org.smbdirect.shell.internal.SmbDirectCommands.DEFAULT_TIMEOUT;
import static org.smbdirect.shell.internal.SmbDirectCommands.path;
import static org.smbdirect.shell.internal.SmbDirectCommands.yesNo;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.osgi.framework.ServiceReference;
import org.osgi.service.cm.Configuration;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectException;

/**
 * The commands about RDMA providers: {@code providers}, {@code provider}, {@code sim} and
 * {@code capture} (the simulated providers' configurations through Config Admin).
 */
final class ProviderCommands {
    private final Shell shell;

    ProviderCommands(Shell shell) {
        this.shell = shell;
    }

    void doProviders() throws Exception {
        PrintStream out = System.out;
        List<ServiceReference<RdmaProvider>> refs = Services.providers(shell.context());
        SmbDirect t = shell.transportOrNull();
        String used = t == null ? null : t.provider();
        if (refs.isEmpty()) {
            out.println("no RDMA providers");
        } else {
            String f = "%1s %-12s %-6s %-15s %-5s %-5s %6s %6s %10s %7s %7s  %s%n";
            out.printf(Locale.ROOT, f, "", "name", "type", "address", "read", "inval", "inline", "maxSge", "maxRegion",
                    "IRD/ORD", "ranking", "capture");
            for (ServiceReference<RdmaProvider> r : refs) {
                RdmaProvider p = shell.context().getService(r);
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
                    shell.context().ungetService(r);
                }
            }
        }
        // providers that offer nothing say why (the verbs provider without a device or native library)
        ServiceReference<?>[] unavailable = shell.context().getServiceReferences((String) null, "(provider.unavailable=*)");
        if (unavailable != null) {
            for (ServiceReference<?> r : unavailable) {
                out.println(r.getProperty("provider.type") + ": no provider: " + r.getProperty("provider.unavailable"));
            }
        }
        if (t == null) {
            out.println("no SmbDirect transport service");
        } else {
            String target = !shell.hasConfigurationAdmin() ? "?" : shell.configs().providerTarget();
            out.println("provider.target " + target + "; new connections and listeners use "
                    + (used == null ? "none (no matching provider)" : used));
        }
    }

    /** The capture file of a simulated provider, from its configuration, or "off". */
    private String captureOf(RdmaProvider p) {
        if (!"sim".equals(p.type()) || !shell.hasConfigurationAdmin()) {
            return "-";
        }
        try {
            Configs c = shell.configs();
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

    void doProvider(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 1);
        int choices = pos.size() + (a.value("type") != null ? 1 : 0) + (a.flag("any") ? 1 : 0);
        if (choices > 1) {
            throw new UsageException("give one of NAME, --type or --any");
        }
        SmbDirect t = shell.transport();
        Configs c = shell.configs();
        if (choices == 0) {
            out.println("provider.target " + c.providerTarget() + "; new connections and listeners use "
                    + (t.provider() == null ? "none (no matching provider)" : t.provider()));
            return;
        }
        String filter;
        String expect = null;
        List<ServiceReference<RdmaProvider>> refs = Services.providers(shell.context());
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

    void doSim(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional();
        Configs c = shell.configs();
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
                Services.awaitGone(shell.context(), RdmaProvider.class, "(provider.name=" + name + ")", DEFAULT_TIMEOUT);
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
        var t = Services.await(shell.context(), RdmaProvider.class, "(provider.name=" + name + ")", DEFAULT_TIMEOUT);
        if (t == null) {
            return false;
        }
        t.close();
        return true;
    }

    void doCapture(Args a) throws Exception {
        PrintStream out = System.out;
        List<String> pos = a.positional(0, 2);
        String verb = pos.isEmpty() ? "status" : pos.get(0);
        Configs c = shell.configs();
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

}
