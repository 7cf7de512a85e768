package org.smbdirect.rdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;

/**
 * The bundle jar without OSGi: {@link ServiceLoader} finds its factory on the class path and as the
 * named module {@code org.smbdirect.rdma.verbs}.
 */
class PlainJavaIT {
    private final Path jar = Paths.get(System.getProperty("verbs.bundle"));

    private static Set<String> verbsThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(n -> n.startsWith("smbdirect-verbs")).collect(Collectors.toSet());
    }

    private static void checkFactory(RdmaProviderFactory factory) throws Exception {
        assertEquals("verbs", factory.type());
        List<RdmaProvider> providers = factory.create(Map.of());
        try {
            // On a host without RDMA there are none, and nothing was started; with a device, one each.
            if (providers.isEmpty()) {
                assertEquals(Set.of(), verbsThreads());
            }
            for (RdmaProvider p : providers) {
                assertEquals("verbs", p.type());
            }
        } finally {
            providers.forEach(RdmaProvider::close);
        }
        assertEquals(Set.of(), verbsThreads(), "closed providers leave no thread");
    }

    @Test
    void serviceLoader_onTheClassPath_findsTheFactoryInTheBundleJar() throws Exception {
        // failsafe puts the packaged jar (not target/classes) on the class path
        List<RdmaProviderFactory> found = new ArrayList<>();
        for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
            if (f.type().equals("verbs")) {
                found.add(f);
            }
        }
        assertEquals(1, found.size(), "the jar's META-INF/services names its factory");
        Path from = Paths.get(found.get(0).getClass().getProtectionDomain().getCodeSource().getLocation().toURI());
        assertEquals(jar.toAbsolutePath().normalize(), from.toAbsolutePath().normalize());
        checkFactory(found.get(0));
    }

    @Test
    void serviceLoader_onTheModulePath_findsTheFactoryOfTheNamedModule() throws Exception {
        Path api = Paths.get(RdmaProviderFactory.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleFinder finder = ModuleFinder.of(jar, api);
        ModuleReference verbs = finder.find("org.smbdirect.rdma.verbs").orElseThrow(
                () -> new AssertionError("the jar is not the module org.smbdirect.rdma.verbs"));
        assertTrue(verbs.descriptor().provides().stream()
                .anyMatch(p -> p.service().equals(RdmaProviderFactory.class.getName())));
        if (!api.toString().endsWith(".jar")) {
            return; // the API from a class directory has no module descriptor to resolve against
        }
        ModuleLayer parent = ModuleLayer.boot();
        Configuration cf = parent.configuration().resolveAndBind(finder, ModuleFinder.of(),
                Set.of("org.smbdirect.rdma.verbs"));
        ModuleLayer layer = parent.defineModulesWithOneLoader(cf, ClassLoader.getPlatformClassLoader());
        List<String> types = new ArrayList<>();
        for (Object f : ServiceLoader.load(layer, layer.findLoader("org.smbdirect.rdma.api")
                .loadClass(RdmaProviderFactory.class.getName()))) {
            types.add((String) f.getClass().getMethod("type").invoke(f));
        }
        assertEquals(List.of("verbs"), types);
    }
}
