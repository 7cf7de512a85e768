package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;

import org.smbdirect.transport.RegisteredBuffer;

/** An RDMA-channel request waiting for its response. */
final class PendingRequest {
    final boolean read;
    final int length;
    final ByteBuffer buffer;
    final RegisteredBuffer registration;
    /** The split READ or WRITE this request is a part of, or {@code null}. */
    final SplitRequest split;
    final int part;
    /** A whole READ's data array; {@code null} for WRITEs and parts (their split has one). */
    final ReadDestination destination;
    /**
     * A split request's last part whose registration (and the split's buffer) ends once smbj has
     * the merged response; set and read on the connection's completion thread.
     */
    boolean endsAfterHandOver;

    PendingRequest(boolean read, int length, ByteBuffer buffer, RegisteredBuffer registration) {
        this(read, length, buffer, registration, null, 0);
    }

    PendingRequest(boolean read, int length, ByteBuffer buffer, RegisteredBuffer registration, SplitRequest split,
            int part) {
        this.read = read;
        this.length = length;
        this.buffer = buffer;
        this.registration = registration;
        this.split = split;
        this.part = part;
        this.destination = read && split == null ? new ReadDestination(length) : null;
    }
}
