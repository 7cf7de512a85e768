package org.smbdirect.rdma.verbs.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * The native records of one endpoint's work requests, in the layout {@link VerbsNative#postSend}
 * and {@link VerbsNative#postRecv} read, built from the consumer's scatter/gather lists after
 * checking each element (registered with this endpoint, valid, inside its region, writable where
 * the device writes). The send records form a chain: requests posted with {@link
 * RequestFlags#DEFER} wait in it, up to {@link #MAX_CHAIN}, and reach the device with the next
 * request posted without it, in one {@code ibv_post_send} (on Soft-RoCE one system call). A
 * request of at most one element that reaches the device at once, with nothing deferred before it
 * (most sends and RDMA operations), is posted <em>lone</em>: from fields, as arguments of {@link
 * VerbsNative#postSendOne}, without a record, and an inline one from registered memory without a
 * copy (the device copies inline bytes during the post). In the guest a record's writes and the
 * copy cost a 64-byte send 1.6 us. The send chain, the lone request and the inline buffer are used
 * under the endpoint's send lock, the receive record under its receive lock.
 */
final class WorkRequestRecords {
    /** Send requests one chain holds: a longer burst is posted in pieces of this many. */
    static final int MAX_CHAIN = 16;
    private final VerbsEndpoint endpoint;
    private final ByteBuffer send;
    /** The send chain's address. */
    final long sendAddress;
    private final int inlineThreshold;
    private final ByteBuffer inline;
    private final long inlineAddress;
    /** Where the next send record starts in the chain. */
    private int base;
    /** Send records in the chain. */
    private int chained;
    /** Bytes of the inline buffer the chain's records use. */
    private int inlineUsed;
    /** Inline bytes of the record being built. */
    private int inlineBytes;
    private final ByteBuffer receive;
    /** The receive record's address. */
    final long receiveAddress;
    /** Bytes the send elements filled last name in total. */
    private int sendBytes;
    /** The regions the receive elements filled last name: one, an array, or {@code null}. */
    private Object receiveRegions;
    /** Whether the request being built is lone: in the fields below, not in the chain. */
    private boolean lone;
    private long loneId;
    private int loneOp;
    private int loneFlags;
    private long loneRemote;
    private int loneRkey;
    private int loneInvalidate;
    private int loneSges;
    private long loneAddress;
    private int loneLength;
    private int loneKey;

    WorkRequestRecords(VerbsEndpoint endpoint, int maxSendSge, int maxReceiveSge, int inlineThreshold) {
        this.endpoint = endpoint;
        this.send = direct(MAX_CHAIN * (VerbsNative.WR_SGE + VerbsNative.SGE_SIZE * Math.max(1, maxSendSge)));
        this.sendAddress = VerbsNative.bufferAddress(send);
        this.receive = direct(VerbsNative.RECV_SGE + VerbsNative.SGE_SIZE * maxReceiveSge);
        this.receiveAddress = VerbsNative.bufferAddress(receive);
        this.inlineThreshold = inlineThreshold;
        this.inline = direct(MAX_CHAIN * Math.max(1, inlineThreshold));
        this.inlineAddress = VerbsNative.bufferAddress(inline);
    }

    private static ByteBuffer direct(int size) {
        return ByteBuffer.allocateDirect(size).order(ByteOrder.nativeOrder());
    }

    // ------------------------------------------------------------------ send chain (send lock)

    /** Send records in the chain, the one being built excluded. */
    int chained() {
        return chained;
    }

    /** Whether the chain holds as many records as it may. */
    boolean full() {
        return chained == MAX_CHAIN;
    }

    /** The record being built, with {@code sges} elements, joins the chain (a lone request: is ready to post). */
    void commit(int sges) {
        if (lone) {
            chained = 1;
            return;
        }
        base += VerbsNative.WR_SGE + sges * VerbsNative.SGE_SIZE;
        inlineUsed += inlineBytes;
        inlineBytes = 0;
        chained++;
    }

    /** The chain was posted (or abandoned): it starts again empty. */
    void clear() {
        base = 0;
        chained = 0;
        inlineUsed = 0;
        discard();
    }

    /** The request being built is not posted (the connection is ending). */
    void discard() {
        inlineBytes = 0;
        lone = false;
    }

    /**
     * The lone request, as {@link VerbsNative#postSendOne} receives it: id, operation, flags,
     * remote address, rkey, key to invalidate, elements, address, length, lkey; {@code null} when
     * the chain is not one lone request (for tests).
     */
    long[] loneRequest() {
        return lone && chained == 1 ? new long[] {loneId, loneOp, loneFlags, loneRemote, loneRkey, loneInvalidate,
            loneSges, loneAddress, loneLength, loneKey} : null;
    }

    /** The inline buffer's address (for tests). */
    long inlineAddress() {
        return inlineAddress;
    }

    /**
     * Hands the chain to the device: one {@code ibv_post_send}, of a lone request's fields or of
     * the records. The caller holds the queue pair (the endpoint's native read lock) and clears
     * the chain afterwards, whether the post succeeded or not.
     */
    void post(long qp) throws NativeException {
        if (lone) {
            VerbsNative.postSendOne(qp, loneId, loneOp, loneFlags, loneRemote, loneRkey, loneInvalidate, loneSges,
                    loneAddress, loneLength, loneKey);
        } else {
            VerbsNative.postSend(qp, sendAddress, chained);
        }
    }

    /**
     * Fills the send record's elements: the consumer's registered elements (checked; an RDMA Read
     * needs write access), or for {@code inline} one element naming a copy of the bytes. A request
     * of at most one element posted {@code atOnce} (not deferred) with the chain empty is lone
     * instead: its element is kept in fields, and an inline one from registered memory is not
     * copied. Returns the number of elements; {@link #sendBytes} their total length.
     */
    int sendElements(int op, Sge[] sgl, int count, boolean inline, boolean atOnce) throws RdmaException {
        lone = false;
        if (atOnce && count <= 1 && chained == 0) {
            return loneElement(op, sgl, count, inline);
        }
        long total;
        int n = 0;
        inlineBytes = 0;
        if (inline) {
            total = gatherInline(sgl, count);
            if (total > 0) {
                putSge(send, base + VerbsNative.WR_SGE, inlineAddress + inlineUsed, (int) total, 0);
                inlineBytes = (int) total;
                n = 1;
            }
        } else {
            total = 0;
            for (int i = 0; i < count; i++) {
                VerbsMemoryRegion r = element(sgl[i], op == VerbsNative.OP_READ);
                total += sgl[i].length();
                if (sgl[i].length() > 0) {
                    putSge(send, base + VerbsNative.WR_SGE + n * VerbsNative.SGE_SIZE, r.address + sgl[i].offset(),
                            sgl[i].length(), r.lkey);
                    n++;
                }
            }
            if (total > Integer.MAX_VALUE) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "a request moves at most 2 GiB");
            }
        }
        sendBytes = (int) total;
        return n;
    }

    /**
     * A lone request's element, checked as in a record: the address of its registered memory (an
     * inline one's bytes are read by the post itself), or of a copy of unregistered inline bytes.
     */
    private int loneElement(int op, Sge[] sgl, int count, boolean inline) throws RdmaException {
        inlineBytes = 0;
        long address = 0;
        int length = 0;
        int key = 0;
        if (count == 1) {
            Sge s = sgl[0];
            if (inline && s != null && s.region() == null) {
                gatherInline(sgl, 1);
                inlineBytes = s.length();
                address = inlineAddress + inlineUsed;
            } else {
                if (inline) {
                    inlineTotal(sgl, 1);
                }
                VerbsMemoryRegion r = element(s, op == VerbsNative.OP_READ);
                address = r.address + s.offset();
                key = r.lkey;
            }
            length = s.length();
        }
        loneSges = length > 0 ? 1 : 0;
        loneAddress = address;
        loneLength = length;
        loneKey = key;
        sendBytes = length;
        lone = true;
        return loneSges;
    }

    /** The total length of the elements {@link #sendElements} filled. */
    int sendBytes() {
        return sendBytes;
    }

    /** Fills the send record's memory window bind of {@code r} (under its token, with its remote access). */
    void bind(VerbsMemoryRegion r) {
        discard();
        send.putLong(base + VerbsNative.WR_BIND_MW, r.mw);
        send.putLong(base + VerbsNative.WR_BIND_MR, r.mr);
        send.putLong(base + VerbsNative.WR_BIND_ADDR, r.address);
        send.putLong(base + VerbsNative.WR_BIND_LENGTH, r.length);
        send.putInt(base + VerbsNative.WR_BIND_RKEY, r.token);
        send.putInt(base + VerbsNative.WR_BIND_ACCESS, EndpointRegistrations.remoteAccessFlags(r.access));
    }

    /** Fills the send record's common fields; its elements (or bind) are filled already. */
    void sendRequest(long wrId, int op, int ibvFlags, long remoteOffset, int rkey, int invalidate, int sges) {
        if (lone) {
            loneId = wrId;
            loneOp = op;
            loneFlags = ibvFlags;
            loneRemote = remoteOffset;
            loneRkey = rkey;
            loneInvalidate = invalidate;
            return; // the element is in the fields already
        }
        send.putLong(base + VerbsNative.WR_ID, wrId);
        send.putInt(base + VerbsNative.WR_OPCODE, op);
        send.putInt(base + VerbsNative.WR_FLAGS, ibvFlags);
        send.putLong(base + VerbsNative.WR_REMOTE_ADDR, remoteOffset);
        send.putInt(base + VerbsNative.WR_RKEY, rkey);
        send.putInt(base + VerbsNative.WR_INVALIDATE, invalidate);
        send.putInt(base + VerbsNative.WR_NUM_SGE, sges);
    }

    // ------------------------------------------------------------------ receive record (receive lock)

    /**
     * Fills the receive record from the consumer's elements (checked, writable) and its id.
     * {@link #receiveRegions} names the regions, so that a completion can tell a deregistered one.
     */
    void receiveRequest(long wrId, Sge[] sgl, int count) throws RdmaException {
        int n = 0;
        Object named = null;
        for (int i = 0; i < count; i++) {
            VerbsMemoryRegion r = element(sgl[i], true);
            named = i == 0 ? r : i == 1 ? new VerbsMemoryRegion[] {(VerbsMemoryRegion) named, r} : grow(named, r);
            if (sgl[i].length() > 0) {
                putSge(receive, VerbsNative.RECV_SGE + n * VerbsNative.SGE_SIZE, r.address + sgl[i].offset(),
                        sgl[i].length(), r.lkey);
                n++;
            }
        }
        receive.putLong(VerbsNative.RECV_ID, wrId);
        receive.putInt(VerbsNative.RECV_NUM_SGE, n);
        receiveRegions = named;
    }

    /** The send record, read-only (what the native post reads; for tests). */
    ByteBuffer sendRecord() {
        return send.asReadOnlyBuffer().order(ByteOrder.nativeOrder());
    }

    /** The receive record, read-only (for tests). */
    ByteBuffer receiveRecord() {
        return receive.asReadOnlyBuffer().order(ByteOrder.nativeOrder());
    }

    /** The regions the last receive record names. */
    Object receiveRegions() {
        return receiveRegions;
    }

    /** Copies the bytes of an inline request into the inline buffer; returns their number. */
    private long gatherInline(Sge[] sgl, int count) throws RdmaException {
        long total = inlineTotal(sgl, count);
        int at = 0;
        for (int i = 0; i < count; i++) {
            Sge s = sgl[i];
            try {
                if (s.region() != null) {
                    VerbsMemoryRegion r = element(s, false);
                    inline.put(inlineUsed + at, r.registeredView(), s.offset(), s.length());
                } else {
                    inline.put(inlineUsed + at, s.inlineData(), s.offset(), s.length());
                }
            } catch (IndexOutOfBoundsException e) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "element " + i + " lies outside its buffer");
            }
            at += s.length();
        }
        return total;
    }

    /** Checks the elements of an inline request and returns their total length, at most the threshold. */
    private long inlineTotal(Sge[] sgl, int count) throws RdmaException {
        long total = 0;
        for (int i = 0; i < count; i++) {
            Sge s = sgl[i];
            if (s == null || (s.region() == null && s.inlineData() == null)) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "element " + i + " is not set");
            }
            if (s.offset() < 0 || s.length() < 0) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "element " + i + " has a negative offset or length");
            }
            total += s.length();
        }
        if (total > inlineThreshold) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, total + " bytes exceed the endpoint's inline "
                    + "threshold of " + inlineThreshold);
        }
        return total;
    }

    /** Checks one element naming registered memory and returns its region. */
    VerbsMemoryRegion element(Sge s, boolean writes) throws RdmaException {
        if (s == null || (s.region() == null && s.inlineData() == null)) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "an element is not set");
        }
        if (s.region() == null) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "an element names unregistered memory; only "
                    + "INLINE sends and writes may");
        }
        if (!(s.region() instanceof VerbsMemoryRegion) || ((VerbsMemoryRegion) s.region()).endpoint != endpoint) {
            throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, s + " names a region of another endpoint");
        }
        VerbsMemoryRegion r = (VerbsMemoryRegion) s.region();
        if (r.state() != VerbsMemoryRegion.VALID) {
            throw new RdmaException(RdmaStatus.INVALID_TOKEN, s + " names an invalidated or deregistered region");
        }
        if (s.offset() < 0 || s.length() < 0 || (long) s.offset() + s.length() > r.length) {
            throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, s + " lies outside its region of " + r.length
                    + " bytes");
        }
        if (writes && (r.access & Access.LOCAL_WRITE) == 0) {
            throw new RdmaException(RdmaStatus.LOCAL_PROTECTION_ERROR, s + " names a region without LOCAL_WRITE");
        }
        return r;
    }

    private static Object grow(Object named, VerbsMemoryRegion r) {
        VerbsMemoryRegion[] a = (VerbsMemoryRegion[]) named;
        VerbsMemoryRegion[] b = java.util.Arrays.copyOf(a, a.length + 1);
        b[a.length] = r;
        return b;
    }

    /** Whether a receive's region, or one of its regions, was deregistered. */
    static boolean deregistered(Object named) {
        if (named instanceof VerbsMemoryRegion) {
            return ((VerbsMemoryRegion) named).state() == VerbsMemoryRegion.DEREGISTERED;
        }
        if (named instanceof VerbsMemoryRegion[]) {
            for (VerbsMemoryRegion r : (VerbsMemoryRegion[]) named) {
                if (r.state() == VerbsMemoryRegion.DEREGISTERED) {
                    return true;
                }
            }
        }
        return false;
    }

    private static void putSge(ByteBuffer record, int at, long address, int length, int lkey) {
        record.putLong(at, address);
        record.putInt(at + 8, length);
        record.putInt(at + 12, lkey);
    }

    static void checkFlags(int flags, int allowed, String what) throws RdmaException {
        if ((flags & ~allowed) != 0) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "flags " + RequestFlags.toString(flags & ~allowed)
                    + " are not valid on a " + what);
        }
    }

    /** The verbs send flags of a request's {@link RequestFlags}: signaled, unless the ledger decides otherwise. */
    static int sendFlags(int flags) {
        int f = VerbsNative.SEND_SIGNALED;
        if ((flags & RequestFlags.READ_FENCE) != 0) {
            f |= VerbsNative.SEND_FENCE;
        }
        if ((flags & RequestFlags.SOLICIT_EVENT) != 0) {
            f |= VerbsNative.SEND_SOLICITED;
        }
        if ((flags & RequestFlags.INLINE) != 0) {
            f |= VerbsNative.SEND_INLINE;
        }
        return f;
    }

    /** The request's name in messages. */
    static String opName(int op) {
        switch (op) {
            case VerbsNative.OP_SEND:
                return "send";
            case VerbsNative.OP_SEND_INV:
                return "send with invalidate";
            case VerbsNative.OP_WRITE:
                return "RDMA Write";
            case VerbsNative.OP_READ:
                return "RDMA Read";
            case VerbsNative.OP_LOCAL_INV:
                return "local invalidate";
            default:
                return "memory window bind";
        }
    }

    /** The operation a completion of the request reports. */
    static OperationType type(int op) {
        switch (op) {
            case VerbsNative.OP_SEND:
            case VerbsNative.OP_SEND_INV:
                return OperationType.SEND;
            case VerbsNative.OP_WRITE:
                return OperationType.WRITE;
            case VerbsNative.OP_READ:
                return OperationType.READ;
            default:
                return OperationType.INVALIDATE;
        }
    }
}
