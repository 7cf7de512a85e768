package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;

import javax.crypto.SecretKey;

/**
 * One large READ of smbj's sent through the RDMA channel as several READs in flight at once, and
 * their responses made into the one response smbj waits for. smbj keeps one READ in flight per
 * {@code File.read}, where the Linux and Windows clients keep several of one file in flight, so
 * that the server moves one part while the client handles another.
 *
 * <p>MS-SMB2 3.2.4.1.5: a request of CreditCharge C takes the C message ids from its MessageId on.
 * Part i takes MessageId M + (the charges of the parts before it) and a share of smbj's charge, so
 * smbj's message ids and credits come out as with one request; the parts' CreditRequest add up to
 * smbj's, and the response smbj gets grants what the parts' responses granted together. Each part
 * reads its own slice of one buffer under a registration of its own (a server may invalidate a
 * part's registration with its response, MS-SMB2 3.3.5.12, while it still writes into another).
 *
 * <p>The response smbj gets is the first part's, with DataRemaining the bytes the parts moved up to
 * the first one that moved less than asked or failed (a short read, as a server may return one);
 * when the first part failed, its response as it is. Either way with the credits of all parts, and
 * signed again when it was signed (with the session's signing key, which signs requests and checks
 * responses alike: 3.2.4.1.1, 3.2.5.1.3).
 */
final class SplitRead {
    /** No part is smaller than this, so that a part's request and response stay a small share of it. */
    static final int MIN_PART = 1 << 20;
    private static final int CREDIT = 65536;

    final long messageId;
    final ByteBuffer buffer;
    /** The session's signing key, or {@code null}; set before the parts are sent. */
    volatile SecretKey signingKey;
    /** Where the merged response's data goes. */
    final ReadDestination destination;
    /** A part's deregistration failed: the peer may still reach the buffer, which is never reused. */
    volatile boolean reachable;
    private final int[] starts;
    private final int[] lengths;
    private final int[] charges;
    private final int[] creditRequests;
    private final byte[][] responses;
    private int arrived;
    private int interimCredits;

    private SplitRead(long messageId, ByteBuffer buffer, int length, int[] starts, int[] lengths, int[] charges,
            int[] requests) {
        this.messageId = messageId;
        this.buffer = buffer;
        this.starts = starts;
        this.lengths = lengths;
        this.charges = charges;
        this.creditRequests = requests;
        this.responses = new byte[lengths.length][];
        this.destination = new ReadDestination(length);
    }

    /**
     * How smbj's READ request is split, or {@code null} when it stays one request: it is split into
     * at most {@code maxParts} parts of whole 64 KiB credits, each of at least {@link #MIN_PART}.
     *
     * @param request smbj's READ request, serialized (header and fixed part)
     * @param buffer where the data goes: part i into its slice from {@link #start(int)}
     * @param maxParts the most parts ({@link org.smbdirect.smbj.SmbjOptions#readParts()})
     * @return the split, or {@code null}
     */
    static SplitRead of(byte[] request, ByteBuffer buffer, int maxParts) {
        int length = Smb2Messages.i32(request, Smb2Messages.READ_LENGTH);
        int charge = Smb2Messages.u16(request, Smb2Messages.CREDIT_CHARGE);
        int n = Math.min(Math.min(maxParts, length / MIN_PART), charge);
        if (n < 2) {
            return null;
        }
        int per = (length / n + CREDIT - 1) / CREDIT * CREDIT;
        n = (length + per - 1) / per;
        int[] starts = new int[n];
        int[] lengths = new int[n];
        int[] charges = new int[n];
        int[] requests = new int[n];
        int creditRequest = Math.max(1, Smb2Messages.u16(request, Smb2Messages.CREDITS));
        int charged = 0;
        for (int i = 0; i < n; i++) {
            starts[i] = i * per;
            lengths[i] = Math.min(per, length - starts[i]);
            // the last part takes the rest of smbj's charge, which covers at least its length
            charges[i] = i == n - 1 ? charge - charged : lengths[i] / CREDIT;
            charged += charges[i];
            requests[i] = i == 0 ? Math.max(1, creditRequest - (n - 1)) : 1;
        }
        return new SplitRead(Smb2Messages.u64(request, Smb2Messages.MESSAGE_ID), buffer, length, starts, lengths,
                charges, requests);
    }

    int parts() {
        return lengths.length;
    }

    int start(int part) {
        return starts[part];
    }

    int length(int part) {
        return lengths[part];
    }

    long messageId(int part) {
        long id = messageId;
        for (int i = 0; i < part; i++) {
            id += charges[i];
        }
        return id;
    }

