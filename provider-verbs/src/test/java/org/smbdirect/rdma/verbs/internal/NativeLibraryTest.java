package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaStatus;

import com.ibm.disni.verbs.RdmaEventChannel;

/** libdisni.so as built: it loads, it implements every native method, DiSNI accepts it. */
class NativeLibraryTest {
    private static final Path LIBRARY = Paths.get(System.getProperty("java.library.path").split(":")[0],
            "libdisni.so");

    @BeforeEach
    void built() {
        // each test is reported skipped, with this reason; the build skips the library, saying so, where gcc or the rdma-core headers are missing (and fails under CI)
        Assumptions.assumeTrue(Files.isRegularFile(LIBRARY),
                "SKIPPED: libdisni.so was not built on this machine (no gcc or rdma-core headers): " + LIBRARY);
    }

    /** JNI short name of a method (JNI specification, "Resolving Native Method Names"). */
    static String jniName(Method m) {
        return "Java_" + mangle(m.getDeclaringClass().getName()) + "_" + mangle(m.getName());
    }

    private static String mangle(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '.' || c == '/') {
                b.append('_');
            } else if (c == '_') {
                b.append("_1");
            } else if (c == ';') {
                b.append("_2");
            } else if (c == '[') {
                b.append("_3");
            } else if (c < 128 && Character.isLetterOrDigit(c)) {
                b.append(c);
            } else {
                b.append(String.format("_0%04x", (int) c));
            }
        }
        return b.toString();
    }

    private static Set<String> exportedSymbols() throws IOException, InterruptedException {
        Process nm = new ProcessBuilder("nm", "-D", "--defined-only", LIBRARY.toString()).redirectErrorStream(true)
                .start();
        Set<String> symbols = new HashSet<>();
        for (String line : new String(nm.getInputStream().readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
            String[] f = line.trim().split("\\s+");
            symbols.add(f[f.length - 1]);
        }
        assertEquals(0, nm.waitFor(), "nm failed on " + LIBRARY);
        return symbols;
    }

    private static List<Method> nativeMethodsOfDisni() throws Exception {
        List<Method> natives = new ArrayList<>();
        Path jar = Paths.get(RdmaEventChannel.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        try (JarFile j = new JarFile(jar.toFile())) {
            for (JarEntry e : (Iterable<JarEntry>) j.stream()::iterator) {
                if (e.getName().endsWith(".class")) {
                    String name = e.getName().replace('/', '.').replaceAll("\\.class$", "");
                    Class<?> c = Class.forName(name, false, NativeLibraryTest.class.getClassLoader());
                    for (Method m : c.getDeclaredMethods()) {
                        if (Modifier.isNative(m.getModifiers())) {
                            natives.add(m);
                        }
                    }
                }
            }
        }
        return natives;
    }

    @Test
    void everyNativeMethodOfDisniAndVerbsNative_hasItsSymbol() throws Exception {
        Set<String> symbols = exportedSymbols();
        List<Method> natives = nativeMethodsOfDisni();
        assertTrue(natives.size() >= 50, "DiSNI 2.1 declares 50 native methods, found " + natives.size());
        for (Method m : VerbsNative.class.getDeclaredMethods()) {
            if (Modifier.isNative(m.getModifiers())) {
                natives.add(m);
            }
        }
        List<String> missing = new ArrayList<>();
        for (Method m : natives) {
            if (!symbols.contains(jniName(m))) {
                missing.add(m.getDeclaringClass().getSimpleName() + "." + m.getName());
            }
        }
        assertEquals(List.of(), missing, "native methods without an implementation in " + LIBRARY);
    }

    @Test
    void library_exportsNothingButJniFunctions() throws Exception {
        for (String s : exportedSymbols()) {
            if (!s.isEmpty() && !s.startsWith("Java_")) {
                throw new AssertionError("unexpected exported symbol " + s);
            }
        }
    }

    @Test
    void disni_acceptsTheStructureLayouts() throws Exception {
        // Creating DiSNI's provider constructs its NativeDispatcher, which compares version and sizes.
        assertNotNull(com.ibm.disni.verbs.RdmaProvider.provider());
        assertEquals(32, com.ibm.disni.verbs.RdmaProvider.provider().getVersion());
    }

    @Test
    void loading_andWaitingPrimitives_work() throws Exception {
        assertNull(NativeLibrary.load());
        int fd = VerbsNative.eventFd();
        try {
            int[] ready = new int[1];
            assertEquals(0, VerbsNative.poll(new int[] {fd}, 1, 0, ready), "nothing to read yet");
            VerbsNative.signalEventFd(fd);
            assertEquals(1, VerbsNative.poll(new int[] {fd}, 1, 1000, ready));
            assertTrue(ready[0] != 0);
            VerbsNative.drainEventFd(fd);
            assertEquals(0, VerbsNative.poll(new int[] {fd}, 1, 0, ready));
        } finally {
            VerbsNative.closeFd(fd);
        }
        ByteBuffer direct = ByteBuffer.allocateDirect(16);
        assertTrue(VerbsNative.bufferAddress(direct) != 0);
        assertEquals(0, VerbsNative.bufferAddress(ByteBuffer.allocate(16)), "heap buffers have no address");
    }

    @Test
    void failedCalls_throwNativeExceptionNamingTheCallAndErrno() {
        NativeException e = null;
        try {
            VerbsNative.bindAddr(0, new byte[] {1, 2, 3}, 0, 0); // neither IPv4 nor IPv6: rejected before the call
        } catch (NativeException ex) {
            e = ex;
        }
        assertNotNull(e);
        assertEquals(22, e.errno());
        assertEquals(RdmaStatus.INVALID_PARAMETER, e.status());
        assertTrue(e.getMessage().contains("errno 22"), e.getMessage());
    }

    /** Counts and arrays from Java are checked before any native resource is touched or made. */
    @Test
    void badCountsAndArrays_refusedBeforeTheCall() {
        assertNull(NativeLibrary.load());
        ByteBuffer record = ByteBuffer.allocateDirect(VerbsNative.WR_SGE + 4 * VerbsNative.SGE_SIZE)
                .order(java.nio.ByteOrder.nativeOrder());
        long address = VerbsNative.bufferAddress(record);
        // qp 0: the post must not get as far as the queue pair
        record.putInt(VerbsNative.WR_NUM_SGE, -1);
        assertRefused("scatter/gather element count", () -> VerbsNative.postSend(0, address, 1));
        record.putInt(VerbsNative.WR_NUM_SGE, 1 << 20);
        assertRefused("scatter/gather element count", () -> VerbsNative.postSend(0, address, 1));
        assertRefused("request count", () -> VerbsNative.postSend(0, address, 0));
        record.putInt(VerbsNative.RECV_NUM_SGE, -7);
        assertRefused("scatter/gather element count", () -> VerbsNative.postRecv(0, address));
        // a registration whose keys could not be returned would be lost: refused before it is made
        assertRefused("keys array", () -> VerbsNative.regMr(0, address, 16, 0, new int[1]));
        assertRefused("rkey array", () -> VerbsNative.allocMw(0, new int[0]));
        // poll must not read descriptors beyond the array (a pending exception used to be ignored)
        assertRefused("descriptor count", () -> VerbsNative.poll(new int[1], 2, 0, new int[2]));
        assertRefused("descriptor count", () -> VerbsNative.poll(new int[2], 2, 0, new int[1]));
    }

    private interface NativeCall {
        void run() throws NativeException;
    }

    private static void assertRefused(String what, NativeCall call) {
        try {
            call.run();
        } catch (NativeException e) {
            assertEquals(22, e.errno(), e.getMessage());
            assertTrue(e.getMessage().contains(what), e.getMessage());
            assertEquals(0, e.posted(), "nothing was posted");
            return;
        }
        throw new AssertionError("not refused: " + what);
    }

    /** The address records of rdma_get_local_addr / rdma_get_peer_addr, IPv4 and IPv6. */
    @Test
    void socketAddress_decodesIpv4AndIpv6WithScope() throws Exception {
        assertEquals(new java.net.InetSocketAddress(java.net.InetAddress.getByName("10.99.0.1"), 445),
                VerbsNative.socketAddress(new byte[] {10, 99, 0, 1, 0x01, (byte) 0xbd}));
        byte[] v6 = new byte[22];
        v6[0] = (byte) 0xfe;
        v6[1] = (byte) 0x80;
        v6[15] = 1;
        v6[16] = 0x15; // 5445
        v6[17] = 0x45;
        v6[21] = 3; // scope 3
        java.net.InetSocketAddress a = VerbsNative.socketAddress(v6);
        assertEquals(5445, a.getPort());
        assertEquals(3, ((java.net.Inet6Address) a.getAddress()).getScopeId());
        assertTrue(a.getAddress().isLinkLocalAddress());
        assertNull(VerbsNative.socketAddress(new byte[5]), "an unknown form is no address");
    }

    @Test
    void withoutDevice_discoverySaysWhyAndTouchesNothing() throws Exception {
        boolean device;
        try {
            device = VerbsNative.deviceNames().length > 0;
        } catch (NativeException e) {
            assertTrue(e.meansNoDevice(), e.getMessage());
            device = false;
        }
        Discovery.Result r = Discovery.discover(Settings.defaults());
        if (device) {
            assertFalse(r.devices.isEmpty(), r.reason);
        } else {
            assertTrue(r.devices.isEmpty());
            assertTrue(r.reason.contains("RDMA"), r.reason);
        }
        assertTrue(Files.exists(LIBRARY));
    }
}
