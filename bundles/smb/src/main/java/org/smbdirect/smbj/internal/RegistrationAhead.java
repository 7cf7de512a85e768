package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReference;

import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * The registration (MS-SMBD 3.1.4.3) for a connection's next READ through the RDMA channel, made
 * ahead of it, where registering costs the READ's caller a system call: on a provider without
 * memory windows, which cannot send with invalidate either (soft-iWARP), each registration is a
 * memory region of its own, registered and deregistered by the kernel. Once a READ is sent, its
 * caller registers a buffer of the same length for the next one while the server serves it; a
 * READ of that length takes it instead of registering its own.
 *
 * <p>The registration ahead is of a buffer of this connection's pool, not yet named to the peer:
 * its descriptors go out only in the READ request that takes it, as for any registration. One is
 * kept at most; it ends with the connection, or when a READ of another length comes.
 */
final class RegistrationAhead {
    private final BufferPool buffers;
    private final AtomicReference<Ready> ready = new AtomicReference<>();

    RegistrationAhead(BufferPool buffers) {
        this.buffers = buffers;
    }

    /**
     * A buffer registered ahead for remote write (an RDMA-channel READ's).
     *
     * @param length the READ's Length it is for: the buffer's limit
     * @param buffer the buffer, of the connection's pool
     * @param registration its registration
     */
    record Ready(int length, ByteBuffer buffer, RegisteredBuffer registration) {
    }

    /**
     * The registration made ahead for a READ of exactly {@code length} bytes, or {@code null}; one
     * of another length ends here.
     *
     * @param length the READ's Length
     * @return the buffer and its registration, now the caller's, or {@code null}
     */
    Ready take(int length) {
        Ready r = ready.getAndSet(null);
        if (r != null && r.length() != length) {
            buffers.release(r.registration(), r.buffer());
            return null;
        }
        return r;
    }

    /**
     * Registers a buffer of {@code length} bytes for the next READ, unless one is ready (a
     * registration without memory windows is usable when the provider returns it). A failure
     * leaves none ready: the next READ registers its own, and fails as it would have.
     *
     * @param c the connection
     * @param length the last READ's Length
     */
    void prepare(SmbDirectConnection c, int length) {
        if (ready.get() != null || !c.isOpen()) {
            return;
        }
        ByteBuffer buffer = buffers.take(length);
        Ready r;
        try {
            r = new Ready(length, buffer, c.register(buffer, RemoteAccess.WRITE));
        } catch (SmbDirectException | RuntimeException e) {
            buffers.give(buffer);
            return;
        }
        if (!ready.compareAndSet(null, r)) {
            buffers.release(r.registration(), r.buffer());
        }
    }

    /** How many registrations are made ahead: 0 or 1. */
    int count() {
        return ready.get() == null ? 0 : 1;
    }

    /** Ends the registration made ahead, with the connection (which has ended its regions already). */
    void close() {
        Ready r = ready.getAndSet(null);
        if (r != null) {
            r.registration().close();
        }
    }
}
