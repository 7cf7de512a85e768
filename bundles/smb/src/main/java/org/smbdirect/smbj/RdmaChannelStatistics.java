package org.smbdirect.smbj;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Counters of the READ and WRITE requests an {@link SmbjTransport} carried, by the path their data
 * took: through the RDMA channel (the server moved the data by RDMA Read or RDMA Write) or inline
 * in SMB Direct messages. A snapshot; counters only grow.
 */
@ProviderType
public interface RdmaChannelStatistics {

    /**
     * WRITE requests whose data the server RDMA-read from a registered buffer.
     *
     * @return the count
     */
    long rdmaWrites();

    /**
     * Bytes of those WRITE requests.
     *
     * @return the count
     */
    long rdmaWriteBytes();

    /**
     * READ requests whose data the server RDMA-wrote into a registered buffer.
     *
     * @return the count
     */
    long rdmaReads();

    /**
     * Bytes of those READ requests (as the server reported them moved).
     *
     * @return the count
     */
    long rdmaReadBytes();

    /**
     * WRITE requests whose data travelled inline.
     *
     * @return the count
     */
    long inlineWrites();

    /**
     * Bytes of those WRITE requests.
     *
     * @return the count
     */
    long inlineWriteBytes();

    /**
     * READ requests sent with their data to come back inline.
     *
     * @return the count
     */
    long inlineReads();

    /**
     * Bytes those READ requests asked for.
     *
     * @return the count
     */
    long inlineReadBytes();

    /**
     * Registrations the server invalidated with its response (Send with Invalidate, requested by
     * SMB2_CHANNEL_RDMA_V1_INVALIDATE).
     *
     * @return the count
     */
    long remoteInvalidations();

    /**
     * Registrations this side invalidated and deregistered itself when the response came without
     * remote invalidation (SMB 3.0, or a provider that cannot receive it).
     *
     * @return the count
     */
    long localInvalidations();

    /**
     * Responses that failed signature verification (MS-SMB2 3.2.5.1.3); each ended its connection
     * with an exception saying so.
     *
     * @return the count
     */
    long signatureFailures();

    /**
     * READ requests of smbj's sent as several READs in flight ({@link SmbjOptions#readParts()});
     * each part counts in {@link #rdmaReads()}.
     *
     * @return the count
     */
    long splitReads();

    /**
     * WRITE requests of smbj's sent as several WRITEs in flight ({@link SmbjOptions#writeParts()});
     * each part counts in {@link #rdmaWrites()}.
     *
     * @return the count
     */
    long splitWrites();

    /**
     * READs through the RDMA channel that took a registration made ahead of them (a split READ
     * counts once): on a provider whose registrations are memory regions of their own (no memory
     * windows, no send with invalidate: soft-iWARP), the registration for the next READ of the
     * same length is made by the caller once a READ is sent, while the server serves it, off the
     * path of the next request.
     *
     * @return the count
     */
    long readsRegisteredAhead();

    /**
     * WRITEs through the RDMA channel that took a registration made ahead of them, as {@link
     * #readsRegisteredAhead()} for READs (smbj's data is copied straight into its buffer).
     *
     * @return the count
     */
    long writesRegisteredAhead();

    /**
     * READ responses without data (through the RDMA channel, or failed) accepted although their
     * signature is ksmbd's, over the 4-byte transport length and the response, not MS-SMB2's over
     * the response alone (Linux ksmbd 6.1 to 7.2; see {@link SmbjOptions#strictSignatures()}).
     *
     * @return the count
     * @since 1.3
     */
    long toleratedReadSignatures();
}
