package org.smbdirect.rdma.verbs.internal;

/**
 * Loads {@code libdisni.so}, the shared library holding both DiSNI's native half and {@link
 * VerbsNative}. DiSNI's classes load it by the same name ({@code System.loadLibrary("disni")}); in
 * OSGi the framework finds it through the bundle's {@code Bundle-NativeCode} header, elsewhere it
 * must be on {@code java.library.path}.
 */
final class NativeLibrary {
    private static boolean loaded;
    private static String failure;

    private NativeLibrary() {
    }

    /**
     * Loads the library once.
     *
     * @return {@code null} when loaded, else why it could not be
     */
    static synchronized String load() {
        if (loaded || failure != null) {
            return failure;
        }
        try {
            System.loadLibrary("disni");
            loaded = true;
        } catch (UnsatisfiedLinkError | SecurityException e) {
            // Without libibverbs/librdmacm the library's own dependencies fail to load, too.
            failure = "native library libdisni.so cannot be loaded (" + e.getMessage() + ")";
        }
        return failure;
    }
}
