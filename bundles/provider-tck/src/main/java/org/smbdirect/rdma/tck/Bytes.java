package org.smbdirect.rdma.tck;

/** Byte patterns for the kit. */
final class Bytes {
    private Bytes() {
    }

    static byte[] pattern(int size, int seed) {
        byte[] a = new byte[size];
        for (int i = 0; i < size; i++) {
            a[i] = (byte) (seed * 31 + i * 7 + (i >>> 8));
        }
        return a;
    }
}
