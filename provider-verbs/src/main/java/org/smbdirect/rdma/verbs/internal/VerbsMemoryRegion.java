package org.smbdirect.rdma.verbs.internal;

import java.nio.ByteBuffer;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.MemoryRegion;

/**
 * Registered memory: a verbs memory region in its endpoint's protection domain and, for remote
 * access on devices with memory windows, a type 2 memory window bound to it on the endpoint's
 * queue pair. The window's rkey is the token, so that a local invalidate or a peer's send with
 * invalidate revokes remote access without deregistering. On devices without memory windows the
 * region's own rkey is the token and tokens cannot be invalidated.
 */
final class VerbsMemoryRegion implements MemoryRegion {
    static final int VALID = 0;
    static final int INVALIDATED = 1;
    static final int DEREGISTERED = 2;

    final VerbsEndpoint endpoint;
    private final ByteBuffer view;
    final long address;
    final int length;
    final int access;
    final long mr;
    final int lkey;
    /** The memory window, 0 when remote access goes through the region's own rkey or there is none. */
    final long mw;
    final int token;
    private volatile int state = VALID;
    private volatile boolean windowReleased;
    /** A bind of the window is posted and has not completed. Guarded by this. */
    private boolean bindInFlight;
    /** The bind in flight reports no completion of its own (it was posted unsignaled). Guarded by this. */
    private boolean bindUnsignaled;
    /** The send-queue sequence number of the last bind posted. Guarded by this. */
    private long bindSeq;
    /** The window was released while its bind was in flight: free it when the bind completes. */
    private boolean releaseWhenBound;

    VerbsMemoryRegion(VerbsEndpoint endpoint, ByteBuffer registered, long address, int access, long mr, int lkey,
            long mw, int token) {
        this.endpoint = endpoint;
        this.view = registered;
        this.address = address;
        this.length = registered.capacity();
        this.access = access;
        this.mr = mr;
        this.lkey = lkey;
        this.mw = mw;
        this.token = token;
    }

    @Override
    public int token() {
        return token;
    }

    @Override
    public long remoteOffset() {
        return address;
    }

    @Override
    public int length() {
        return length;
    }

    @Override
    public int access() {
        return access;
    }

    /** The registered bytes themselves (a view that keeps their memory alive). */
    ByteBuffer registeredView() {
        return view;
    }

    @Override
    public ByteBuffer buffer() {
        return view.duplicate().clear();
    }

    @Override
    public Endpoint endpoint() {
        return endpoint;
    }

    @Override
    public boolean isValid() {
        return state == VALID && !endpoint.isClosed();
    }

    boolean isRemote() {
        return Access.isRemote(access);
    }

    int state() {
        return state;
    }

    /** Marks the token invalid (local or remote invalidation); the region stays registered. */
    void invalidated() {
        if (state == VALID) {
            state = INVALIDATED;
        }
    }

    void deregistered() {
        state = DEREGISTERED;
    }

    /** A bind of the window is about to be posted. */
    synchronized void bindPosted(long seq, boolean unsignaled) {
        bindInFlight = true;
        bindSeq = seq;
        bindUnsignaled = unsignaled;
    }

    /**
     * The bind completed (or was never posted).
     *
     * @return {@code true} when the window was released meanwhile and is to be freed now
     */
    synchronized boolean bindCompleted() {
        bindInFlight = false;
        boolean release = releaseWhenBound;
        releaseWhenBound = false;
        return release;
    }

    /**
     * The send-queue sequence number of the bind in flight when it reports no completion of its
     * own, else -1.
     */
    synchronized long unsignaledBindInFlight() {
        return bindInFlight && bindUnsignaled ? bindSeq : -1;
    }

    /** Whether a bind of the window is posted and its completion not yet taken. */
    synchronized boolean bindInFlight() {
        return bindInFlight;
    }

    /**
     * A release of the window (and the registration): deferred while its bind is in flight.
     *
     * @return {@code true} when deferred to the bind's completion
     */
    synchronized boolean deferRelease() {
        if (bindInFlight) {
            releaseWhenBound = true;
            return true;
        }
        return false;
    }

    /** Claims the job of deallocating the window; {@code true} for the one caller that must. */
    synchronized boolean takeWindow() {
        if (mw == 0 || windowReleased) {
            return false;
        }
        windowReleased = true;
        return true;
    }

    @Override
    public String toString() {
        return "VerbsMemoryRegion[token=0x" + Integer.toHexString(token) + ", length=" + length + ", access="
                + Access.toString(access) + (state == VALID ? "" : state == INVALIDATED ? ", invalidated" : ", deregistered")
                + "]";
    }
}
