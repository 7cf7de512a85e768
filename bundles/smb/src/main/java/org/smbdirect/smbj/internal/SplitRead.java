package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A large READ of smbj's as several READs in flight ({@link SplitRequest}). The response smbj gets
 * is the first part's, with DataRemaining the bytes the parts moved up to the first one that moved
 * less than asked or failed (a short read, as a server may return one: MS-SMB2 2.2.20); when the
 * first part failed, its response as it is.
 */
final class SplitRead extends SplitRequest {
    /** Where the merged response's data goes. */
    final ReadDestination destination;

    private SplitRead(byte[] request, ByteBuffer buffer, int maxParts) {
        super(request, buffer, maxParts, "READ", Smb2Messages.READ_RESPONSE_BUFFER);
        this.destination = new ReadDestination(Smb2Messages.i32(request, Smb2Messages.READ_LENGTH));
    }

    /**
     * How smbj's READ request is split, or {@code null} when it stays one request.
     *
     * @param request smbj's READ request, serialized (header and fixed part)
     * @param buffer where the data goes: part i into its slice from {@link #start(int)}
     * @param maxParts the most parts ({@link org.smbdirect.smbj.SmbjOptions#readParts()})
     * @return the split, or {@code null}
     */
    static SplitRead of(byte[] request, ByteBuffer buffer, int maxParts) {
        SplitRead s = new SplitRead(request, buffer, maxParts);
        return s.parts() < 2 ? null : s;
    }

    /** A READ response that carries its data inline (DataLength nonzero) has it copied into the part's slice. */
    @Override
    void took(int part, byte[] response) {
        int inline = Smb2Messages.i32(response, Smb2Messages.READ_RESPONSE_DATA_LENGTH);
        int at = response.length > Smb2Messages.READ_RESPONSE_DATA_OFFSET
                ? response[Smb2Messages.READ_RESPONSE_DATA_OFFSET] & 0xff : 0;
        if (inline > 0 && inline <= length(part) && at >= Smb2Messages.READ_RESPONSE_BUFFER
                && at + inline <= response.length) {
            buffer.put(start(part), response, at, inline);
        }
    }

    /** DataLength, or when the data moved by RDMA, DataRemaining (2.2.20). */
    @Override
    int movedBy(byte[] r) {
        int n = Smb2Messages.i32(r, Smb2Messages.READ_RESPONSE_DATA_LENGTH);
        return n != 0 ? n : Smb2Messages.i32(r, Smb2Messages.READ_RESPONSE_DATA_REMAINING);
    }

    /** When the first part succeeded: DataLength 0 and DataRemaining {@link #moved()}, the data being in the buffer. */
    @Override
    byte[] merged(byte[][] responses) {
        byte[] first = responses[0];
        if (!succeeded(first)) {
            return first.clone();
        }
        // 2.2.20: StructureSize 17, the fixed part and one byte of Buffer
        byte[] m = Arrays.copyOf(first, Smb2Messages.READ_RESPONSE_BUFFER + 1);
        m[Smb2Messages.READ_RESPONSE_BUFFER] = 0;
        Smb2Messages.put32(m, Smb2Messages.READ_RESPONSE_DATA_LENGTH, 0);
        Smb2Messages.put32(m, Smb2Messages.READ_RESPONSE_DATA_REMAINING, moved());
        return m;
    }
}
