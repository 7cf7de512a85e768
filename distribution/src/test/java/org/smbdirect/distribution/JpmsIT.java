package org.smbdirect.distribution;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.spi.ToolProvider;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;


import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bundles as plain JPMS modules, without any OSGi jar: their descriptors require nothing that
 * is not on such a module path (OSGi-only dependencies are {@code requires static}), and a small
 * program with {@code requires} and {@code uses} finds the simulated provider and the transport
 * through {@link java.util.ServiceLoader}, exchanges a message and (when the bulk layer's
 * implementation is in its module) moves bulk data.
 */
class JpmsIT {
    private static final Path WORK = Paths.get(System.getProperty("it.work", "target/it")).resolve("jpms").toAbsolutePath();
    private static final Path SOURCES = Paths.get(System.getProperty("it.jpms.sources", "src/test/jpms")).toAbsolutePath();
    private static Map<String, Path> jars;
    /** The modules the smb module imports from elsewhere: Bouncy Castle and the slf4j API. */
    private static Map<String, Path> imported;
    private static Path classes;

    @BeforeAll
    static void compile() throws Exception {
        jars = new LinkedHashMap<>();
        for (String m : new String[] {"api", "sim", "verbs", "protocol", "bulk", "shell", "smb"}) {
            String p = System.getProperty("it.module." + m);
            assertNotNull(p, "system property it.module." + m);
            jars.put(m, Paths.get(p));
        }
        imported = new LinkedHashMap<>();
        for (String m : new String[] {"bcprov", "slf4j"}) {
            String p = System.getProperty("it.module." + m);
            assertNotNull(p, "system property it.module." + m);
            imported.put(m, Paths.get(p));
        }
        classes = WORK.resolve("classes");
        Files.createDirectories(classes);
        List<String> sources;
        try (Stream<Path> s = Files.walk(SOURCES)) {
            sources = s.filter(p -> p.toString().endsWith(".java")).map(Path::toString).collect(Collectors.toList());
        }
        JavaCompiler javac = javax.tools.ToolProvider.getSystemJavaCompiler();
        List<String> args = new ArrayList<>(List.of("--release", "17", "-d", classes.toString(), "--module-path",
                modulePath(false), "--module-source-path", SOURCES.toString(), "-Xlint:all,-path", "-Werror"));
        args.addAll(sources);
        java.io.ByteArrayOutputStream log = new java.io.ByteArrayOutputStream();
        int status = javac.run(null, log, log, args.toArray(new String[0]));
        assertEquals(0, status, "javac " + args + "\n" + log);
    }

    /**
     * The jars of provider-api, provider-sim, protocol, bulk and smb with what smb imports (and the
     * programs' classes).
     */
    private static String modulePath(boolean withProgram) {
        List<String> p = new ArrayList<>();
        for (String m : new String[] {"api", "sim", "protocol", "bulk", "smb"}) {
            p.add(jars.get(m).toString());
        }
        for (Path i : imported.values()) {
            p.add(i.toString());
        }
        if (withProgram) {
            p.add(classes.resolve("org.smbdirect.example").toString());
            p.add(classes.resolve("org.smbdirect.smbexample").toString());
        }
        return String.join(java.io.File.pathSeparator, p);
    }

