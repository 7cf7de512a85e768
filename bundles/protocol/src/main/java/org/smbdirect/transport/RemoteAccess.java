package org.smbdirect.transport;

/**
 * Which RDMA operations the peer may perform on a registered buffer (MS-SMBD 3.1.4.3).
 */
public enum RemoteAccess {
    /** The peer may RDMA Read the buffer (the buffer is a source). */
    READ,
    /** The peer may RDMA Write the buffer (the buffer is a destination). */
    WRITE,
    /** The peer may do both. */
    READ_WRITE;

    /**
     * Whether RDMA Read by the peer is allowed.
     *
     * @return {@code true} for {@link #READ} and {@link #READ_WRITE}
     */
    public boolean allowsRead() {
        return this != WRITE;
    }

    /**
     * Whether RDMA Write by the peer is allowed.
     *
     * @return {@code true} for {@link #WRITE} and {@link #READ_WRITE}
     */
    public boolean allowsWrite() {
        return this != READ;
    }
}
