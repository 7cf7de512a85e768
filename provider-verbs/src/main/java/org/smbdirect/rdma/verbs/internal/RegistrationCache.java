package org.smbdirect.rdma.verbs.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * What an endpoint keeps of its ended remote registrations, so that registering the same memory
 * again costs one bind instead of {@code ibv_reg_mr}, {@code ibv_alloc_mw} and a bind, and ending
 * a registration the peer invalidated costs nothing (each of those verbs is a system call; on
 * Soft-RoCE in the guest about 0.7 ms). Kept are memory regions that served a memory window, and
 * windows that an invalidation left free.
 *
 * <p>Safe to keep: such a region grants no remote access of its own (it is registered for local
 * access and window binding only), and a free type 2 window is bound to nothing. A kept region
 * holds its buffer, so its memory cannot be freed, and its address given to other memory, while
 * the region is kept. Bounded: at most {@code capacity} regions and as many windows; beyond that
 * the least recently kept go back to the caller, to be released; when pinning new memory fails,
 * the endpoint gives back every kept region and tries once more (kept regions count against the
 * locked-memory limit). Thread-safe.
 */
final class RegistrationCache {

    /**
     * A memory region kept for the next registration of the same bytes.
     *
     * @param view the registered bytes (keeping their memory alive)
     * @param address their address
     * @param length their length
     * @param mrAccess the region's verbs access flags
     * @param mr the {@code ibv_mr}
     * @param lkey its local key
     */
    record Region(ByteBuffer view, long address, int length, int mrAccess, long mr, int lkey) {
    }

    /**
     * A type 2 memory window in the free state.
     *
     * @param mw the {@code ibv_mw}
     * @param lastKey the rkey it had when last bound: the next bind must take another
     */
    record Window(long mw, int lastKey) {
    }

    private final int capacity;
    private final ArrayDeque<Region> regions = new ArrayDeque<>();
    private final ArrayDeque<Window> windows = new ArrayDeque<>();
    private boolean closed;

    /** @param capacity the most regions, and the most windows, kept; 0 keeps nothing */
    RegistrationCache(int capacity) {
        this.capacity = capacity;
    }

    /** A kept region of exactly these bytes and access, taken out of the cache; else {@code null}. */
    synchronized Region takeRegion(long address, int length, int mrAccess) {
        for (Iterator<Region> i = regions.descendingIterator(); i.hasNext();) {
            Region r = i.next();
            if (r.address == address && r.length == length && r.mrAccess == mrAccess) {
                i.remove();
                return r;
            }
        }
        return null;
    }

    /**
     * Keeps a region that no registration uses any more.
     *
     * @return a region the caller must deregister: the least recently kept one when the cache is
     *         full, or {@code r} itself when the cache keeps nothing or was drained
     */
    synchronized Region keep(Region r) {
        if (capacity == 0 || closed) {
            return r;
        }
        regions.addLast(r);
        return regions.size() > capacity ? regions.pollFirst() : null;
    }

    /** A free window, taken out of the cache; else {@code null}. */
    synchronized Window takeWindow() {
        return windows.pollLast();
    }

    /**
     * Keeps a window that an invalidation left free.
     *
     * @return a window the caller must deallocate, as {@link #keep(Region)}
     */
    synchronized Window keep(Window w) {
        if (capacity == 0 || closed) {
            return w;
        }
        windows.addLast(w);
        return windows.size() > capacity ? windows.pollFirst() : null;
    }

    /** Every kept region, taken out, for the caller to deregister (their pinned pages are wanted elsewhere). */
    synchronized List<Region> evictRegions() {
        List<Region> all = new ArrayList<>(regions);
        regions.clear();
        return all;
    }

    /** The endpoint is being released: everything kept, for the caller to release; nothing is kept after. */
    synchronized List<Region> drainRegions() {
        closed = true;
        List<Region> all = new ArrayList<>(regions);
        regions.clear();
        return all;
    }

    /** As {@link #drainRegions()}, for the windows. */
    synchronized List<Window> drainWindows() {
        closed = true;
        List<Window> all = new ArrayList<>(windows);
        windows.clear();
        return all;
    }

    /** How many regions are kept (for tests and statistics). */
    synchronized int regions() {
        return regions.size();
    }

    /** How many free windows are kept (for tests and statistics). */
    synchronized int windows() {
        return windows.size();
    }
}
