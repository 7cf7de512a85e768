package org.smbdirect.transport;

import java.nio.ByteBuffer;
import java.util.List;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A local buffer registered for RDMA access by the peer (MS-SMBD 3.1.4.3), described by one or
 * more {@link BufferDescriptorV1} in order; together they cover every byte of the buffer.
 */
@ProviderType
public interface RegisteredBuffer extends AutoCloseable {

    /**
     * The descriptors to hand to the peer, in buffer order.
     *
     * @return an immutable list of at least one descriptor
     */
    List<BufferDescriptorV1> descriptors();

    /**
     * The total number of bytes registered.
     *
     * @return the sum of the descriptors' lengths
     */
    long length();

    /**
     * What the peer may do.
     *
     * @return the access
     */
    RemoteAccess access();

    /**
     * The connection the buffer is registered on; the peer of no other connection can reach it.
     *
     * @return the connection
     */
    SmbDirectConnection connection();

    /**
     * Whether the registration is still in force: not deregistered, not invalidated by the peer,
     * connection not lost. Once the peer invalidated it (Send with Invalidate, MS-SMBD 3.1.5.8)
     * it is {@code false}, but the local resources stay until {@link #deregister()} or {@link
     * #close()}, which the owner calls in every case.
     *
     * @return {@code true} while the peer may access the buffer
     */
    boolean isRegistered();

    /**
     * Deregisters the buffer (MS-SMBD 3.1.4.4): when this returns, no remote access is in progress
     * and none is possible. Idempotent.
     *
     * @throws SmbDirectException when the RDMA provider reports an error
     */
    void deregister() throws SmbDirectException;

    /**
     * Deregisters, logging rather than throwing a provider error. Idempotent.
     */
    @Override
    void close();

    /**
     * Convenience: the descriptors' wire encoding, 16 bytes each, in a new buffer (position 0).
     *
     * @return the encoded descriptors
     */
    default ByteBuffer encodeDescriptors() {
        ByteBuffer b = ByteBuffer.allocate(BufferDescriptorV1.SIZE * descriptors().size());
        BufferDescriptorV1.encodeAll(descriptors(), b);
        return b.flip();
    }
}
