package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntConsumer;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.jupiter.api.Test;
import org.smbdirect.bulk.BulkConfig;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** The packaged bundle: a named module providing the factory, an OSGi bundle with its component and metatype. */
class BundleMetadataIT {
    private static final Path JAR = Path.of(System.getProperty("it.bundle.bulk"));

    @Test
    void moduleDescriptor_exportsTheApi_providesTheFactory_needsNoOsgi() {
        ModuleDescriptor d = ModuleFinder.of(JAR).findAll().iterator().next().descriptor();
        assertEquals("org.smbdirect.bulk", d.name());
        assertEquals(Set.of("org.smbdirect.bulk"),
                d.exports().stream().map(ModuleDescriptor.Exports::source).collect(Collectors.toSet()));
        assertEquals(1, d.provides().size());
        ModuleDescriptor.Provides p = d.provides().iterator().next();
        assertEquals("org.smbdirect.bulk.BulkTransferFactory", p.service());
        assertEquals(List.of("org.smbdirect.bulk.internal.DefaultBulkTransferFactory"), p.providers());
        Set<String> requires = d.requires().stream().map(ModuleDescriptor.Requires::name).collect(Collectors.toSet());
        assertEquals(Set.of("java.base", "org.smbdirect.protocol"), requires);
    }

    @Test
    void manifest_exportsApi_serviceLoaderCapability_componentWithStaticReference() throws Exception {
        try (JarFile jar = new JarFile(JAR.toFile())) {
            Attributes a = jar.getManifest().getMainAttributes();
            assertEquals("org.smbdirect.bulk", a.getValue("Bundle-SymbolicName"));
            assertEquals("org.smbdirect.bulk;version=\"1.0.0\";uses:=\"org.smbdirect.transport\"",
                    a.getValue("Export-Package"));
            assertEquals("org.smbdirect.bulk.internal", a.getValue("Private-Package"));
            String provide = a.getValue("Provide-Capability");
            assertTrue(provide.contains("osgi.serviceloader;osgi.serviceloader=\"org.smbdirect.bulk.BulkTransferFactory\""),
                    provide);
            assertTrue(provide.contains("objectClass:List<String>=\"org.smbdirect.bulk.BulkTransfer\""), provide);
            String require = a.getValue("Require-Capability");
            assertTrue(require.contains("(objectClass=org.smbdirect.transport.SmbDirect)"), require);
            assertTrue(require.contains("osgi.serviceloader.registrar") && require.contains("resolution:=optional"),
                    "the Service Loader Mediator is optional: " + require);
            String services = read(jar, "META-INF/services/org.smbdirect.bulk.BulkTransferFactory");
            assertEquals(List.of("org.smbdirect.bulk.internal.DefaultBulkTransferFactory"), services.lines()
                    .map(String::strip).filter(x -> !x.isEmpty() && !x.startsWith("#")).collect(Collectors.toList()));

            Element component = xml(jar, a.getValue("Service-Component"));
            assertEquals("org.smbdirect.bulk", component.getAttribute("configuration-pid"));
            assertEquals("optional", component.getAttribute("configuration-policy"));
            Element ref = (Element) component.getElementsByTagName("reference").item(0);
            assertEquals("org.smbdirect.transport.SmbDirect", ref.getAttribute("interface"));
            assertEquals("static", ref.getAttribute("policy"));
            assertEquals("reluctant", ref.getAttribute("policy-option"));
            assertEquals("1..1", ref.getAttribute("cardinality"));
        }
    }

    /** The metatype advertises exactly the ranges and defaults BulkConfig enforces. */
    @Test
    void metatype_rangesAndDefaults_areBulkConfigs() throws Exception {
        try (JarFile jar = new JarFile(JAR.toFile())) {
            Element metadata = xml(jar, "OSGI-INF/metatype/org.smbdirect.bulk.internal.BulkConfiguration.xml");
            Element designate = (Element) metadata.getElementsByTagName("Designate").item(0);
            assertEquals("org.smbdirect.bulk", designate.getAttribute("pid"));
            NodeList ads = metadata.getElementsByTagName("AD");
            Map<String, Object> defaults = new HashMap<>();
            Map<String, IntConsumer> setters = Map.of(
                    BulkConfig.INLINE_THRESHOLD, v -> BulkConfig.builder().inlineThreshold(v),
                    BulkConfig.MAX_IN_FLIGHT, v -> BulkConfig.builder().maxInFlight(v),
                    BulkConfig.MAX_MESSAGE_SIZE, v -> BulkConfig.builder().maxMessageSize(v),
                    BulkConfig.MAX_QUEUED_SENDS, v -> BulkConfig.builder().maxQueuedSends(v));
            for (int i = 0; i < ads.getLength(); i++) {
                Element ad = (Element) ads.item(i);
                String id = ad.getAttribute("id");
                assertEquals("Integer", ad.getAttribute("type"), id);
                IntConsumer set = setters.get(id);
                assertNotNull(set, "unknown attribute " + id);
                long min = Long.parseLong(ad.getAttribute("min"));
                long max = Long.parseLong(ad.getAttribute("max"));
                set.accept((int) min);
                set.accept((int) max);
                assertThrows(IllegalArgumentException.class, () -> set.accept((int) min - 1), id + " below min");
                if (max < Integer.MAX_VALUE) {
                    assertThrows(IllegalArgumentException.class, () -> set.accept((int) max + 1), id + " above max");
                }
                defaults.put(id, Integer.parseInt(ad.getAttribute("default")));
            }
            assertEquals(BulkConfig.defaults().toMap(), defaults);
        }
    }

    private static String read(JarFile jar, String entry) throws Exception {
        try (InputStream in = jar.getInputStream(jar.getEntry(entry))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static Element xml(JarFile jar, String entry) throws Exception {
        assertNotNull(jar.getEntry(entry), entry);
        try (InputStream in = jar.getInputStream(jar.getEntry(entry))) {
            Document d = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in);
            return d.getDocumentElement();
        }
    }
}
