package org.smbdirect.smbj.internal;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The array a READ's data is handed to smbj in (smbj takes a READ's data as a {@code byte[]}). The
 * thread that sent the request allocates it while the server works, so that the allocation (on an
 * emulated or small machine, zeroing megabytes) is off the path from the server's response to
 * smbj; a response that arrives first allocates its own.
 */
final class ReadDestination {
    /** Marks a destination whose response has taken (or passed over) the prepared array. */
    private static final byte[] TAKEN = new byte[0];

    private final int length;
    private final AtomicReference<byte[]> prepared = new AtomicReference<>();

    /**
     * @param length the bytes the READ asks for
     */
    ReadDestination(int length) {
        this.length = length;
    }

    /**
     * After the request went out, on the sending thread: allocates the array unless the response
     * came first.
     *
     * @return the array prepared, or {@code null} when the response had come first (or it was prepared before)
     */
    byte[] prepare() {
        if (prepared.get() != null) {
            return null;
        }
        byte[] a = new byte[length];
        return prepared.compareAndSet(null, a) ? a : null;
    }

    /**
     * The response arrived: an array of exactly {@code moved} bytes, the prepared one when there is
     * one of that length (the server moved all that was asked for).
     *
     * @param moved the bytes the server moved
     * @return the array
     */
    byte[] take(int moved) {
        byte[] a = prepared.getAndSet(TAKEN);
        return a != null && a != TAKEN && a.length == moved ? a : new byte[moved];
    }
}
