package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.util.List;

import org.junit.jupiter.api.Test;

class RegistrationCacheTest {
    private static final ByteBuffer MEMORY = ByteBuffer.allocateDirect(64);

    private static RegistrationCache.Region region(long address, int length, int access, long mr) {
        return new RegistrationCache.Region(MEMORY, address, length, access, mr, (int) mr);
    }

    @Test
    void takeRegion_matchesAddressLengthAndAccessExactly_andTakesItOut() {
        RegistrationCache cache = new RegistrationCache(4);
        RegistrationCache.Region kept = region(0x1000, 4096, 3, 7);
        assertNull(cache.keep(kept));
        assertNull(cache.takeRegion(0x1000, 4095, 3), "another length");
        assertNull(cache.takeRegion(0x1001, 4096, 3), "another address");
        assertNull(cache.takeRegion(0x1000, 4096, 1), "another access");
        assertSame(kept, cache.takeRegion(0x1000, 4096, 3));
        assertNull(cache.takeRegion(0x1000, 4096, 3), "taken out");
    }

    @Test
    void full_theLeastRecentlyKeptGoesBackToBeReleased() {
        RegistrationCache cache = new RegistrationCache(2);
        RegistrationCache.Region a = region(0x1000, 8, 1, 1);
        RegistrationCache.Region b = region(0x2000, 8, 1, 2);
        RegistrationCache.Region c = region(0x3000, 8, 1, 3);
        assertNull(cache.keep(a));
        assertNull(cache.keep(b));
        assertSame(a, cache.keep(c));
        assertEquals(2, cache.regions());
        RegistrationCache.Window w1 = new RegistrationCache.Window(11, 0x100);
        RegistrationCache.Window w2 = new RegistrationCache.Window(12, 0x200);
        RegistrationCache.Window w3 = new RegistrationCache.Window(13, 0x300);
        assertNull(cache.keep(w1));
        assertNull(cache.keep(w2));
        assertSame(w1, cache.keep(w3));
        assertSame(w3, cache.takeWindow(), "the most recently freed window first");
    }

    @Test
    void evictRegions_givesBackEveryRegion_windowsStay_andKeepsAgainAfter() {
        RegistrationCache cache = new RegistrationCache(4);
        RegistrationCache.Region a = region(0x1000, 8, 1, 1);
        RegistrationCache.Region b = region(0x2000, 8, 1, 2);
        RegistrationCache.Window w = new RegistrationCache.Window(1, 2);
        cache.keep(a);
        cache.keep(b);
        cache.keep(w);
        assertEquals(List.of(a, b), cache.evictRegions());
        assertEquals(0, cache.regions());
        assertEquals(1, cache.windows());
        assertNull(cache.keep(a), "not closed: kept again");
    }

    @Test
    void capacityZero_keepsNothing() {
        RegistrationCache cache = new RegistrationCache(0);
        RegistrationCache.Region r = region(0x1000, 8, 1, 1);
        RegistrationCache.Window w = new RegistrationCache.Window(1, 2);
        assertSame(r, cache.keep(r));
        assertSame(w, cache.keep(w));
        assertNull(cache.takeWindow());
        assertNull(cache.takeRegion(0x1000, 8, 1));
    }

    @Test
    void drained_returnsEverything_andKeepsNothingAfter() {
        RegistrationCache cache = new RegistrationCache(4);
        RegistrationCache.Region r = region(0x1000, 8, 1, 1);
        RegistrationCache.Window w = new RegistrationCache.Window(1, 2);
        cache.keep(r);
        cache.keep(w);
        assertEquals(List.of(w), cache.drainWindows());
        assertEquals(List.of(r), cache.drainRegions());
        RegistrationCache.Region late = region(0x2000, 8, 1, 2);
        assertSame(late, cache.keep(late), "after the endpoint's release the caller deregisters");
        assertSame(w, cache.keep(w));
    }
}
