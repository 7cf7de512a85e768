package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.Sge;
import org.smbdirect.transport.BufferDescriptorV1;

/**
 * One upper-layer RDMA Write to or RDMA Read from a peer buffer (MS-SMBD 3.1.4.5, 3.1.4.6): the
 * segments to post, each within one peer descriptor and one local registration.
 */
final class RdmaTransfer {
    final boolean read;
    final long length;
    /** The local registration the segments name, released when the transfer ends. */
    final LocalRegistrations.Entry local;
    final Segment[] segments;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    int nextToPost;
    int completed;
    /** Neighbours in the connection's list of active transfers ({@link RdmaOperations}); no node to allocate. */
    RdmaTransfer previousActive;
    RdmaTransfer nextActive;

    private RdmaTransfer(boolean read, long length, LocalRegistrations.Entry local, Segment[] segments) {
        this.read = read;
        this.length = length;
        this.local = local;
        this.segments = segments;
    }

    boolean allPosted() {
        return nextToPost == segments.length;
    }

    boolean done() {
        return completed == segments.length;
    }

    /**
     * The peer ranges for {@code length} bytes starting {@code offset} bytes into the buffer the
     * descriptors describe (MS-SMBD 3.1.4.5 and 3.1.4.6): the offset indexes into the array by
     * consuming the elements' Length fields; the first element's Offset and Length are adjusted to
     * its trailing subsegment, the last element's Length to its leading subsegment.
     *
     * @param descriptors the peer's descriptors
     * @param offset the first byte within the described buffer
     * @param length how many bytes
     * @return the adjusted descriptors, in order; {@code descriptors} itself when the range is all of
     *         them (nothing to adjust, nothing to allocate on the common path)
     * @throws IllegalArgumentException when the range does not lie within the descriptors
     */
    static List<BufferDescriptorV1> peerRanges(List<BufferDescriptorV1> descriptors, long offset, long length) {
        if (offset < 0) {
            throw new IllegalArgumentException("offset must not be negative, was " + offset);
        }
        long total = BufferDescriptorV1.totalLength(descriptors);
        if (offset > total || length > total - offset) {
            throw new IllegalArgumentException("RDMA range [" + offset + ", " + (offset + length)
                    + ") lies beyond the " + total + " bytes the " + descriptors.size() + " descriptor(s) describe");
        }
        if (offset == 0 && length == total) {
            return descriptors;
        }
        List<BufferDescriptorV1> out = new ArrayList<>();
        int i = 0;
        long skip = offset;
        while (i < descriptors.size() && skip >= descriptors.get(i).unsignedLength()) {
            skip -= descriptors.get(i).unsignedLength();
            i++;
        }
        long left = length;
        while (left > 0) {
            BufferDescriptorV1 d = descriptors.get(i++);
            long available = d.unsignedLength() - skip;
            long take = Math.min(available, left);
            out.add(new BufferDescriptorV1(d.offset() + skip, d.token(), (int) take));
            left -= take;
            skip = 0;
        }
        return out;
    }

    /**
     * Plans a transfer: the peer ranges cut further at the boundaries of the local registrations.
     *
     * @param read RDMA Read (into the local buffer) or Write (from it)
     * @param local the local buffer's registration: regions covering its bytes from 0 in order,
     *        each {@code local.chunk} bytes except the last
     * @param localStart the local buffer's first byte of the transfer (its position)
     * @param peer the peer ranges from {@link #peerRanges}
     * @return the transfer
     */
    static RdmaTransfer plan(boolean read, LocalRegistrations.Entry local, int localStart,
            List<BufferDescriptorV1> peer) {
        int chunk = local.chunk;
        MemoryRegion first = local.regions[localStart / chunk];
        int inFirst = localStart % chunk;
        Segment[] segments;
        long length;
        if (peer.size() == 1 && peer.get(0).unsignedLength() <= first.length() - inFirst) {
            // the common case, one descriptor within one region: one segment, nothing else allocated
            BufferDescriptorV1 d = peer.get(0);
            length = d.unsignedLength();
            segments = new Segment[] {new Segment(first, inFirst, d.offset(), d.token(), (int) length)};
        } else {
            List<Segment> cut = new ArrayList<>();
            long localPos = localStart;
            for (BufferDescriptorV1 d : peer) {
                long done = 0;
                while (done < d.unsignedLength()) {
                    MemoryRegion r = local.regions[(int) (localPos / chunk)];
                    int inRegion = (int) (localPos % chunk);
                    int take = (int) Math.min(d.unsignedLength() - done, r.length() - inRegion);
                    cut.add(new Segment(r, inRegion, d.offset() + done, d.token(), take));
                    done += take;
                    localPos += take;
                }
            }
            length = localPos - localStart;
            segments = cut.toArray(new Segment[0]);
        }
        RdmaTransfer t = new RdmaTransfer(read, length, local, segments);
        for (Segment s : segments) {
            s.transfer = t;
        }
        return t;
    }

    /** One RDMA Read or Write work request. */
    static final class Segment {
        /** The transfer this belongs to; set once when planned. */
        RdmaTransfer transfer;
        final long remoteOffset;
        final int remoteToken;
        final int length;
        final Sge[] sgl;

        Segment(MemoryRegion local, int localOffset, long remoteOffset, int remoteToken, int length) {
            this.remoteOffset = remoteOffset;
            this.remoteToken = remoteToken;
            this.length = length;
            this.sgl = new Sge[] {Sge.of(local, localOffset, length)};
        }
    }

    /** Returns {@code buffer}'s bytes from position to limit as consecutive slices of at most {@code chunk}. */
    static List<ByteBuffer> chunks(ByteBuffer buffer, int chunk) {
        List<ByteBuffer> out = new ArrayList<>();
        int pos = buffer.position();
        while (pos < buffer.limit()) {
            int n = Math.min(chunk, buffer.limit() - pos);
            out.add(buffer.slice(pos, n));
            pos += n;
        }
        return out;
    }
}
