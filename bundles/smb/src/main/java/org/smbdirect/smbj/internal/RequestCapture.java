package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;

import com.hierynomus.protocol.commons.buffer.Buffer;
import com.hierynomus.smb.SMBBuffer;

/**
 * Where smbj serializes a READ or WRITE request that the transport sends through the RDMA channel:
 * the header and fixed part (MS-SMB2 2.2.19, 2.2.21: 112 bytes) go into an array, and a WRITE's
 * data straight into the direct buffer that is registered for the server to RDMA-read, in one copy
 * (smbj would otherwise grow a heap buffer to the request's size and hand it over for copying).
 * smbj writes through {@code putRawBytes}, {@code putByte} and {@code putBuffer} only.
 */
final class RequestCapture extends SMBBuffer {
    private final byte[] head = new byte[Smb2Messages.BUFFER];
    private final ByteBuffer data;
    private int written;

    /**
     * @param data where a WRITE's data goes, from its position; {@code null} for a READ (whose
     *        one-byte Buffer placeholder is dropped)
     */
    RequestCapture(ByteBuffer data) {
        this.data = data;
    }

    @Override
    public Buffer<SMBBuffer> putRawBytes(byte[] bytes, int offset, int length) {
        int toHead = Math.max(0, Math.min(length, head.length - written));
        if (toHead > 0) {
            System.arraycopy(bytes, offset, head, written, toHead);
        }
        int rest = length - toHead;
        if (rest > 0 && data != null) {
            if (rest > data.remaining()) {
                throw new IllegalStateException("smbj wrote more WRITE data than its request's Length: "
                        + (written + length - head.length) + " bytes into room for " + (data.limit()));
            }
            data.put(bytes, offset + toHead, rest);
        }
        written += length;
        return this;
    }

    @Override
    public Buffer<SMBBuffer> putByte(byte b) {
        return putRawBytes(new byte[] {b}, 0, 1);
    }

    @Override
    public Buffer<SMBBuffer> putBuffer(Buffer<? extends Buffer<?>> buffer) {
        return putRawBytes(buffer.array(), buffer.rpos(), buffer.available());
    }

    /** The header and fixed part, as smbj wrote them. */
    byte[] head() {
        if (written < head.length) {
            throw new IllegalStateException("smbj wrote only " + written + " bytes of a READ or WRITE request");
        }
        return head;
    }
}
