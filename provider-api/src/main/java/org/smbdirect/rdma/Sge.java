package org.smbdirect.rdma;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A scatter/gather element: a run of bytes of local memory named in a work request.
 *
 * <p>Normally an element names a range of a registered {@link MemoryRegion} by an offset relative
 * to the region's first byte. For {@link RequestFlags#INLINE} sends and writes an element may
 * instead name unregistered memory directly ({@link #inline(ByteBuffer)}).
 *
 * <p>Elements are mutable so that a consumer can reuse them without allocating. A provider reads
 * an element only during the post call that names it; once the call returns the consumer may
 * change or reuse the element.
 */
public final class Sge {
    private MemoryRegion region;
    private ByteBuffer inlineData;
    private int offset;
    private int length;

    /** Creates an empty element; {@link #set} it before use. */
    public Sge() {
    }

    /**
     * Creates an element naming a range of a region.
     *
     * @param region the registered region
     * @param offset the first byte, relative to the region's start
     * @param length the number of bytes
     * @return a new element
     */
    public static Sge of(MemoryRegion region, int offset, int length) {
        return new Sge().set(region, offset, length);
    }

    /**
     * Creates an element naming the whole of a region.
     *
     * @param region the registered region
     * @return a new element
     */
    public static Sge of(MemoryRegion region) {
        return new Sge().set(region, 0, region.length());
    }

    /**
     * Creates an element naming unregistered memory, valid only in requests posted with
     * {@link RequestFlags#INLINE}: the bytes from the buffer's position to its limit.
     *
     * @param data the data to send; only read during the post call
     * @return a new element
     */
    public static Sge inline(ByteBuffer data) {
        return new Sge().setInline(data);
    }

    /**
     * Makes this element name a range of a region. Bounds are checked by the provider at post
     * time ({@link RdmaStatus#LOCAL_PROTECTION_ERROR}).
     *
     * @param region the registered region
     * @param offset the first byte, relative to the region's start
     * @param length the number of bytes
     * @return this element
     */
    public Sge set(MemoryRegion region, int offset, int length) {
        this.region = Objects.requireNonNull(region, "region");
        this.inlineData = null;
        this.offset = offset;
        this.length = length;
        return this;
    }

    /**
     * Makes this element name unregistered memory for an inline request.
     *
     * @param data the bytes from position to limit
     * @return this element
     */
    public Sge setInline(ByteBuffer data) {
        this.inlineData = Objects.requireNonNull(data, "data");
        this.region = null;
        this.offset = data.position();
        this.length = data.remaining();
        return this;
    }

    /**
     * The region named, or {@code null} for an inline element.
     *
     * @return the region or {@code null}
     */
    public MemoryRegion region() {
        return region;
    }

    /**
     * The unregistered memory of an inline element, or {@code null}.
     *
     * @return the buffer whose bytes from {@link #offset()} for {@link #length()} are named
     */
    public ByteBuffer inlineData() {
        return inlineData;
    }

    /**
     * The first byte: relative to the region's start, or an index into {@link #inlineData()}.
     *
     * @return the offset
     */
    public int offset() {
        return offset;
    }

    /**
     * The number of bytes named.
     *
     * @return the length
     */
    public int length() {
        return length;
    }

    @Override
    public String toString() {
        if (region == null && inlineData == null) {
            return "Sge[unset]";
        }
        return region != null
                ? "Sge[token=0x" + Integer.toHexString(region.token()) + ", offset=" + offset + ", length=" + length + "]"
                : "Sge[inline, length=" + length + "]";
    }
}
