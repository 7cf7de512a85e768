package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import org.junit.jupiter.api.Test;

/** A READ's data array: prepared by the sender, taken by the response, whichever comes first. */
class ReadDestinationTest {
    @Test
    void preparedThenTaken_allMoved_isThePreparedArray() {
        ReadDestination d = new ReadDestination(8);
        byte[] prepared = d.prepare();
        assertEquals(8, prepared.length);
        assertSame(prepared, d.take(8));
        assertNotSame(prepared, d.take(8), "taken once: a second take gets an array of its own");
    }

    @Test
    void preparedThenTaken_lessMoved_isExactlyWhatMoved() {
        ReadDestination d = new ReadDestination(8);
        d.prepare();
        assertEquals(3, d.take(3).length);
    }

    @Test
    void takenBeforePrepared_responseFirst_allocatesAndPrepareAddsNothing() {
        ReadDestination d = new ReadDestination(8);
        byte[] a = d.take(8);
        assertEquals(8, a.length);
        assertNull(d.prepare(), "the sender, late: nothing to prepare any more");
        assertNotSame(a, d.take(8));
        assertEquals(0, d.take(0).length);
    }

    @Test
    void preparedTwice_keepsTheFirst() {
        ReadDestination d = new ReadDestination(4);
        byte[] first = d.prepare();
        assertNull(d.prepare());
        assertSame(first, d.take(4));
    }
}
