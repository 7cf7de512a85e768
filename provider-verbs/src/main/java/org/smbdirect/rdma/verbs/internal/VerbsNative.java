package org.smbdirect.rdma.verbs.internal;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The project's own native methods, for everything SMB Direct needs that DiSNI's Java API does not
 * offer or cannot offer on a modern JVM. They live in the same shared library as DiSNI's native
 * half ({@code libdisni.so}, built from {@code src/main/c}) and work on the same native pointers
 * that DiSNI objects carry ({@code NatObject.getObjId()}).
 *
 * <p>Why not DiSNI for these:
 * <ul>
 * <li>rdma_cm: DiSNI can neither pass private data with accept and reject nor read it from
 * events, cannot set IRD/ORD (responder resources, initiator depth), and its event channel keeps
 * every connection identifier it ever saw in a map, which would grow with every connection.</li>
 * <li>Registration, posting and polling: DiSNI's stateful calls keep their arguments in buffers
 * whose addresses it reads through {@code sun.nio.ch.DirectBuffer}, which Java 17 does not export;
 * DiSNI also has no memory windows, no send-with-invalidate, no local invalidate and no
 * per-queue-pair scatter/gather limits.</li>
 * </ul>
 *
 * <p>Every method that can fail throws {@link NativeException} naming the verbs or rdma_cm call
 * and the errno. Work requests and completions travel through direct buffers in native byte
 * order, laid out as described by the {@code WR_*}, {@code RECV_*} and {@code WC_*} constants.
 */
public final class VerbsNative {

    // --- send work request record (postSend): one record per request, back to back
    /** Send record: wr_id (long). */
    public static final int WR_ID = 0;
    /** Send record: operation, one of the {@code OP_*} constants (int). */
    public static final int WR_OPCODE = 8;
    /** Send record: ibv_send_flags (int). */
    public static final int WR_FLAGS = 12;
    /** Send record: remote address of a read or write (long). */
    public static final int WR_REMOTE_ADDR = 16;
    /** Send record: remote key of a read or write (int). */
    public static final int WR_RKEY = 24;
    /** Send record: the key to invalidate (send-with-invalidate, local invalidate) (int). */
    public static final int WR_INVALIDATE = 28;
    /** Send record: memory window to bind (long pointer). */
    public static final int WR_BIND_MW = 32;
    /** Send record: memory region the window is bound to (long pointer). */
    public static final int WR_BIND_MR = 40;
    /** Send record: first address of the window (long). */
    public static final int WR_BIND_ADDR = 48;
    /** Send record: length of the window (long). */
    public static final int WR_BIND_LENGTH = 56;
    /** Send record: the window's new remote key (int). */
    public static final int WR_BIND_RKEY = 64;
    /** Send record: the window's access flags (int, ibv_access_flags). */
    public static final int WR_BIND_ACCESS = 68;
    /** Send record: number of scatter/gather elements that follow (int). */
    public static final int WR_NUM_SGE = 72;
    /** Send record: first scatter/gather element. */
    public static final int WR_SGE = 80;

    // --- receive work request record (postRecv)
    /** Receive record: wr_id (long). */
    public static final int RECV_ID = 0;
    /** Receive record: number of scatter/gather elements that follow (int). */
    public static final int RECV_NUM_SGE = 8;
    /** Receive record: first scatter/gather element. */
    public static final int RECV_SGE = 16;

    // --- scatter/gather element: address (long), length (int), lkey (int)
    /** Size of one scatter/gather element in a record. */
    public static final int SGE_SIZE = 16;

    // --- completion record (pollCq)
    /** Completion record: wr_id (long). */
    public static final int WC_ID = 0;
    /** Completion record: ibv_wc_status (int). */
    public static final int WC_STATUS = 8;
    /** Completion record: ibv_wc_opcode (int). */
    public static final int WC_OPCODE = 12;
    /** Completion record: byte_len (int). */
    public static final int WC_BYTE_LEN = 16;
    /** Completion record: wc_flags (int). */
    public static final int WC_FLAGS = 20;
    /** Completion record: the invalidated rkey, or immediate data (the union of struct ibv_wc) (int). */
    public static final int WC_INVALIDATED = 24;
    /** Completion record: vendor error (int). */
    public static final int WC_VENDOR_ERR = 28;
    /** Size of one completion record. */
    public static final int WC_SIZE = 32;

