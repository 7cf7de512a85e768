package org.smbdirect.rdma;

import java.nio.ByteBuffer;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Memory registered on one {@link Endpoint} (its protection domain) with {@link Access} rights.
 *
 * <p>The region covers the registered buffer's bytes from its position to its limit at the time
 * of registration. Locally it is named in {@link Sge scatter/gather elements} by offsets relative
 * to the region's first byte. Remotely the peer names it by {@link #token()} and by an absolute
 * {@link #remoteOffset()}: the bytes of the region are the remote offsets {@code remoteOffset()}
 * through {@code remoteOffset() + length() - 1}. Those two values are what an upper layer puts in
 * a buffer descriptor (MS-SMBD 2.2.3.1).
 *
 * <p>A region is usable only with the endpoint it was registered on: a peer connected through
 * any other endpoint cannot reach it, even with the right token (RFC 5042). It stops being usable
 * for remote access, at once, when it is {@linkplain Endpoint#deregister deregistered}, locally
 * {@linkplain Endpoint#postInvalidate invalidated}, or invalidated by the peer through
 * {@linkplain Endpoint#postSendAndInvalidate send-and-invalidate}; it is then never usable again
 * (an invalidated region stays registered until deregistered). Tokens are chosen by the provider
 * so that a peer cannot guess them.
 */
@ProviderType
public interface MemoryRegion {

    /**
     * The steering tag (STag, rkey) by which the peer names this region in RDMA Reads and Writes.
     *
     * @return the 32-bit token
     */
    int token();

    /**
     * The provider-specific remote offset of the region's first byte.
     *
     * @return the offset a peer uses to address the first byte of the region
     */
    long remoteOffset();

    /**
     * The number of bytes registered.
     *
     * @return the region's length, at least 1
     */
    int length();

    /**
     * The access rights granted.
     *
     * @return an {@link Access} mask
     */
    int access();

    /**
     * A view of the registered memory: position 0, limit and capacity {@link #length()}.
     * Each call returns a new view that shares the memory.
     *
     * @return a view of the region's bytes
     */
    ByteBuffer buffer();

    /**
     * The endpoint this region is registered on.
     *
     * @return the endpoint
     */
    Endpoint endpoint();

    /**
     * Tells whether the region can still be used: not deregistered, not invalidated, and its
     * endpoint not closed.
     *
     * @return {@code true} while the token is valid
     */
    boolean isValid();
}
