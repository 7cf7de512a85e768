package org.smbdirect.transport;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Counters of one connection, or summed over a transport's connections ({@link
 * TransportStatistics}). A snapshot; counters only grow.
 */
@ProviderType
public interface ConnectionStatistics {

    /**
     * Upper-layer messages sent (each possibly several fragments).
     *
     * @return the count
     */
    long messagesSent();

    /**
     * Upper-layer payload bytes sent.
     *
     * @return the count
     */
    long bytesSent();

    /**
     * Upper-layer messages delivered to the upper layer.
     *
     * @return the count
     */
    long messagesReceived();

    /**
     * Upper-layer payload bytes delivered.
     *
     * @return the count
     */
    long bytesReceived();

    /**
     * Data Transfer messages sent, including empty ones (credit grants, keepalives).
     *
     * @return the count
     */
    long fragmentsSent();

    /**
     * Data Transfer messages received, including empty ones.
     *
     * @return the count
     */
    long fragmentsReceived();

    /**
     * Send credits granted to the peer (sum of CreditsGranted sent, negotiation included).
     *
     * @return the count
     */
    long creditsGranted();

    /**
     * Send credits received from the peer (sum of CreditsGranted received).
     *
     * @return the count
     */
    long creditsReceived();

    /**
     * Times sending stopped for want of send credits (MS-SMBD 3.1.5.1).
     *
     * @return the count
     */
    long creditStalls();

    /**
     * Keepalive requests sent (messages with SMB_DIRECT_RESPONSE_REQUESTED).
     *
     * @return the count
     */
    long keepalivesSent();

    /**
     * Keepalive requests received from the peer.
     *
     * @return the count
     */
    long keepalivesReceived();

    /**
     * Keepalive requests of this side that the peer answered: a message arrived while one was
     * outstanding (MS-SMBD 3.1.5.5 resets KeepaliveRequested). While this is below {@link
     * #keepalivesSent()}, a keepalive is waiting for its answer.
     *
     * @return the count
     */
    long keepalivesAnswered();

    /**
     * RDMA Read work requests completed.
     *
     * @return the count
     */
    long rdmaReads();

    /**
     * Bytes moved by RDMA Read.
     *
     * @return the count
     */
    long rdmaReadBytes();

    /**
     * RDMA Write work requests completed.
     *
     * @return the count
     */
    long rdmaWrites();

    /**
     * Bytes moved by RDMA Write.
     *
     * @return the count
     */
    long rdmaWriteBytes();

    /**
     * Upper-layer buffers registered for peer access and not yet deregistered.
     *
     * @return the current number
     */
    long registrationsLive();

    /**
     * The current Connection.SendCredits (zero for a sum over connections that have ended).
     *
     * @return credits
     */
    long sendCredits();

    /**
     * The current Connection.ReceiveCredits: receives posted.
     *
     * @return credits
     */
    long receiveCredits();
}