    // --- rdma_cm event record (getCmEvent)
    /** Event record: rdma_cm_event_type (int). */
    public static final int EV_TYPE = 0;
    /** Event record: status (int). */
    public static final int EV_STATUS = 4;
    /** Event record: context of the identifier the event is for (long). */
    public static final int EV_ID_CONTEXT = 8;
    /** Event record: the identifier (long pointer). */
    public static final int EV_ID = 16;
    /** Event record: context of the listening identifier, connect requests only (long). */
    public static final int EV_LISTEN_CONTEXT = 24;
    /** Event record: responder_resources, in the local point of view (int). */
    public static final int EV_RESPONDER_RESOURCES = 32;
    /** Event record: initiator_depth, in the local point of view (int). */
    public static final int EV_INITIATOR_DEPTH = 36;
    /** Event record: private data length (int). */
    public static final int EV_PRIVATE_DATA_LEN = 40;
    /** Event record: private data bytes. */
    public static final int EV_PRIVATE_DATA = 48;
    /** Size of an event record (room for the largest private data, 256 bytes). */
    public static final int EV_SIZE = 48 + 256;

    // --- operations in send records
    /** Send. */
    public static final int OP_SEND = 0;
    /** Send with invalidate. */
    public static final int OP_SEND_INV = 1;
    /** RDMA Write. */
    public static final int OP_WRITE = 2;
    /** RDMA Read. */
    public static final int OP_READ = 3;
    /** Local invalidate. */
    public static final int OP_LOCAL_INV = 4;
    /** Bind a type 2 memory window. */
    public static final int OP_BIND_MW = 5;

    // --- ibv_send_flags
    /** IBV_SEND_FENCE. */
    public static final int SEND_FENCE = 1;
    /** IBV_SEND_SIGNALED. */
    public static final int SEND_SIGNALED = 1 << 1;
    /** IBV_SEND_SOLICITED. */
    public static final int SEND_SOLICITED = 1 << 2;
    /** IBV_SEND_INLINE. */
    public static final int SEND_INLINE = 1 << 3;

    // --- ibv_access_flags
    /** IBV_ACCESS_LOCAL_WRITE. */
    public static final int ACCESS_LOCAL_WRITE = 1;
    /** IBV_ACCESS_REMOTE_WRITE. */
    public static final int ACCESS_REMOTE_WRITE = 1 << 1;
    /** IBV_ACCESS_REMOTE_READ. */
    public static final int ACCESS_REMOTE_READ = 1 << 2;
    /** IBV_ACCESS_MW_BIND. */
    public static final int ACCESS_MW_BIND = 1 << 4;

    // --- queryDevice result indices
    /** queryDevice: max_mr_size. */
    public static final int DEV_MAX_MR_SIZE = 0;
    /** queryDevice: max_qp_wr. */
    public static final int DEV_MAX_QP_WR = 1;
    /** queryDevice: max_sge. */
    public static final int DEV_MAX_SGE = 2;
    /** queryDevice: max_sge_rd (0 when the device does not say). */
    public static final int DEV_MAX_SGE_RD = 3;
    /** queryDevice: max_cqe. */
    public static final int DEV_MAX_CQE = 4;
    /** queryDevice: max_qp_rd_atom (the largest IRD). */
    public static final int DEV_MAX_QP_RD_ATOM = 5;
    /** queryDevice: max_qp_init_rd_atom (the largest ORD). */
    public static final int DEV_MAX_QP_INIT_RD_ATOM = 6;
    /** queryDevice: device_cap_flags. */
    public static final int DEV_CAP_FLAGS = 7;
    /** queryDevice: max_mw. */
    public static final int DEV_MAX_MW = 8;
    /** queryDevice: transport type (0 InfiniBand, 1 iWARP). */
    public static final int DEV_TRANSPORT = 9;
    /** queryDevice: link layer of port 1 (1 InfiniBand, 2 Ethernet). */
    public static final int DEV_LINK_LAYER = 10;
    /** queryDevice: state of port 1 (4 = active). */
    public static final int DEV_PORT_STATE = 11;
    /** queryDevice: vendor_id. */
    public static final int DEV_VENDOR_ID = 12;
    /** queryDevice: active_speed of port 1 (IBV_SPEED_* bits). */
    public static final int DEV_ACTIVE_SPEED = 13;
    /** queryDevice: active_width of port 1 (IBV_WIDTH_* bits). */
    public static final int DEV_ACTIVE_WIDTH = 14;
    /** Number of values queryDevice returns. */
    public static final int DEV_FIELDS = 15;

