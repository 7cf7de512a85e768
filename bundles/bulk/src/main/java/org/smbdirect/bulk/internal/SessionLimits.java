package org.smbdirect.bulk.internal;

import org.smbdirect.transport.BufferDescriptorV1;

/**
 * A session's limits, fixed once both HELLOs are known: which path large sends take, how large an
 * RDMA operation and an inline send may be, and how much of a large send travels in its request.
 *
 * @param useRead large sends travel by the peer's RDMA Read (else by this side's RDMA Writes)
 * @param rdmaChunk the largest RDMA operation, the smaller of both sides' MaxReadWriteSize (0: no RDMA)
 * @param inlineLimit sends up to this many bytes travel inline, in one DATA message
 * @param firstPartRead bytes of a large READ-path send carried in its READ_REQUEST
 * @param firstPartWrite bytes of a large WRITE-path send carried in its WRITE_REQUEST
 * @param maxControlMessage the largest control message (the connection's MaxFragmentedSendSize)
 * @param sendLimit the largest send, the smaller of both sides' maxMessageSize
 */
record SessionLimits(boolean useRead, int rdmaChunk, int inlineLimit, int firstPartRead, int firstPartWrite,
        int maxControlMessage, int sendLimit) {

    /** The SMB Direct Data Transfer header before each message's data (MS-SMBD 2.2.3). */
    static final int DATA_TRANSFER_HEADER = 24;

    /**
     * The limits of a session.
     *
     * @param localRead this side's connection can register memory for the peer to read
     * @param maxReadWriteSize this side's connection's MaxReadWriteSize
     * @param maxFragmentedSendSize this side's connection's MaxFragmentedSendSize
     * @param maxSendSize this side's connection's MaxSendSize (one SMB Direct message)
     * @param peer the peer's HELLO
     * @param inlineThreshold the configured inline threshold
     * @param maxMessageSize the configured largest send
     */
    static SessionLimits of(boolean localRead, int maxReadWriteSize, int maxFragmentedSendSize, int maxSendSize,
            Hello peer, int inlineThreshold, int maxMessageSize) {
        // The original: the path "depends on whether the service provider supports WSPRdmaRead";
        // this side must also be able to register memory for the peer to read.
        boolean useRead = peer.canRdmaRead && localRead;
        int rdmaChunk = Math.max(0, Math.min(maxReadWriteSize, peer.maxReadWriteSize));
        int inlineLimit = clamp(maxFragmentedSendSize - ControlMessage.HEADER_SIZE, 0, inlineThreshold);
        // The first part of a large send fills what is left of one SMB Direct message after the
        // header and one descriptor.
        int fragment = maxSendSize - DATA_TRANSFER_HEADER - ControlMessage.HEADER_SIZE;
        return new SessionLimits(useRead, rdmaChunk, inlineLimit, clamp(fragment - BufferDescriptorV1.SIZE, 0,
                inlineLimit), clamp(fragment, 0, inlineLimit), maxFragmentedSendSize,
                Math.min(maxMessageSize, peer.maxMessageSize));
    }

    private static int clamp(int v, int min, int max) {
        return Math.max(min, Math.min(v, max));
    }
}
