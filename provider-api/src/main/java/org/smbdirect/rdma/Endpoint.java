package org.smbdirect.rdma;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;

import org.osgi.annotation.versioning.ProviderType;

/**
 * One reliable, connected RDMA endpoint: a queue pair with its own protection domain. It offers
 * the provider's three services.
 *
 * <h2>Connection service</h2>
 * An endpoint is created {@link EndpointState#IDLE} by {@link RdmaProvider#createEndpoint} (active
 * side, then {@link #connect}) or by {@link ConnectionRequest#createEndpoint} (passive side, then
 * {@link ConnectionRequest#accept}). Events reach its {@link ConnectionListener}. Either side may
 * {@link #disconnect}; {@link #close} releases everything.
 *
 * <h2>Registration service</h2>
 * {@link #register} makes memory usable in work requests and, with remote rights, by the peer;
 * {@link #deregister} and {@link #postInvalidate} revoke it. Regions belong to this endpoint
 * only.
 *
 * <h2>RDMA service</h2>
 * Work requests are posted and complete asynchronously on the endpoint's completion queues: the
 * receive queue for receives, the send queue for everything else. Requests of one queue complete
 * in the order posted. Sends consume the peer's posted receives in order: each send fills exactly
 * one receive, which completes with the number of bytes sent; a send when the peer has no
 * receive posted fails with {@link RdmaStatus#RECEIVER_NOT_READY}, and a send longer than the
 * receive it lands in fails with {@link RdmaStatus#REMOTE_INVALID_REQUEST} while the receive fails
 * with {@link RdmaStatus#LOCAL_LENGTH_ERROR}; both end the connection. A failed request ends the
 * connection; every request still outstanding then completes with {@link RdmaStatus#FLUSHED}. The
 * endpoint whose request failed receives {@link ConnectionListener#onError}; its peer receives its
 * one terminal event too ({@code onError}, or {@code onDisconnected} where the provider cannot tell
 * the failure from a disconnect), and both end {@link EndpointState#DISCONNECTED}.
 *
 * <p>Post-time checks: a request that cannot be started throws {@link RdmaException} and leaves
 * the endpoint as it was: {@link RdmaStatus#NOT_CONNECTED} when not connected (receives may be
 * posted from {@link EndpointState#IDLE} on), {@link RdmaStatus#INSUFFICIENT_RESOURCES} when the
 * queue is full, {@link RdmaStatus#INVALID_PARAMETER} for a bad element count, unknown flags or
 * too much inline data, {@link RdmaStatus#LOCAL_PROTECTION_ERROR} for an element outside its
 * region, naming a region of another endpoint or lacking {@link Access#LOCAL_WRITE} where the
 * request writes to it, {@link RdmaStatus#INVALID_TOKEN} for an element naming an invalidated or
 * deregistered region, and {@link RdmaStatus#NOT_SUPPORTED} for an operation the provider lacks.
 *
 * <p>All methods are thread-safe.
 */
@ProviderType
public interface Endpoint extends AutoCloseable {

    // ---------------------------------------------------------------- connection service

    /**
     * The provider that created this endpoint.
     *
     * @return the provider
     */
    RdmaProvider provider();

    /**
     * The options the endpoint was created with.
     *
     * @return the options
     */
    EndpointOptions options();

    /**
     * The RDMA transport of this connection: its provider's.
     *
     * @return the transport type
     */
    default TransportType transportType() {
        return provider().capabilities().transportType();
    }

    /**
     * The current state.
     *
     * @return the state
     */
    EndpointState state();