    /** IBV_DEVICE_MEM_WINDOW_TYPE_2A. */
    public static final long CAP_MEM_WINDOW_TYPE_2A = 1L << 23;
    /** IBV_DEVICE_MEM_WINDOW_TYPE_2B. */
    public static final long CAP_MEM_WINDOW_TYPE_2B = 1L << 24;

    private VerbsNative() {
    }

    // ------------------------------------------------------------------ devices

    /**
     * Lists the RDMA devices (ibv_get_device_list).
     *
     * @return the device names
     * @throws NativeException when the list cannot be had, for example without kernel support
     */
    public static native String[] deviceNames() throws NativeException;

    /**
     * Finds which local IPv4 and IPv6 addresses rdma_cm can bind to, and on which device
     * (getifaddrs, rdma_bind_addr).
     *
     * @return pairs: address (dotted quad, or IPv6 text with a numeric scope such as
     *         {@code fe80::1%3}), device name
     * @throws NativeException when the interfaces cannot be listed
     */
    public static native String[] addressDevices() throws NativeException;

    /**
     * The name of the device of a verbs context.
     *
     * @param context an ibv_context pointer
     * @return the device name
     */
    public static native String deviceName(long context);

    /**
     * Queries a device and its first port (ibv_query_device, ibv_query_port).
     *
     * @param context an ibv_context pointer
     * @return the values indexed by the {@code DEV_*} constants
     * @throws NativeException on failure
     */
    public static native long[] queryDevice(long context) throws NativeException;

    /**
     * Finds the most inline data a reliable-connection queue pair can be created with, by creating
     * throw-away queue pairs.
     *
     * @param context an ibv_context pointer
     * @param limit the most to try
     * @return the inline limit, 0 when inline data is not supported
     * @throws NativeException when not even a queue pair without inline data can be created
     */
    public static native int probeMaxInline(long context, int limit) throws NativeException;

    // ------------------------------------------------------------------ rdma_cm

    /**
     * The file descriptor of an rdma_cm event channel, made non-blocking.
     *
     * @param channel an rdma_event_channel pointer
     * @return the descriptor
     * @throws NativeException on failure
     */
    public static native int eventChannelFd(long channel) throws NativeException;

    /**
     * Creates a reliable-connection rdma_cm identifier (rdma_create_id, RDMA_PS_TCP).
     *
     * @param channel an rdma_event_channel pointer
     * @param context the value events for this identifier carry
     * @return an rdma_cm_id pointer
     * @throws NativeException on failure
     */
    public static native long createCmId(long channel, long context) throws NativeException;

    /**
     * Sets the value events for an identifier carry.
     *
     * @param id an rdma_cm_id pointer
     * @param context the new value
     */
    public static native void setCmIdContext(long id, long context);

    /**
     * The verbs context an identifier is bound to.
     *
     * @param id an rdma_cm_id pointer
     * @return an ibv_context pointer, 0 while unbound
     */
    public static native long cmIdContext(long id);

    /**
     * Binds an identifier to a local address (rdma_bind_addr).
     *
     * @param id an rdma_cm_id pointer
     * @param address 4 address bytes (IPv4) or 16 (IPv6)
     * @param scopeId the IPv6 scope (interface index) of a link-local address, else 0
     * @param port the port, 0 for any
     * @throws NativeException on failure
     */
    public static native void bindAddr(long id, byte[] address, int scopeId, int port) throws NativeException;

