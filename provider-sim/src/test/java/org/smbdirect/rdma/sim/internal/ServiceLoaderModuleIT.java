package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * Without OSGi: the API and the simulator as named modules on a module path of their own (no OSGi
 * jar, no class path), the provider found with {@link ServiceLoader} and used through the API.
 */
class ServiceLoaderModuleIT {

    @Test
    void moduleLayer_serviceLoaderFindsTheFactory_providerWorksWithoutOsgi() throws Exception {
        ModuleFinder finder = ModuleFinder.of(Path.of(System.getProperty("it.bundle.api")),
                Path.of(System.getProperty("it.bundle.sim")));
        // as an application would start it: the simulator module resolved with what it requires
        Configuration cf = ModuleLayer.boot().configuration().resolveAndBind(finder, ModuleFinder.of(),
                Set.of("org.smbdirect.rdma.sim"));
        ModuleLayer layer = ModuleLayer.boot().defineModulesWithOneLoader(cf, ClassLoader.getPlatformClassLoader());
        assertTrue(layer.findModule("org.smbdirect.rdma.api").isPresent());
        assertFalse(layer.findModule("osgi.core").isPresent(), "no OSGi module needed");
        ClassLoader api = layer.findLoader("org.smbdirect.rdma.api");
        Class<?> factoryType = api.loadClass("org.smbdirect.rdma.RdmaProviderFactory");
        Class<?> providerType = api.loadClass("org.smbdirect.rdma.RdmaProvider");
        Class<?> handlerType = api.loadClass("org.smbdirect.rdma.CompletionNotificationHandler");
        Object factory = ServiceLoader.load(layer, factoryType).findFirst().orElseThrow();
        assertEquals("org.smbdirect.rdma.sim", factory.getClass().getModule().getName());
        assertEquals("sim", factoryType.getMethod("type").invoke(factory));
        List<?> providers = (List<?>) factoryType.getMethod("create", Map.class).invoke(factory,
                Map.of("fabric", "module-it", "name", "module-sim"));
        assertEquals(1, providers.size());
        Object provider = providers.get(0);
        assertEquals("module-sim", providerType.getMethod("name").invoke(provider));
        Object handler = Proxy.newProxyInstance(api, new Class<?>[] {handlerType}, (p, m, a) -> null);
        Object cq = providerType.getMethod("createCompletionQueue", int.class, handlerType).invoke(provider, 8, handler);
        assertEquals(8, api.loadClass("org.smbdirect.rdma.CompletionQueue").getMethod("depth").invoke(cq));
        providerType.getMethod("close").invoke(provider);
        boolean threadsLeft = Thread.getAllStackTraces().keySet().stream()
                .anyMatch(t -> t.isAlive() && t.getName().startsWith("smbdirect-sim-module-sim-"));
        assertFalse(threadsLeft, "closing the provider stopped its threads");
    }
}
