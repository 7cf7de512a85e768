package org.smbdirect.rdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.opentest4j.TestAbortedException;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;
import org.smbdirect.rdma.verbs.internal.NativeException;
import org.smbdirect.rdma.verbs.internal.VerbsNative;

/**
 * The verbs bundle in a real framework (Felix 7 with SCR) on a machine without an RDMA device: it
 * starts, says in one log line why it registers nothing, registers no provider, and neither
 * starts nor leaves threads.
 */
class FelixNoDeviceIT {

    /** Collects what the provider logs (System.Logger goes to java.util.logging by default). */
    private static final class Capture extends Handler {
        final List<LogRecord> records = new CopyOnWriteArrayList<>();

        @Override
        public void publish(LogRecord record) {
            records.add(record);
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    private static boolean hostHasDevice() {
        try {
            System.loadLibrary("disni");
            return VerbsNative.deviceNames().length > 0;
        } catch (NativeException | UnsatisfiedLinkError e) {
            return false;
        }
    }

    private static Set<String> threads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                .map(t -> t.getName() + "#" + t.getId()).collect(Collectors.toSet());
    }

    @Test
    void withoutDevice_bundleStartsLogsOneLineRegistersNoProviderAndLeavesNoThread() throws Exception {
        if (hostHasDevice()) {
            throw new TestAbortedException("SKIPPED: this host has an RDMA device; the no-device behaviour "
                    + "cannot be observed here (the device suite covers the provider)");
        }
        Path storage = Paths.get(System.getProperty("java.io.tmpdir"), "smbdirect-felix-" + ProcessHandle.current().pid());
        Map<String, String> config = new HashMap<>();
        config.put(Constants.FRAMEWORK_STORAGE, storage.toString());
        config.put(Constants.FRAMEWORK_STORAGE_CLEAN, Constants.FRAMEWORK_STORAGE_CLEAN_ONFIRSTINIT);
        FrameworkFactory factory = ServiceLoader.load(FrameworkFactory.class).iterator().next();
        Framework framework = factory.newFramework(config);
        framework.start();
        Logger logger = Logger.getLogger("org.smbdirect.rdma.verbs");
        Capture capture = new Capture();
        logger.addHandler(capture);
        try {
            BundleContext context = framework.getBundleContext();
            List<Bundle> base = new ArrayList<>();
            try (DirectoryStream<Path> jars = Files.newDirectoryStream(
                    Paths.get(System.getProperty("framework.bundles")), "*.jar")) {
                for (Path jar : jars) {
                    base.add(context.installBundle(jar.toUri().toString()));
                }
            }
            for (Bundle b : base) {
                b.start();
            }
            Thread.sleep(500); // let SCR start its own threads before the baseline is taken
            Set<String> before = threads();

            Bundle verbs = context.installBundle(Paths.get(System.getProperty("verbs.bundle")).toUri().toString());
            verbs.start();
            long deadline = System.currentTimeMillis() + 20_000;
            while (capture.records.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(20);
            }
            Thread.sleep(300); // anything logged later would be a second line
            assertEquals(Bundle.ACTIVE, verbs.getState());
            assertEquals(1, capture.records.size(), () -> "exactly one log line, got " + messages(capture));
            LogRecord line = capture.records.get(0);
            assertTrue(line.getMessage().contains("no RDMA provider registered"), line.getMessage());
            assertTrue(line.getLevel().intValue() >= Level.INFO.intValue());
            System.out.println("the verbs bundle logged: " + line.getMessage());
            assertNull(context.getServiceReferences("org.smbdirect.rdma.RdmaProvider", null),
                    "no RdmaProvider service without a device");
            Set<String> started = threads();
            started.removeAll(before);
            assertEquals(Set.of(), started, "the bundle started no thread");

            verbs.stop();
            verbs.uninstall();
            Set<String> after = threads();
            after.removeAll(before);
            assertEquals(Set.of(), after, "no thread is left behind after stopping the bundle");
        } finally {
            logger.removeHandler(capture);
            framework.stop();
            framework.waitForStop(10_000);
        }
    }

    private static String messages(Capture c) {
        return c.records.stream().map(r -> r.getLevel() + " " + r.getMessage()).collect(Collectors.toList()).toString();
    }
}
