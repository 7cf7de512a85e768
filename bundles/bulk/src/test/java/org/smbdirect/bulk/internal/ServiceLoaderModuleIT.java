package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.Configuration;
import java.lang.module.ModuleFinder;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Without OSGi: the four modules (provider API, simulator, engine, bulk) on a module path of their
 * own, every factory found with {@link ServiceLoader}, and 4 MiB moved through a bulk session.
 * The types live in the layer's loaders, so the test calls them reflectively.
 */
class ServiceLoaderModuleIT {

    @Test
    void moduleLayer_factoriesFound_sessionMovesData() throws Exception {
        ModuleFinder finder = ModuleFinder.of(path("api"), path("sim"), path("protocol"), path("bulk"));
        Configuration cf = ModuleLayer.boot().configuration().resolveAndBind(finder, ModuleFinder.of(),
                Set.of("org.smbdirect.bulk", "org.smbdirect.rdma.sim"));
        ModuleLayer layer = ModuleLayer.boot().defineModulesWithOneLoader(cf, ClassLoader.getPlatformClassLoader());
        assertFalse(layer.findModule("osgi.core").isPresent(), "no OSGi module needed");
        ClassLoader loader = layer.findLoader("org.smbdirect.bulk");
        Class<?> providerFactoryType = loader.loadClass("org.smbdirect.rdma.RdmaProviderFactory");
        Class<?> transportFactoryType = loader.loadClass("org.smbdirect.transport.SmbDirectFactory");
        Class<?> bulkFactoryType = loader.loadClass("org.smbdirect.bulk.BulkTransferFactory");
        Class<?> smbConfig = loader.loadClass("org.smbdirect.transport.SmbDirectConfig");
        Class<?> bulkConfig = loader.loadClass("org.smbdirect.bulk.BulkConfig");
        Class<?> acceptType = loader.loadClass("org.smbdirect.bulk.BulkAcceptHandler");
        Class<?> handlerType = loader.loadClass("org.smbdirect.bulk.BulkHandler");

        Object bulkFactory = ServiceLoader.load(layer, bulkFactoryType).findFirst().orElseThrow();
        assertEquals("org.smbdirect.bulk", bulkFactory.getClass().getModule().getName());
        Object transportFactory = ServiceLoader.load(layer, transportFactoryType).findFirst().orElseThrow();
        Object providerFactory = ServiceLoader.load(layer, providerFactoryType).findFirst().orElseThrow();

        Object provider = ((List<?>) call(providerFactory, "create", Map.of("fabric", "bulk-module-it"))).get(0);
        Object transport = call(transportFactory, "create", List.of(provider), call(null, smbConfig, "defaults"));
        try {
            Object bulk = call(bulkFactory, "create", transport, call(null, bulkConfig, "defaults"));
            BlockingQueue<ByteBuffer> received = new LinkedBlockingQueue<>();
            Object handler = Proxy.newProxyInstance(loader, new Class<?>[] {handlerType}, (p, m, a) -> {
                if (m.getName().equals("onData")) {
                    received.add((ByteBuffer) a[1]);
                }
                return null;
            });
            Object accept = Proxy.newProxyInstance(loader, new Class<?>[] {acceptType}, (p, m, a) -> handler);
            InetAddress address = (InetAddress) ((List<?>) call(provider, "addresses")).get(0);
            Object listener = call(bulk, "listen", new InetSocketAddress(address, 0), accept);
            InetSocketAddress at = (InetSocketAddress) call(listener, "localAddress");
            Object session = call(bulk, "connect", at, handler, BulkFixture.TIMEOUT);
            ByteBuffer data = BulkFixture.data(4 << 20, 4, true);
            call(session, "sendAndWait", data, BulkFixture.TIMEOUT);
            ByteBuffer got = received.poll(BulkFixture.TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(got);
            assertEquals(BulkFixture.crc(data), BulkFixture.crc(got));
            assertTrue((Boolean) call(session, "peerCanRdmaRead"));
            call(session, "close");
            call(listener, "close");
        } finally {
            call(transport, "close");
            call(provider, "close");
        }
    }

    private static Path path(String bundle) {
        String p = System.getProperty("it.bundle." + bundle);
        assertNotNull(p, "system property it.bundle." + bundle);
        return Path.of(p);
    }

    /** Calls the public method of that name whose parameters accept the arguments, on an exported type. */
    private static Object call(Object target, String name, Object... args) throws Exception {
        return call(target, target.getClass(), name, args);
    }

    private static Object call(Object target, Class<?> type, String name, Object... args) throws Exception {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Class<?> api : c.getInterfaces()) {
                Object r = tryCall(target, api, name, args);
                if (r != NONE) {
                    return r;
                }
            }
            Object r = tryCall(target, c, name, args);
            if (r != NONE) {
                return r;
            }
        }
        throw new NoSuchMethodException(type + "." + name);
    }

    private static final Object NONE = new Object();

    private static Object tryCall(Object target, Class<?> type, String name, Object... args) throws Exception {
        if (!type.getModule().isExported(type.getPackageName())) {
            return NONE;
        }
        for (Method m : type.getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length && accepts(m, args)) {
                return m.invoke(target, args);
            }
        }
        return NONE;
    }

    private static boolean accepts(Method m, Object[] args) {
        Class<?>[] p = m.getParameterTypes();
        for (int i = 0; i < p.length; i++) {
            if (args[i] != null && !box(p[i]).isInstance(args[i])) {
                return false;
            }
        }
        return true;
    }

    private static Class<?> box(Class<?> c) {
        return c == boolean.class ? Boolean.class : c == int.class ? Integer.class : c == long.class ? Long.class : c;
    }
}
