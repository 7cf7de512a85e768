package org.smbdirect.rdma.sim.internal;

import java.nio.ByteBuffer;

/**
 * Moves bytes between scatter/gather lists with absolute bulk operations only, so that no buffer
 * view is allocated. A list is {@code count} elements from {@code base} of parallel arrays
 * (region, offset, length); a source may instead be an inline byte array.
 */
final class Copy {
    private Copy() {
    }

    /**
     * Copies {@code total} bytes from a source list (or {@code inline}) to a destination list whose
     * capacity is at least {@code total}.
     */
    static void scatter(SimRegion[] sR, int[] sO, int[] sL, int sBase, int sCount, byte[] inline, int total,
            SimRegion[] dR, int[] dO, int[] dL, int dBase, int dCount) {
        int si = 0;
        int sPos = 0;
        int di = 0;
        int dPos = 0;
        int left = total;
        while (left > 0) {
            int sLen = inline != null ? total : sL[sBase + si];
            if (sPos == sLen) {
                si++;
                sPos = 0;
                continue;
            }
            int dLen = dL[dBase + di];
            if (dPos == dLen) {
                di++;
                dPos = 0;
                continue;
            }
            int n = Math.min(left, Math.min(sLen - sPos, dLen - dPos));
            ByteBuffer dst = dR[dBase + di].mem;
            int at = dO[dBase + di] + dPos;
            if (inline != null) {
                dst.put(at, inline, sPos, n);
            } else {
                dst.put(at, sR[sBase + si].mem, sO[sBase + si] + sPos, n);
            }
            sPos += n;
            dPos += n;
            left -= n;
        }
    }

    /** Copies a source list (or inline bytes) into one contiguous range of a region. */
    static void gatherInto(SimRegion[] sR, int[] sO, int[] sL, int sBase, int sCount, byte[] inline, int total,
            ByteBuffer dst, int dstOffset) {
        if (inline != null) {
            dst.put(dstOffset, inline, 0, total);
            return;
        }
        int at = dstOffset;
        for (int i = 0; i < sCount; i++) {
            int n = sL[sBase + i];
            dst.put(at, sR[sBase + i].mem, sO[sBase + i], n);
            at += n;
        }
    }

    /** Copies one contiguous range of a region into a destination list. */
    static void scatterFrom(ByteBuffer src, int srcOffset, int total, SimRegion[] dR, int[] dO, int[] dL, int dBase,
            int dCount) {
        int at = srcOffset;
        int left = total;
        for (int i = 0; i < dCount && left > 0; i++) {
            int n = Math.min(left, dL[dBase + i]);
            dR[dBase + i].mem.put(dO[dBase + i], src, at, n);
            at += n;
            left -= n;
        }
    }

    /**
     * Copies the message bytes {@code [from, from + len)} of a source list (or inline bytes) into an
     * array, for the capture.
     */
    static void extract(SimRegion[] sR, int[] sO, int[] sL, int sBase, int sCount, byte[] inline, int from,
            byte[] out, int outOffset, int len) {
        if (inline != null) {
            System.arraycopy(inline, from, out, outOffset, len);
            return;
        }
        int pos = 0;
        for (int i = 0; i < sCount && len > 0; i++) {
            int segLen = sL[sBase + i];
            if (from < pos + segLen) {
                int skip = from - pos;
                int n = Math.min(len, segLen - skip);
                sR[sBase + i].mem.get(sO[sBase + i] + skip, out, outOffset, n);
                outOffset += n;
                from += n;
                len -= n;
            }
            pos += segLen;
        }
    }
}
