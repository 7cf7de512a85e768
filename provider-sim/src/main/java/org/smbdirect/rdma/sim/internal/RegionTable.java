package org.smbdirect.rdma.sim.internal;

import java.security.SecureRandom;

/**
 * The live regions of one provider by token: an open-addressing table (linear probing, backward
 * shift deletion) so that a lookup on the data path neither allocates nor boxes. It also chooses
 * the tokens and remote offsets, from a {@link SecureRandom}, so that a peer cannot guess them.
 */
final class RegionTable {
    /**
     * Bits of entropy in a token: any 32-bit value but 0 that is not the token of a live region of
     * the same provider, drawn uniformly by a {@link SecureRandom}. With L live regions a guess hits
     * with probability L / (2^32 - 1), so about 32 bits while L is small.
     */
    static final int TOKEN_ENTROPY_BITS = 32;
    /**
     * Bits of entropy in a region's remote offset: bits 12 to 61 are random (page aligned, below
     * 2^62 so that offset plus length never overflows).
     */
    static final int REMOTE_OFFSET_ENTROPY_BITS = 50;
    private static final long OFFSET_MASK = ((1L << 62) - 1) & ~0xFFFL;

    private final SecureRandom random = new SecureRandom();
    // SecureRandom output drawn in blocks: the same unpredictable bits, without a call into the
    // generator (with its lock and /dev/urandom read) for every registration. Guarded by this.
    private final java.nio.ByteBuffer entropy = java.nio.ByteBuffer.allocate(4096).position(4096);
    private int[] keys = new int[64];
    private SimRegion[] values = new SimRegion[64];
    private int size;

    /** Adds a region under a fresh token and returns the token. */
    synchronized int add(SimRegion region) {
        int token;
        do {
            token = nextEntropy(4).getInt();
        } while (token == 0 || indexOf(token) >= 0);
        if ((size + 1) * 4 > keys.length * 3) {
            grow();
        }
        insert(token, region);
        size++;
        return token;
    }

    /** A fresh random remote offset. */
    long newRemoteOffset() {
        synchronized (this) {
            return nextEntropy(8).getLong() & OFFSET_MASK;
        }
    }

    /** The entropy block, refilled when fewer than {@code n} bytes are left in it. */
    private java.nio.ByteBuffer nextEntropy(int n) {
        if (entropy.remaining() < n) {
            random.nextBytes(entropy.array());
            entropy.clear();
        }
        return entropy;
    }

    /** The live region with this token, or {@code null}. */
    synchronized SimRegion get(int token) {
        if (token == 0) {
            return null;
        }
        int i = indexOf(token);
        return i < 0 ? null : values[i];
    }

    /** Removes a region if it is still the one under its token. */
    synchronized void remove(SimRegion region) {
        int i = indexOf(region.token);
        if (i < 0 || values[i] != region) {
            return;
        }
        int mask = keys.length - 1;
        keys[i] = 0;
        values[i] = null;
        size--;
        // backward shift: move later entries of the same probe run into the hole
        int hole = i;
        int j = (i + 1) & mask;
        while (keys[j] != 0) {
            int home = mix(keys[j]) & mask;
            boolean movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
            if (movable) {
                keys[hole] = keys[j];
                values[hole] = values[j];
                keys[j] = 0;
                values[j] = null;
                hole = j;
            }
            j = (j + 1) & mask;
        }
    }

    synchronized int size() {
        return size;
    }

    private int indexOf(int token) {
        int mask = keys.length - 1;
        int i = mix(token) & mask;
        while (keys[i] != 0) {
            if (keys[i] == token) {
                return i;
            }
            i = (i + 1) & mask;
        }
        return -1;
    }

    private void insert(int token, SimRegion region) {
        int mask = keys.length - 1;
        int i = mix(token) & mask;
        while (keys[i] != 0) {
            i = (i + 1) & mask;
        }
        keys[i] = token;
        values[i] = region;
    }

    private void grow() {
        int[] oldKeys = keys;
        SimRegion[] oldValues = values;
        keys = new int[oldKeys.length * 2];
        values = new SimRegion[oldKeys.length * 2];
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldKeys[i] != 0) {
                insert(oldKeys[i], oldValues[i]);
            }
        }
    }

    private static int mix(int x) {
        int h = x * 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
