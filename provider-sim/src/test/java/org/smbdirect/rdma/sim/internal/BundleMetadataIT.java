package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/** The packaged bundle: a named JPMS module providing the factory, an OSGi bundle exporting nothing. */
class BundleMetadataIT {
    private static final Path JAR = Path.of(System.getProperty("it.bundle.sim"));

    @Test
    void moduleDescriptor_namedModule_providesTheFactory_exportsNothing() {
        ModuleDescriptor d = ModuleFinder.of(JAR).findAll().iterator().next().descriptor();
        assertEquals("org.smbdirect.rdma.sim", d.name());
        assertEquals(1, d.provides().size());
        ModuleDescriptor.Provides p = d.provides().iterator().next();
        assertEquals("org.smbdirect.rdma.RdmaProviderFactory", p.service());
        assertEquals(List.of("org.smbdirect.rdma.sim.internal.SimProviderFactory"), p.providers());
        assertTrue(d.exports().isEmpty(), "exports nothing: " + d.exports());
        List<String> requires = d.requires().stream()
                .map(r -> r.name() + (r.modifiers().contains(ModuleDescriptor.Requires.Modifier.STATIC) ? " static" : ""))
                .sorted().collect(Collectors.toList());
        assertTrue(requires.contains("org.smbdirect.rdma.api"), requires.toString());
        assertTrue(requires.contains("osgi.core static"), "OSGi is needed only inside a framework: " + requires);
    }

    @Test
    void manifest_bundleHeaders_serviceLoaderCapability_componentAndMetatype() throws Exception {
        try (JarFile jar = new JarFile(JAR.toFile())) {
            Attributes a = jar.getManifest().getMainAttributes();
            assertEquals("org.smbdirect.rdma.sim", a.getValue("Bundle-SymbolicName"));
            assertNull(a.getValue("Export-Package"), "nothing exported");
            String provide = a.getValue("Provide-Capability");
            assertTrue(provide.contains("osgi.serviceloader;osgi.serviceloader=\"org.smbdirect.rdma.RdmaProviderFactory\""), provide);
            assertTrue(provide.contains("objectClass:List<String>=\"org.smbdirect.rdma.RdmaProvider\""), provide);
            String require = a.getValue("Require-Capability");
            assertTrue(require.contains("osgi.serviceloader.registrar") && require.contains("resolution:=optional"),
                    "the Service Loader Mediator is optional: " + require);
            assertNotNull(a.getValue("Service-Component"));
            assertNotNull(jar.getEntry("OSGI-INF/metatype/org.smbdirect.rdma.sim.xml"));
            String services = new String(jar.getInputStream(jar.getEntry("META-INF/services/org.smbdirect.rdma.RdmaProviderFactory"))
                    .readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(services.contains("org.smbdirect.rdma.sim.internal.SimProviderFactory"), services);
        }
    }
}
