package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;

import javax.crypto.SecretKey;

/**
 * One large READ or WRITE of smbj's sent through the RDMA channel as several requests in flight at
 * once, and their responses made into the one response smbj waits for. smbj keeps one request in
 * flight per {@code File.read} or {@code File.write}, where the Linux and Windows clients keep
 * several of one file in flight, so that the server moves one part while it handles another.
 *
 * <p>MS-SMB2 3.2.4.1.5: a request of CreditCharge C takes the C message ids from its MessageId on.
 * Part i takes MessageId M + (the charges of the parts before it) and a share of smbj's charge, so
 * smbj's message ids and credits come out as with one request; the parts' CreditRequest add up to
 * smbj's, and the response smbj gets grants what the parts' responses granted together. Each part
 * covers its own slice of one buffer under a registration of its own (a server may invalidate a
 * part's registration with its response, MS-SMB2 3.3.5.12 and 3.3.5.13, while it still reaches
 * another). The response smbj gets is signed again when it was signed (with the session's signing
 * key, which signs requests and checks responses alike: 3.2.4.1.1, 3.2.5.1.3).
 *
 * <p>READ and WRITE share their Length and Offset fields' places (2.2.19, 2.2.21); what the parts'
 * responses add up to is each one's own ({@link SplitRead}, {@link SplitWrite}).
 */
abstract class SplitRequest {
    /** No part is smaller than this, so that a part's request and response stay a small share of it. */
    static final int MIN_PART = 1 << 20;
    private static final int CREDIT = 65536;

    final long messageId;
    final ByteBuffer buffer;
    /** "READ" or "WRITE", for messages. */
    final String command;
    /** The header and the response's fixed part, without Buffer (2.2.20, 2.2.22). */
    private final int fixedSize;
    /** The session's signing key, or {@code null}; set before the parts are sent. */
    volatile SecretKey signingKey;
    /** A part's deregistration failed: the peer may still reach the buffer, which is never reused. */
    volatile boolean reachable;
    private final int[] starts;
    private final int[] lengths;
    private final int[] charges;
    private final int[] creditRequests;
    private final byte[][] responses;
    private int arrived;
    private int interimCredits;

    /**
     * Splits smbj's request into at most {@code maxParts} parts of whole 64 KiB credits, each of at
     * least {@link #MIN_PART}; {@link #parts()} is below 2 when it stays one request.
     *
     * @param request smbj's READ or WRITE request, serialized (header and fixed part)
     * @param buffer the data: part i's slice starts at {@link #start(int)}
     * @param maxParts the most parts
     * @param command "READ" or "WRITE"
     * @param fixedSize the size of a successful response's header and fixed part
     */
    SplitRequest(byte[] request, ByteBuffer buffer, int maxParts, String command, int fixedSize) {
        this.messageId = Smb2Messages.u64(request, Smb2Messages.MESSAGE_ID);
        this.buffer = buffer;
        this.command = command;
        this.fixedSize = fixedSize;
        int length = Smb2Messages.i32(request, Smb2Messages.READ_LENGTH);
        int charge = Smb2Messages.u16(request, Smb2Messages.CREDIT_CHARGE);
        int n = Math.max(1, Math.min(Math.min(maxParts, length / MIN_PART), charge));
        int per = Math.max(CREDIT, (length / n + CREDIT - 1) / CREDIT * CREDIT);
        n = (length + per - 1) / per;
        starts = new int[n];
        lengths = new int[n];
        charges = new int[n];
        creditRequests = new int[n];
        responses = new byte[n][];
        int creditRequest = Math.max(1, Smb2Messages.u16(request, Smb2Messages.CREDITS));
        int charged = 0;
        for (int i = 0; i < n; i++) {
            starts[i] = i * per;
            lengths[i] = Math.min(per, length - starts[i]);
            // the last part takes the rest of smbj's charge, which covers at least its length
            charges[i] = i == n - 1 ? charge - charged : lengths[i] / CREDIT;
            charged += charges[i];
            creditRequests[i] = i == 0 ? Math.max(1, creditRequest - (n - 1)) : 1;
        }
    }

