package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** The one line the verbs provider gives when its native library is unusable. */
class NativeLibraryReasonTest {

    @Test
    void notPackaged_saysTheBuildHasNoLibrary_andHowToGetIt() {
        String reason = NativeLibrary.reason(false, new UnsatisfiedLinkError("no disni in java.library.path"));
        assertTrue(reason.startsWith("no native library in this build"), reason);
        assertTrue(reason.contains("libibverbs-dev") && reason.contains("rdma-core-devel"), reason);
    }

    @Test
    void packaged_butNotLoadable_givesTheLoadersReason() {
        String reason = NativeLibrary.reason(true,
                new UnsatisfiedLinkError("/tmp/libdisni.so: libibverbs.so.1: cannot open shared object file"));
        assertEquals("native library failed to load: /tmp/libdisni.so: libibverbs.so.1: cannot open shared object file",
                reason);
    }

    @Test
    void resourceName_isWhereTheBuildPackagesTheLibrary() {
        // build-native.sh writes the same path into the bundle's Bundle-NativeCode
        assertEquals("/META-INF/native/linux-x86-64/libdisni.so", NativeLibrary.RESOURCE);
    }
}
