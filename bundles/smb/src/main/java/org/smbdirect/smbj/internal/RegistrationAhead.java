package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * The registrations (MS-SMBD 3.1.4.3) for a connection's next READ and next WRITE through the RDMA
 * channel, made ahead of them, where registering costs the request's caller a system call: on a
 * provider without memory windows, which cannot send with invalidate either (soft-iWARP), each
 * registration is a memory region of its own, registered and deregistered by the kernel, pinning
 * every page of it. Once a READ or WRITE is sent, its caller registers a buffer of the same length
 * for the next one of its kind while the server serves it, one registration per part where the
 * request went in parts ({@link SplitRequest}); a request of that length and the same parts takes
 * them instead of registering its own.
 *
 * <p>What is registered ahead is a buffer of this connection's pool, not yet named to the peer:
 * its descriptors go out only in the request that takes it, as for any registration. One is kept
 * at most for READs and one for WRITEs; they end with the connection, or when a request of their
 * kind with another length comes.
 */
final class RegistrationAhead {
    private final BufferPool buffers;
    private final AtomicReference<Ready> forRead = new AtomicReference<>();
    private final AtomicReference<Ready> forWrite = new AtomicReference<>();

    RegistrationAhead(BufferPool buffers) {
        this.buffers = buffers;
    }

    /**
     * A buffer registered ahead: for remote write (a READ's) or remote read (a WRITE's), one
     * registration for each part's slice.
     *
     * @param length the request's Length it is for: the buffer's limit
     * @param starts where each part's slice starts ({0} for a request not split)
     * @param buffer the buffer, of the connection's pool
     * @param registrations one per slice, in order
     */
    record Ready(int length, int[] starts, ByteBuffer buffer, RegisteredBuffer[] registrations) {
        /** Whether the request, split as {@code split} ({@code null}: not split), has these slices. */
        boolean fits(int length, SplitRequest split) {
            if (length != this.length || starts.length != (split == null ? 1 : split.parts())) {
                return false;
            }
            for (int i = 1; i < starts.length; i++) {
                if (starts[i] != split.start(i)) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * The registration made ahead for a request of its kind of exactly {@code length} bytes, or
     * {@code null}; one of another length ends here. A WRITE's is taken before smbj's data is
     * copied into its buffer, so it is looked up by the request's payload (see {@link #prepare}).
     *
     * @param read whether for a READ
     * @param length the request's Length (a WRITE's payload)
     * @return the buffer and its registrations, now the caller's, or {@code null}
     */
    Ready take(boolean read, int length) {
        Ready r = (read ? forRead : forWrite).getAndSet(null);
        if (r != null && r.length() != length) {
            release(r, true);
            return null;
        }
        return r;
    }

    /**
     * Registers a buffer of {@code length} bytes for the next request of its kind, one
     * registration per part as {@code split} has them, unless one is ready (a registration without
     * memory windows is usable when the provider returns it). A failure leaves none ready: the
     * next request registers its own, and fails as it would have.
     *
     * @param c the connection
     * @param read whether for a READ
     * @param length the last request's Length
     * @param split how the last request went in parts, or {@code null}
     */
    void prepare(SmbDirectConnection c, boolean read, int length, SplitRequest split) {
        AtomicReference<Ready> slot = read ? forRead : forWrite;
        if (slot.get() != null || !c.isOpen()) {
            return;
        }
        int[] starts = RegistrationAhead.starts(split);
        ByteBuffer buffer = buffers.take(length);
        RegisteredBuffer[] registrations = new RegisteredBuffer[starts.length];
        Ready r = new Ready(length, starts, buffer, registrations);
        try {
            for (int i = 0; i < starts.length; i++) {
                int end = i + 1 < starts.length ? starts[i + 1] : length;
                registrations[i] = c.register(buffer.slice(starts[i], end - starts[i]),
                        read ? RemoteAccess.WRITE : RemoteAccess.READ);
            }
        } catch (SmbDirectException | RuntimeException e) {
            release(r, true);
            return;
        }
        if (!slot.compareAndSet(null, r)) {
            release(r, true);
        }
    }

    /**
     * Ends a registration made ahead that its request cannot use, giving its buffer back unless
     * {@code withBuffer} is false (a WRITE's data is already in it) or a deregistration failed.
     *
     * @param r what was made ahead
     * @param withBuffer whether the buffer goes back to the pool
     */
    void release(Ready r, boolean withBuffer) {
        boolean reachable = false;
        for (RegisteredBuffer registration : r.registrations()) {
            reachable |= registration != null && !buffers.release(registration, null);
        }
        if (withBuffer && !reachable) {
            buffers.give(r.buffer());
        }
    }

    /** How many registrations are made ahead: 0 when none, else one per part, for READs and WRITEs. */
    int count() {
        return count(forRead.get()) + count(forWrite.get());
    }

    /** Ends the registrations made ahead, with the connection (which has ended its regions already). */
    void close() {
        for (AtomicReference<Ready> slot : List.of(forRead, forWrite)) {
            Ready r = slot.getAndSet(null);
            if (r != null) {
                for (RegisteredBuffer registration : r.registrations()) {
                    registration.close();
                }
            }
        }
    }

    private static int count(Ready r) {
        return r == null ? 0 : r.registrations().length;
    }

    private static int[] starts(SplitRequest split) {
        if (split == null) {
            return new int[] {0};
        }
        int[] starts = new int[split.parts()];
        for (int i = 0; i < starts.length; i++) {
            starts[i] = split.start(i);
        }
        return starts;
    }
}
