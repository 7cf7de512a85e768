package org.smbdirect.rdma.verbs.internal;

/**
 * Loads {@code libdisni.so}, the shared library holding both DiSNI's native half and {@link
 * VerbsNative}. DiSNI's classes load it by the same name ({@code System.loadLibrary("disni")}); in
 * OSGi the framework finds it through the bundle's {@code Bundle-NativeCode} header, elsewhere it
 * must be on {@code java.library.path}. A jar built without gcc or the rdma-core headers carries no
 * library at all, which {@link #load} tells apart from one that is packaged but fails to load.
 */
final class NativeLibrary {
    /** Where the build packages the library, in the bundle and in the plain jar. */
    static final String RESOURCE = "/META-INF/native/linux-x86-64/libdisni.so";
    /** The reason's start when the jar was built without the library. */
    static final String NOT_BUILT = "no native library in this build";
    /** The reason's start when the library is there but does not load. */
    static final String LOAD_FAILED = "native library failed to load: ";

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
            failure = reason(NativeLibrary.class.getResource(RESOURCE) != null, e);
        }
        return failure;
    }

    /**
     * Why the library is unusable.
     *
     * @param packaged whether this jar carries the library (the build had gcc and the headers)
     * @param error what loading it threw
     * @return one line for the log and the shell
     */
    static String reason(boolean packaged, Throwable error) {
        if (!packaged) {
            return NOT_BUILT + " (it was built without gcc or the rdma-core headers; install gcc, make,"
                    + " libibverbs-dev and librdmacm-dev, or rdma-core-devel, and rebuild)";
        }
        // Without libibverbs/librdmacm the library's own dependencies fail to load, and the message says so.
        return LOAD_FAILED + error.getMessage();
    }
}