    /**
     * Binds an identifier to a local socket address, IPv4 or IPv6 (rdma_bind_addr).
     *
     * @param id an rdma_cm_id pointer
     * @param address the address and port (0 for any)
     * @throws NativeException on failure
     */
    public static void bind(long id, InetSocketAddress address) throws NativeException {
        bindAddr(id, address.getAddress().getAddress(), scopeId(address.getAddress()), address.getPort());
    }

    /**
     * The local (or remote) address of an identifier.
     *
     * @param id an rdma_cm_id pointer
     * @param remote {@code true} for the peer's address
     * @return IPv4: 4 address bytes and the port (2 bytes, network order); IPv6: 16 address
     *         bytes, the port and the scope identifier (4 bytes, network order); {@code null}
     *         when unknown (see {@link #socketAddress})
     */
    public static native byte[] address(long id, boolean remote);

    /**
     * Decodes what {@link #address} returns.
     *
     * @param a its result
     * @return the socket address, {@code null} for {@code null} or a form it does not know
     */
    public static InetSocketAddress socketAddress(byte[] a) {
        if (a == null || (a.length != 6 && a.length != 22)) {
            return null;
        }
        int ip = a.length == 6 ? 4 : 16;
        int port = ((a[ip] & 0xff) << 8) | (a[ip + 1] & 0xff);
        try {
            byte[] bytes = Arrays.copyOf(a, ip);
            if (ip == 4) {
                return new InetSocketAddress(InetAddress.getByAddress(bytes), port);
            }
            int scope = ByteBuffer.wrap(a, 18, 4).getInt();
            return new InetSocketAddress(scope == 0 ? InetAddress.getByAddress(bytes)
                    : Inet6Address.getByAddress(null, bytes, scope), port);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /** The IPv6 scope identifier of an address (link-local), 0 for IPv4 and global IPv6. */
    static int scopeId(InetAddress a) {
        return a instanceof Inet6Address ? ((Inet6Address) a).getScopeId() : 0;
    }

    /**
     * Listens (rdma_listen).
     *
     * @param id a bound rdma_cm_id pointer
     * @param backlog the backlog
     * @throws NativeException on failure
     */
    public static native void listen(long id, int backlog) throws NativeException;

    /**
     * Starts address resolution (rdma_resolve_addr); completes with an ADDR_RESOLVED or ADDR_ERROR
     * event.
     *
     * @param id an rdma_cm_id pointer
     * @param address the peer's address: 4 bytes (IPv4) or 16 (IPv6)
     * @param scopeId the IPv6 scope (interface index) of a link-local address, else 0
     * @param port the peer's port
     * @param timeoutMs time limit
     * @throws NativeException on failure
     */
    public static native void resolveAddr(long id, byte[] address, int scopeId, int port, int timeoutMs)
            throws NativeException;

    /**
     * Starts route resolution (rdma_resolve_route).
     *
     * @param id an rdma_cm_id pointer
     * @param timeoutMs time limit
     * @throws NativeException on failure
     */
    public static native void resolveRoute(long id, int timeoutMs) throws NativeException;

    /**
     * Sends a connection request (rdma_connect).
     *
     * @param id an rdma_cm_id pointer with a queue pair
     * @param privateData bytes for the peer, or {@code null}
     * @param ird responder_resources
     * @param ord initiator_depth
     * @param retryCount transport retries
     * @param rnrRetryCount receiver-not-ready retries
     * @throws NativeException on failure
     */
    public static native void connect(long id, byte[] privateData, int ird, int ord, int retryCount,
            int rnrRetryCount) throws NativeException;

    /**
     * Accepts a connection request (rdma_accept); moves the queue pair to RTS with the given IRD and
     * ORD before the peer hears of it.
     *
     * @param id the request's rdma_cm_id pointer, with a queue pair
     * @param privateData bytes for the peer, or {@code null}
     * @param ird responder_resources
     * @param ord initiator_depth
     * @param rnrRetryCount receiver-not-ready retries
     * @throws NativeException on failure
     */
    public static native void accept(long id, byte[] privateData, int ird, int ord, int rnrRetryCount)
            throws NativeException;

    /**
     * Rejects a connection request (rdma_reject).
     *
     * @param id the request's rdma_cm_id pointer
     * @param privateData bytes for the peer, or {@code null}
     * @throws NativeException on failure
     */
    public static native void reject(long id, byte[] privateData) throws NativeException;

    /**
     * Disconnects (rdma_disconnect); the queue pair moves to the error state and flushes.
     *
     * @param id an rdma_cm_id pointer
     * @throws NativeException on failure
     */
    public static native void disconnect(long id) throws NativeException;

    /**
     * Destroys an identifier (rdma_destroy_id).
     *
     * @param id an rdma_cm_id pointer
     * @throws NativeException on failure
     */
    public static native void destroyCmId(long id) throws NativeException;

    /**
     * Takes the next event from an event channel, copies it into {@code out} (layout {@code EV_*})
     * and acknowledges it. Does not block.
     *
     * @param channel an rdma_event_channel pointer whose descriptor is non-blocking
     * @param out a direct buffer of at least {@link #EV_SIZE} bytes
     * @return {@code true} when an event was copied
     * @throws NativeException on failure
     */
    public static native boolean getCmEvent(long channel, ByteBuffer out) throws NativeException;

    // ------------------------------------------------------------------ queue pairs

    /**
     * Creates a reliable-connection queue pair on an identifier (rdma_create_qp); every send-queue
     * request is signaled.
     *
     * @param id an rdma_cm_id pointer bound to a device
     * @param pd an ibv_pd pointer of that device
     * @param sendCq an ibv_cq pointer
     * @param recvCq an ibv_cq pointer
     * @param sendWr send queue depth
     * @param recvWr receive queue depth
     * @param sendSge send scatter/gather limit
     * @param recvSge receive scatter/gather limit
     * @param inline inline data limit
     * @param capsOut receives the granted max_send_wr, max_recv_wr, max_send_sge, max_recv_sge,
     *        max_inline_data
     * @return the ibv_qp pointer
     * @throws NativeException on failure
     */
    public static native long createQp(long id, long pd, long sendCq, long recvCq, int sendWr, int recvWr,
            int sendSge, int recvSge, int inline, int[] capsOut) throws NativeException;

    /**
     * Destroys the queue pair of an identifier (rdma_destroy_qp).
     *
     * @param id an rdma_cm_id pointer
     */
    public static native void destroyQp(long id);

    /**
     * Moves a queue pair to the error state, flushing its outstanding requests.
     *
     * @param qp an ibv_qp pointer
     * @throws NativeException on failure
     */
    public static native void qpToError(long qp) throws NativeException;

    /**
     * Posts send-queue work requests (ibv_post_send) described by records in native memory. Counts
     * are checked before anything is posted (1 to 65536 records of 0 to 4096 elements).
     *
     * @param qp an ibv_qp pointer
     * @param records address of the first record
     * @param count number of records
     * @throws NativeException on failure; where the device refused one request of several, those
     *         before it were posted and will complete: {@link NativeException#posted()} says how many
     */
    public static native void postSend(long qp, long records, int count) throws NativeException;

    /**
     * Posts one send-queue request (ibv_post_send) of at most one element, given as arguments
     * rather than a record: the common request, without the record's writes. Not for window binds.
     *
     * @param qp an ibv_qp pointer
     * @param wrId the request's id
     * @param op one of the {@code OP_*} constants but {@link #OP_BIND_MW}
     * @param flags ibv_send_flags
     * @param remoteAddr remote address of a read or write
     * @param rkey remote key of a read or write
     * @param invalidate the key a send-with-invalidate or local invalidate invalidates
     * @param sges 0 or 1: whether the element below is named
     * @param address the element's address
     * @param length the element's length
     * @param lkey the element's local key
     * @throws NativeException on failure ({@link NativeException#posted()} is 0)
     */
    public static native void postSendOne(long qp, long wrId, int op, int flags, long remoteAddr, int rkey,
            int invalidate, int sges, long address, int length, int lkey) throws NativeException;

    /**
     * Posts one receive (ibv_post_recv) described by a record in native memory.
     *
     * @param qp an ibv_qp pointer
     * @param record address of the record
     * @throws NativeException on failure
     */
    public static native void postRecv(long qp, long record) throws NativeException;

    // ------------------------------------------------------------------ memory

    /**
     * The address of a direct buffer's first byte.
     *
     * @param buffer a direct buffer
     * @return the address, 0 for a heap buffer
     */
    public static native long bufferAddress(ByteBuffer buffer);

    /**
     * Registers memory (ibv_reg_mr).
     *
     * @param pd an ibv_pd pointer
     * @param address the first byte
     * @param length the number of bytes
     * @param access ibv_access_flags
     * @param keysOut receives lkey and rkey
     * @return the ibv_mr pointer
     * @throws NativeException on failure
     */
    public static native long regMr(long pd, long address, long length, int access, int[] keysOut)
            throws NativeException;

    /**
     * Deregisters memory (ibv_dereg_mr).
     *
     * @param mr an ibv_mr pointer
     * @throws NativeException on failure
     */
    public static native void deregMr(long mr) throws NativeException;

    /**
     * Allocates a type 2 memory window (ibv_alloc_mw).
     *
     * @param pd an ibv_pd pointer
     * @param rkeyOut receives the window's initial rkey
     * @return the ibv_mw pointer
     * @throws NativeException on failure
     */
    public static native long allocMw(long pd, int[] rkeyOut) throws NativeException;

    /**
     * Deallocates a memory window (ibv_dealloc_mw), revoking all access through it.
     *
     * @param mw an ibv_mw pointer
     * @throws NativeException on failure
     */
    public static native void deallocMw(long mw) throws NativeException;

    // ------------------------------------------------------------------ completion queues

    /**
     * Polls completions (ibv_poll_cq) into records in native memory.
     *
     * @param cq an ibv_cq pointer
     * @param records address of the first record
     * @param max the most to poll
     * @return the number polled
     * @throws NativeException on failure
     */
    public static native int pollCq(long cq, long records, int max) throws NativeException;

    /**
     * Resizes a completion queue (ibv_resize_cq).
     *
     * @param cq an ibv_cq pointer
     * @param cqe the new minimum number of entries
     * @return the number of entries granted
     * @throws NativeException on failure
     */
    public static native int resizeCq(long cq, int cqe) throws NativeException;

    /**
     * The number of entries of a completion queue.
     *
     * @param cq an ibv_cq pointer
     * @return the cqe field
     */
    public static native int cqEntries(long cq);

    /**
     * The file descriptor of a completion channel, made non-blocking.
     *
     * @param channel an ibv_comp_channel pointer
     * @return the descriptor
     * @throws NativeException on failure
     */
    public static native int compChannelFd(long channel) throws NativeException;

    /**
     * The file descriptor of a device context's asynchronous events, made non-blocking.
     *
     * @param context an ibv_context pointer
     * @return the descriptor
     * @throws NativeException on failure
     */
    public static native int asyncFd(long context) throws NativeException;

    /**
     * Takes and acknowledges the next asynchronous event of a context. Does not block.
     *
     * @param context an ibv_context pointer
     * @param out receives the event type and the pointer of the queue pair or completion queue
     * @return {@code true} when an event was taken
     * @throws NativeException on failure
     */
    public static native boolean getAsyncEvent(long context, long[] out) throws NativeException;

    // ------------------------------------------------------------------ waiting

    /**
     * Creates an eventfd for waking a thread blocked in {@link #poll}.
     *
     * @return the descriptor
     * @throws NativeException on failure
     */
    public static native int eventFd() throws NativeException;

    /**
     * Makes an eventfd readable.
     *
     * @param fd the descriptor
     */
    public static native void signalEventFd(int fd);

    /**
     * Reads an eventfd back to zero.
     *
     * @param fd the descriptor
     */
    public static native void drainEventFd(int fd);

    /**
     * Closes a descriptor created by {@link #eventFd}.
     *
     * @param fd the descriptor
     */
    public static native void closeFd(int fd);

    /**
     * Waits until one of the descriptors is readable (poll).
     *
     * @param fds the descriptors
     * @param count how many of them to watch
     * @param timeoutMs the longest wait, -1 for no limit
     * @param readyOut receives, per descriptor, whether it is readable (non-zero revents)
     * @return the number of readable descriptors, 0 on timeout
     * @throws NativeException on failure other than EINTR
     */
    public static native int poll(int[] fds, int count, int timeoutMs, int[] readyOut) throws NativeException;
}
