package org.smbdirect.bulk;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

import org.osgi.annotation.versioning.ProviderType;
import org.smbdirect.transport.SmbDirectException;

/**
 * The bulk-transfer service: opens sessions of the sockets-direct session protocol over the SMB
 * Direct transport.
 */
@ProviderType
public interface BulkTransfer {

    /**
     * Connects to a peer that listens with this protocol.
     *
     * @param remote the peer's address
     * @param handler receives the session's data
     * @return completes with the session once both sides exchanged their capabilities, or
     *         exceptionally with {@link SmbDirectException}, also when this service was closed (in
     *         OSGi: its component was deactivated, the service is gone)
     */
    CompletionStage<BulkSession> connect(InetSocketAddress remote, BulkHandler handler);

    /**
     * Connects and waits.
     *
     * @param remote the peer's address
     * @param handler receives the session's data
     * @param timeout how long to wait
     * @return the session
     * @throws SmbDirectException when the connection failed or did not complete in time, or this
     *         service was closed
     * @throws InterruptedException when interrupted while waiting
     * @throws IllegalStateException when called on an SMB Direct engine thread (from a handler or
     *         a completion callback), where waiting could deadlock
     */
    BulkSession connect(InetSocketAddress remote, BulkHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException;

    /**
     * Listens for peers.
     *
     * @param local the local address; port 0 chooses one
     * @param handler receives each new session
     * @return the listener
     * @throws SmbDirectException when no RDMA provider is available, the address is unusable, or
     *         this service was closed (in OSGi: its component was deactivated, the service is gone)
     */
    BulkListener listen(InetSocketAddress local, BulkAcceptHandler handler) throws SmbDirectException;

    /**
     * The configuration new sessions use.
     *
     * @return the configuration
     */
    BulkConfig configuration();
}