    /**
     * Asks the peer listening at {@code remote} for a connection. Returns at once; the outcome
     * arrives as {@link ConnectionListener#onEstablished} or {@link ConnectionListener#onError}
     * ({@link RdmaStatus#CONNECTION_REFUSED}, {@link RdmaStatus#UNREACHABLE}, {@link
     * RdmaStatus#TIMEOUT}). Once established, the endpoint's depths mirror the peer's, as RDMA
     * connection management sets them: its {@link #ord()} is the IRD the peer accepted with (this
     * side may have as many reads outstanding as the peer serves), and its {@link #ird()} is the
     * ORD the peer accepted with.
     *
     * @param remote the listener's address
     * @param privateData bytes for the peer's {@link ConnectionRequest#peerPrivateData()}, at most
     *        {@link ProviderCapabilities#maxPrivateData()}; {@code null} for none
     * @param ird RDMA Reads from the peer this side offers to serve at once, 0 to {@link
     *        ProviderCapabilities#maxIrd()}
     * @param ord RDMA Reads towards the peer this side asks to have outstanding, 0 to {@link
     *        ProviderCapabilities#maxOrd()}
     * @throws RdmaException {@link RdmaStatus#INVALID_STATE} unless {@link EndpointState#IDLE} and
     *         created by {@link RdmaProvider#createEndpoint}; {@link RdmaStatus#INVALID_PARAMETER}
     *         for out-of-range values
     */
    void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) throws RdmaException;

    /**
     * The private data the peer sent: with its connection request (passive side), its acceptance
     * or its rejection (active side). Transports that do not carry the length (InfiniBand and RoCE
     * connection management) deliver the bytes sent followed by zeros up to their fixed size, so a
     * consumer that needs the length carries it in the data (MS-SMBD's IRD/ORD header is 8 bytes
     * at the start and unaffected).
     *
     * @return a copy of the bytes; empty before any arrived
     */
    byte[] peerPrivateData();

    /**
     * The incoming RDMA Read depth in force: how many RDMA Reads from the peer this endpoint
     * serves at once. Meaningful once established.
     *
     * @return the IRD
     */
    int ird();

    /**
     * The outgoing RDMA Read depth in force: how many RDMA Reads this endpoint has outstanding at
     * once; further reads wait in the send queue until earlier ones complete. Meaningful once
     * established.
     *
     * @return the ORD
     */
    int ord();

    /**
     * The local address once connecting, else {@code null}.
     *
     * @return the local address or {@code null}
     */
    InetSocketAddress localAddress();

    /**
     * The peer's address once connecting, else {@code null}.
     *
     * @return the remote address or {@code null}
     */
    InetSocketAddress remoteAddress();

    /**
     * Ends the connection. Outstanding work requests complete with {@link RdmaStatus#FLUSHED};
     * both sides then receive {@link ConnectionListener#onDisconnected}. Returns at once; idempotent;
     * does nothing unless {@link EndpointState#CONNECTING} or {@link EndpointState#CONNECTED}.
     */
    void disconnect();

    /**
     * Disconnects if needed, deregisters every region still registered, and releases the
     * endpoint. Completions already queued stay retrievable; no events follow the close except
     * a pending terminal one. Idempotent.
     */
    @Override
    void close();

    /**
     * Attaches a consumer object to this endpoint, for finding the consumer's state from a
     * {@link CompletionResult#endpoint()} without a lookup.
     *
     * @param attachment any object, or {@code null}
     */
    void attach(Object attachment);

    /**
     * The object last {@linkplain #attach attached}.
     *
     * @return the attachment or {@code null}
     */
    Object attachment();

    // ---------------------------------------------------------------- registration service

    /**
     * Registers the bytes of {@code buffer} from its position to its limit with the given rights.
     * The buffer must be direct (the memory must not move); its position and limit are not changed.
     *
     * @param buffer a direct buffer
     * @param access an {@link Access} mask
     * @return the region
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} for a heap buffer, no bytes,
     *         unknown access bits, {@link Access#REMOTE_WRITE} without {@link Access#LOCAL_WRITE},
     *         write access to a read-only buffer, or more bytes than {@link
     *         ProviderCapabilities#maxRegionSize()}; {@link RdmaStatus#NOT_SUPPORTED} for {@link
     *         Access#REMOTE_READ} on a provider without RDMA Read; {@link
     *         RdmaStatus#INSUFFICIENT_RESOURCES}; {@link RdmaStatus#INVALID_STATE} once
     *         disconnected or closed
     */
    MemoryRegion register(ByteBuffer buffer, int access) throws RdmaException;

    /**
     * Registers as {@link #register(ByteBuffer, int)} does, with flags. With {@link
     * RequestFlags#DEFER} the provider may hand the registration to the device together with the
     * next request posted on this endpoint's send queue instead of at once (a verbs provider binds
     * the memory window in the same post as that request, saving a post of its own): the token is
     * usable by the peer once a request posted after this call has been handed over, and by then
     * for every request posted after it. The consumer must pass the token to the peer in such a
     * request (a send), never another way. Deregistering the region, or the endpoint's end, settles
     * a registration still waiting. A provider may ignore the flag and register at once.
     *
     * @param buffer a direct buffer
     * @param access an {@link Access} mask
     * @param flags {@link RequestFlags#NONE} or {@link RequestFlags#DEFER}
     * @return the region
     * @throws RdmaException as {@link #register(ByteBuffer, int)}; {@link
     *         RdmaStatus#INVALID_PARAMETER} for other flags
     * @since 1.2
     */
    default MemoryRegion register(ByteBuffer buffer, int access, int flags) throws RdmaException {
        if ((flags & ~RequestFlags.DEFER) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a registration takes DEFER only, got "
                    + RequestFlags.toString(flags));
        }
        return register(buffer, access);
    }

    /**
     * Deregisters a region. When this returns, no remote access to it is in progress and none is
     * possible any more (MS-SMBD 3.1.4.4). The consumer must not deregister a region that an
     * outstanding request of its own names; such a request fails with {@link
     * RdmaStatus#LOCAL_PROTECTION_ERROR}.
     *
     * @param region a region of this endpoint
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} for a region of another endpoint,
     *         {@link RdmaStatus#INVALID_TOKEN} when already deregistered
     */
    void deregister(MemoryRegion region) throws RdmaException;

    /**
     * Posts a local invalidate of a region's token (NdkInvalidate). When it completes
     * ({@link OperationType#INVALIDATE}) the token is no longer usable by the peer; the region stays
     * registered until deregistered. Invalidating a token that is already invalid (locally, by the
     * peer, or deregistered) completes with {@link RdmaStatus#INVALID_TOKEN}, which like any
     * failed request ends the connection.
     *
     * @param context returned in the completion
     * @param region a region of this endpoint registered with remote access
     * @param flags {@link RequestFlags#SILENT_SUCCESS}, {@link RequestFlags#READ_FENCE}, {@link
     *        RequestFlags#DEFER}
     * @throws RdmaException see the class description; {@link RdmaStatus#NOT_SUPPORTED} when the
     *         provider cannot invalidate; {@link RdmaStatus#INVALID_PARAMETER} for a region of another
     *         endpoint or one registered without remote access (it has no token to invalidate)
     */
    void postInvalidate(Object context, MemoryRegion region, int flags) throws RdmaException;

    // ---------------------------------------------------------------- RDMA service

    /**
     * Posts a receive: the buffers that the next unmatched send from the peer fills, in order.
     *
     * @param context returned in the completion
     * @param sgl elements naming regions with {@link Access#LOCAL_WRITE}
     * @param count how many elements of {@code sgl} to use, 1 to {@link
     *        EndpointOptions#maxReceiveSge()}
     * @throws RdmaException see the class description
     */
    void postReceive(Object context, Sge[] sgl, int count) throws RdmaException;

    /**
     * Posts a send of the concatenated bytes of the elements.
     *
     * @param context returned in the completion
     * @param sgl the data; elements may be {@linkplain Sge#inline inline} with {@link
     *        RequestFlags#INLINE}
     * @param count how many elements to use, 0 (an empty message) to {@link
     *        EndpointOptions#maxSendSge()}
     * @param flags {@link RequestFlags}
     * @throws RdmaException see the class description
     */
    void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException;

    /**
     * Posts a send that also invalidates a token at the peer (NdkSendAndInvalidate). The peer's
     * provider invalidates its region with that token when the receive completes and reports the
     * token through {@link CompletionQueue#getResultsEx}. If the token is not a valid, remotely
     * accessible token of the peer's endpoint, the peer's provider aborts the connection: the
     * peer's receive completes with {@link RdmaStatus#INVALID_TOKEN}, this send with {@link
     * RdmaStatus#REMOTE_INVALID_REQUEST}.
     *
     * @param context returned in the completion
     * @param sgl the data
     * @param count how many elements to use
     * @param flags {@link RequestFlags}
     * @param remoteToken the peer's token to invalidate
     * @throws RdmaException see the class description; {@link RdmaStatus#NOT_SUPPORTED} when the
     *         provider cannot send with invalidate
     */
    void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken)
            throws RdmaException;

    /**
     * Posts an RDMA Read of the peer's bytes from {@code remoteOffset} (in the region named by
     * {@code remoteToken}) into the elements, in order. The read fails with {@link
     * RdmaStatus#REMOTE_ACCESS_ERROR}, ending the connection, unless the token is valid on the
     * peer's endpoint of this connection, grants {@link Access#REMOTE_READ}, and the whole range
     * lies inside the region.
     *
     * @param context returned in the completion
     * @param sgl elements naming regions with {@link Access#LOCAL_WRITE}
     * @param count how many elements to use, 1 to {@link EndpointOptions#maxSendSge()}
     * @param remoteOffset the peer's offset of the first byte
     * @param remoteToken the peer's token
     * @param flags {@link RequestFlags#SILENT_SUCCESS}, {@link RequestFlags#READ_FENCE}, {@link
     *        RequestFlags#DEFER}
     * @throws RdmaException see the class description; {@link RdmaStatus#NOT_SUPPORTED} without
     *         RDMA Read; {@link RdmaStatus#INVALID_STATE} when the endpoint's {@link #ord()} is 0 (such
     *         a read could never start)
     */
    void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException;

    /**
     * Posts an RDMA Write of the elements' bytes to the peer's memory from {@code remoteOffset}
     * (in the region named by {@code remoteToken}). The write fails with {@link
     * RdmaStatus#REMOTE_ACCESS_ERROR}, ending the connection, unless the token is valid on the
     * peer's endpoint of this connection, grants {@link Access#REMOTE_WRITE}, and the whole range
     * lies inside the region. A write consumes no receive at the peer.
     *
     * @param context returned in the completion
     * @param sgl the data
     * @param count how many elements to use
     * @param remoteOffset the peer's offset of the first byte
     * @param remoteToken the peer's token
     * @param flags {@link RequestFlags} except {@link RequestFlags#SOLICIT_EVENT}
     * @throws RdmaException see the class description
     */
    void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags)
            throws RdmaException;
}