    final int parts() {
        return lengths.length;
    }

    final int start(int part) {
        return starts[part];
    }

    final int length(int part) {
        return lengths[part];
    }

    final long messageId(int part) {
        long id = messageId;
        for (int i = 0; i < part; i++) {
            id += charges[i];
        }
        return id;
    }

    /**
     * Part {@code part}'s request: smbj's header and fixed part with its MessageId, CreditCharge,
     * CreditRequest, Length and Offset (MS-SMB2 2.2.1.2, 2.2.19, 2.2.21); the channel and its
     * descriptors are added as for any request through the RDMA channel.
     *
     * @param request smbj's request
     * @param part which part
     * @return the part's request, header and fixed part
     */
    final byte[] request(byte[] request, int part) {
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
    final synchronized void interim(byte[] response) {
        interimCredits += Smb2Messages.u16(response, Smb2Messages.CREDITS);
    }

    /**
     * A part's final response arrived, or {@code null} for a part that was never sent.
     *
     * @param part which part
     * @param response its response, or {@code null}
     * @return whether it was the last part to arrive
     */
    final synchronized boolean arrived(int part, byte[] response) {
        if (response != null && status(response) == 0) {
            took(part, response);
        }
        responses[part] = response == null ? new byte[0] : response;
        return ++arrived == responses.length;
    }

    /** Whether one part's final response is still to come: the next to arrive is the last. */
    final synchronized boolean lastToArrive() {
        return arrived == responses.length - 1;
    }

    /**
     * A part's successful response, before it is kept (a READ's inline data goes into its slice).
     *
     * @param part which part
     * @param response its response
     */
    void took(int part, byte[] response) {
    }

    /**
     * The bytes the parts moved, in order, up to the first part that moved less than it asked for
     * or failed; 0 when the first failed. Once all parts arrived.
     *
     * @return the number of bytes from the start of the buffer that moved
     * @throws IllegalStateException when a server says it moved more than a part asked for
     */
    final synchronized int moved() {
        int total = 0;
        for (int i = 0; i < responses.length; i++) {
            byte[] r = responses[i];
            if (!succeeded(r)) {
                break;
            }
            int n = movedBy(r);
            if (n < 0 || n > lengths[i]) {
                throw new IllegalStateException("the server says it moved " + (n & 0xffffffffL) + " bytes for a "
                        + command + " of " + lengths[i]);
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
     * arrived: {@link #merged} with the credits of all parts.
     *
     * @return the response for smbj's request
     */
    final synchronized byte[] response() {
        byte[] m = merged(responses);
        int credits = interimCredits;
        for (byte[] r : responses) {
            credits += r.length >= Smb2Messages.HEADER_SIZE ? Smb2Messages.u16(r, Smb2Messages.CREDITS) : 0;
        }
        Smb2Messages.put16(m, Smb2Messages.CREDITS, Math.min(credits, 0xffff));
        Arrays.fill(m, Smb2Messages.SIGNATURE, Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE, (byte) 0);
        return m;
    }

    /** Whether the first part's response was signed, so that the one smbj gets must be too. */
    final synchronized boolean signed() {
        return (Smb2Messages.i32(responses[0], Smb2Messages.FLAGS) & Smb2Messages.SMB2_FLAGS_SIGNED) != 0;
    }

    /**
     * The response smbj gets, before its credits and signature: a copy, for {@link #response()} to
     * change. All parts arrived, under this object's lock.
     *
     * @param responses the parts' final responses, in order (empty for a part never sent)
     * @return a new array
     */
    abstract byte[] merged(byte[][] responses);

    /** How many bytes a part's successful response says moved. */
    abstract int movedBy(byte[] response);

    /** Whether the response is a successful one of at least the fixed part's size. */
    final boolean succeeded(byte[] r) {
        return r.length >= fixedSize && status(r) == 0;
    }

    static int status(byte[] r) {
        return r.length >= Smb2Messages.HEADER_SIZE ? Smb2Messages.i32(r, Smb2Messages.STATUS) : -1;
    }
}
