package org.smbdirect.bulk;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

import org.osgi.annotation.versioning.ProviderType;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * One bulk-transfer session over an SMB Direct connection. Thread-safe; sends are delivered to the
 * peer in the order they were made.
 */
@ProviderType
public interface BulkSession extends AutoCloseable {

    /**
     * The SMB Direct connection carrying the session.
     *
     * @return the connection
     */
    SmbDirectConnection connection();

    /**
     * Sends the bytes from the buffer's position to its limit. Up to the inline threshold they
     * travel in one control message; beyond it the first part travels inline and the rest by RDMA
     * Read by the peer, or by RDMA Write into memory the peer registered when the peer cannot RDMA
     * Read. Several sends may be in transfer at once ({@link BulkConfig#maxInFlight()}); later ones
     * wait their turn. The buffer's position and limit are not changed; its content must not
     * change until the returned stage completes.
     *
     * @param data at most {@link BulkConfig#maxMessageSize()} bytes
     * @return completes when the peer holds the data, or exceptionally with {@link
     *         NoBuffersException} when memory could not be registered or allocated on either
     *         side (nothing stays registered), or with the connection's loss
     * @throws IllegalArgumentException when the data exceeds the maximum message size
     * @throws IllegalStateException when {@link BulkConfig#maxQueuedSends()} sends already wait
     */
    CompletionStage<Void> send(ByteBuffer data);

    /**
     * Sends and waits for completion.
     *
     * @param data the bytes, as for {@link #send}
     * @param timeout how long to wait
     * @throws SmbDirectException when the send failed ({@link NoBuffersException} among others)
     *         or did not complete in time
     * @throws InterruptedException when interrupted while waiting
     * @throws IllegalStateException when called on an SMB Direct engine thread (from a handler or
     *         a completion callback), where waiting could deadlock
     */
    void sendAndWait(ByteBuffer data, Duration timeout) throws SmbDirectException, InterruptedException;

    /**
     * Whether large sends travel by the peer's RDMA Read: the peer announced that its RDMA provider
     * can RDMA Read, and this side's provider can register memory for the peer to read ({@link
     * org.smbdirect.transport.ConnectionParameters#rdmaRead()}). Otherwise they travel by RDMA Write
     * into memory the peer registered.
     *
     * @return {@code true} when large sends travel by the peer's RDMA Read
     */
    boolean peerCanRdmaRead();

    /**
     * The session's counters.
     *
     * @return a snapshot
     */
    BulkStatistics statistics();

    /**
     * Closes after the sends already made complete.
     *
     * @return completes when the connection has ended
     */
    CompletionStage<Void> closeAsync();

    /** {@link #closeAsync()}, waiting a bounded time. */
    @Override
    void close();
}