    @Test
    void everyBundle_isANamedModule_whoseRequiresResolveWithoutOsgi() {
        ToolProvider jar = ToolProvider.findFirst("jar").orElseThrow();
        Set<String> ours = jars.values().stream().map(p -> ModuleFinder.of(p).findAll().iterator().next()
                .descriptor().name()).collect(Collectors.toSet());
        Set<String> beside = imported.values().stream().map(p -> ModuleFinder.of(p).findAll().iterator().next()
                .descriptor().name()).collect(Collectors.toSet());
        for (Path p : jars.values()) {
            StringWriter out = new StringWriter();
            int status = jar.run(new PrintWriter(out), new PrintWriter(out), "--describe-module", "--file", p.toString());
            assertEquals(0, status, out.toString());
            String description = out.toString();
            System.out.println(description);
            assertFalse(description.contains("No module descriptor found"), p + " is a named module");
            for (String line : description.split("\n")) {
                String l = line.trim();
                if (!l.startsWith("requires ")) {
                    continue;
                }
                String[] words = l.split("\\s+");
                String module = words[1];
                boolean isStatic = List.of(words).contains("static");
                boolean platform = module.startsWith("java.") || module.startsWith("jdk.");
                assertTrue(isStatic || platform || ours.contains(module) || beside.contains(module),
                        p.getFileName() + ": '" + l + "' needs a module outside the module path; make it requires static");
            }
        }
        // and the module system agrees: all of them resolve, with service binding, from these jars alone
        List<Path> all = new ArrayList<>(jars.values());
        all.addAll(imported.values());
        ModuleFinder finder = ModuleFinder.of(all.toArray(new Path[0]));
        Configuration cf = ModuleLayer.boot().configuration().resolveAndBind(finder, ModuleFinder.of(), ours);
        Set<String> resolved = cf.modules().stream().map(m -> m.name()).collect(Collectors.toSet());
        assertTrue(resolved.containsAll(ours), resolved.toString());
        for (ModuleReference r : ModuleFinder.of(jars.values().toArray(new Path[0])).findAll()) {
            ModuleDescriptor d = r.descriptor();
            assertFalse(d.isAutomatic(), d.name() + " has a module descriptor");
        }
    }

    @Test
    void program_onTheModulePath_findsProviderAndTransport_exchangesAMessage_onTheBuildJdk() throws Exception {
        program(JarRun.buildJdk());
    }

    /** smbj over SMB Direct as a module: loads, links, and explains why it cannot connect where no server is. */
    @Test
    void smbjProgram_onTheModulePath_noSeparateSmbjJar() throws Exception {
        JarRun r = JarRun.run(JarRun.buildJdk(), WORK, null, Duration.ofMinutes(3), "--module-path", modulePath(true),
                "-m", "org.smbdirect.smbexample/org.smbdirect.smbexample.Main");
        System.out.println(r);
        assertEquals(0, r.exitStatus, r.toString());
        assertTrue(r.out.contains("smbj transport in module org.smbdirect.smbj"), r.out);
        assertTrue(r.out.contains("smbj: no SMB Direct connection to ") && r.out.contains("Does the server have SMB Direct"),
                r.out);
        assertTrue(r.out.contains("JPMS smbj example OK"), r.out);
    }

    @Test
    void program_onTheModulePath_onTemurin25() throws Exception {
        Path jdk = JarRun.jdk25();
        assumeTrue(JarRun.installed(jdk), "Temurin 25 is not installed at " + jdk + " (set -Dit.jdk25=...)");
        program(jdk);
    }

    private void program(Path jdk) throws Exception {
        JarRun r = JarRun.run(jdk, WORK, null, Duration.ofMinutes(3), "--module-path", modulePath(true),
                "-m", "org.smbdirect.example/org.smbdirect.example.Main");
        System.out.println(r);
        assertEquals(0, r.exitStatus, r.toString());
        assertTrue(r.out.contains("provider factory: org.smbdirect.rdma.sim.internal.SimProviderFactory in module org.smbdirect.rdma.sim"), r.out);
        assertTrue(r.out.contains("transport factory: org.smbdirect.protocol.internal.DefaultSmbDirectFactory in module org.smbdirect.protocol"), r.out);
        assertTrue(r.out.contains("echo: hello over SMB Direct"), r.out);
        boolean bulkImplemented = ModuleFinder.of(jars.get("bulk")).findAll().iterator().next().descriptor()
                .provides().stream().anyMatch(p -> p.service().equals("org.smbdirect.bulk.BulkTransferFactory"));
        if (bulkImplemented) {
            assertTrue(r.out.contains("bulk: 16777216 bytes, CRC-32C sent"), r.out);
            assertTrue(r.out.contains(" match, by RDMA Read transfers 1"), r.out);
        } else {
            System.out.println("the bulk module provides no BulkTransferFactory yet: the bulk part was not run");
        }
        assertTrue(r.out.contains("JPMS example OK"), r.out);
        assertFalse(r.err.contains("WARNING"), r.err);
    }
}