    /**
     * Part {@code part}'s READ request: smbj's header and fixed part with its MessageId,
     * CreditCharge, CreditRequest, Length and Offset (MS-SMB2 2.2.1.2, 2.2.19); the channel and its
     * descriptors are added as for any READ through the RDMA channel.
     *
     * @param request smbj's READ request
     * @param part which part
     * @return the part's request, header and fixed part
     */
    byte[] request(byte[] request, int part) {
        byte[] m = Arrays.copyOf(request, Smb2Messages.BUFFER);
        long id = messageId(part);
        Smb2Messages.put32(m, Smb2Messages.MESSAGE_ID, (int) id);
        Smb2Messages.put32(m, Smb2Messages.MESSAGE_ID + 4, (int) (id >>> 32));
        Smb2Messages.put16(m, Smb2Messages.CREDIT_CHARGE, charges[part]);
        Smb2Messages.put16(m, Smb2Messages.CREDITS, creditRequests[part]);
        Smb2Messages.put32(m, Smb2Messages.READ_LENGTH, lengths[part]);
        long offset = Smb2Messages.u64(request, Smb2Messages.READ_OFFSET) + starts[part];
        Smb2Messages.put32(m, Smb2Messages.READ_OFFSET, (int) offset);
        Smb2Messages.put32(m, Smb2Messages.READ_OFFSET + 4, (int) (offset >>> 32));
        return m;
    }

    /**
     * An interim response of a part (MS-SMB2 3.2.5.1.5): smbj does not know the part's message id,
     * so it does not see it; the credits it grants go into the final response.
     *
     * @param response the interim response
     */
    synchronized void interim(byte[] response) {
        interimCredits += Smb2Messages.u16(response, Smb2Messages.CREDITS);
    }

    /**
     * A part's final response arrived, or {@code null} for a part that was never sent. A READ
     * response that carries its data inline (DataLength nonzero) has it copied into the part's slice.
     *
     * @param part which part
     * @param response its response, or {@code null}
     * @return whether it was the last part to arrive
     */
    synchronized boolean arrived(int part, byte[] response) {
        if (response != null && Smb2Messages.i32(response, Smb2Messages.STATUS) == 0) {
            int inline = Smb2Messages.i32(response, Smb2Messages.READ_RESPONSE_DATA_LENGTH);
            int at = response.length > Smb2Messages.READ_RESPONSE_DATA_OFFSET
                    ? response[Smb2Messages.READ_RESPONSE_DATA_OFFSET] & 0xff : 0;
            if (inline > 0 && inline <= lengths[part] && at >= Smb2Messages.READ_RESPONSE_BUFFER
                    && at + inline <= response.length) {
                buffer.put(starts[part], response, at, inline);
            }
        }
        responses[part] = response == null ? new byte[0] : response;
        return ++arrived == responses.length;
    }

    /**
     * The bytes the parts moved, in order, up to the first part that moved less than it asked for
     * or failed; 0 when the first failed. Once all parts arrived.
     *
     * @return the number of bytes from the start of the buffer that smbj gets
     */
    synchronized int moved() {
        int total = 0;
        for (int i = 0; i < responses.length; i++) {
            byte[] r = responses[i];
            if (!succeeded(r)) {
                break;
            }
            int n = Smb2Messages.i32(r, Smb2Messages.READ_RESPONSE_DATA_LENGTH);
            if (n == 0) {
                n = Smb2Messages.i32(r, Smb2Messages.READ_RESPONSE_DATA_REMAINING); // 2.2.20: moved by RDMA
            }
            if (n < 0 || n > lengths[i]) {
                throw new IllegalStateException("the server says it moved " + (n & 0xffffffffL) + " bytes for a READ of "
                        + lengths[i]);
            }
            total += n;
            if (n < lengths[i]) {
                break;
            }
        }
        return total;
    }

    /**
     * The response smbj gets (unsigned; the caller signs it when {@link #signed()}), once all parts
     * arrived: the first part's response with the credits of all parts, and when it succeeded with
     * DataLength 0 and DataRemaining {@link #moved()}, the data being in the buffer.
     *
     * @return the response for smbj's request
     */
    synchronized byte[] response() {
        byte[] first = responses[0];
        byte[] m;
        if (succeeded(first)) {
            // 2.2.20: StructureSize 17, the fixed part and one byte of Buffer
            m = Arrays.copyOf(first, Smb2Messages.READ_RESPONSE_BUFFER + 1);
            m[Smb2Messages.READ_RESPONSE_BUFFER] = 0;
            Smb2Messages.put32(m, Smb2Messages.READ_RESPONSE_DATA_LENGTH, 0);
            Smb2Messages.put32(m, Smb2Messages.READ_RESPONSE_DATA_REMAINING, moved());
        } else {
            m = first.clone();
        }
        int credits = interimCredits;
        for (byte[] r : responses) {
            credits += r.length >= Smb2Messages.HEADER_SIZE ? Smb2Messages.u16(r, Smb2Messages.CREDITS) : 0;
        }
        Smb2Messages.put16(m, Smb2Messages.CREDITS, Math.min(credits, 0xffff));
        Arrays.fill(m, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE, (byte) 0);
        return m;
    }

    /** Whether the first part's response was signed, so that the one smbj gets must be too. */
    synchronized boolean signed() {
        return (Smb2Messages.i32(responses[0], Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_SIGNED) != 0;
    }

    private static boolean succeeded(byte[] r) {
        return r.length >= Smb2Messages.READ_RESPONSE_BUFFER && Smb2Messages.i32(r, Smb2Messages.STATUS) == 0;
    }
}
