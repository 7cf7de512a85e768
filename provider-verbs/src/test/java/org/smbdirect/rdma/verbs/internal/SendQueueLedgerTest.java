package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The send queue's ledger without a device: which requests go unsignaled, and how slots come back. */
class SendQueueLedgerTest {
    private final List<VerbsMemoryRegion> settledBinds = new ArrayList<>();

    private SendQueueLedger ledger(int depth, int reserve) {
        return new SendQueueLedger(depth, reserve, settledBinds::add);
    }

    private static VerbsMemoryRegion region() {
        return new VerbsMemoryRegion(null, ByteBuffer.allocate(16), 0x1000, 0, 1, 2, 3, 4);
    }

    /** Posts one request as the endpoint does; returns its slot. */
    private static int post(SendQueueLedger l, char kind, Object context) {
        int op;
        byte flags;
        switch (kind) {
            case 'S': // silent send
                op = VerbsNative.OP_SEND;
                flags = SendQueueLedger.SILENT;
                break;
            case 'I': // silent local invalidate
                op = VerbsNative.OP_LOCAL_INV;
                flags = SendQueueLedger.SILENT;
                break;
            case 'B': // memory window bind
                op = VerbsNative.OP_BIND_MW;
                flags = l.signalNextBind() ? SendQueueLedger.INTERNAL
                        : SendQueueLedger.INTERNAL | SendQueueLedger.UNSIGNALED;
                break;
            default: // 'R', a reported send
                op = VerbsNative.OP_SEND;
                flags = 0;
                break;
        }
        if (kind != 'B') {
            assertTrue(l.tryReserveConsumer(), "a consumer slot for request " + context);
            flags = l.signaling(flags, op);
        }
        int slot = l.record(op, context, flags, 100, kind == 'B' || kind == 'I' ? region() : null);
        l.posted(1);
        return slot;
    }

    private static String signaling(SendQueueLedger l, String requests) {
        StringBuilder seen = new StringBuilder();
        for (int i = 0; i < requests.length(); i++) {
            int slot = post(l, requests.charAt(i), i);
            seen.append((l.flags(slot) & SendQueueLedger.UNSIGNALED) != 0 ? 'u' : 's');
        }
        return seen.toString();
    }

    @ParameterizedTest(name = "depth {0}: {1} -> {2}")
    @CsvSource({
        // silent requests: one in half the depth is signaled (perftest's --cq-mod)
        "8, SSSSSSSS, uuusuuus",
        "2, SS, ss",
        "1, S, s",
        // a reported request starts the run again
        "8, SSRSSSS, uusuuus",
        // a silent local invalidate stays signaled: its completion frees its window
        "8, SSISSSS, uusuuus",
        // binds: one in SIGNALED_BIND_EVERY (16), counting the run of unsignaled requests of any kind
        "64, BBBBBBBBBBBBBBBBBBBB, uuuuuuuuuuuuuuusuuuu",
        "64, BBBRBBB, uuusuuu",
        "64, SSSBBB, uuuuuu",
    })
    void unsignaledRequests_asTheRunDecides(int depth, String requests, String expected) {
        assertEquals(expected, signaling(ledger(depth, SendQueueLedger.BIND_RESERVE), requests));
    }

    @Test
    void reportedRequest_settlesTheUnsignaledBeforeIt_andTheirSlotsComeBack() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        assertEquals("uuus", signaling(l, "SSSS"));
        assertEquals(1, l.outstanding(), "only the signaled request is due");
        assertTrue(l.reported(3));
        assertEquals(3, l.context(3), "its own record is next in line");
        l.retire(3);
        assertEquals(0, l.outstanding());
        for (int i = 0; i < 8; i++) {
            assertTrue(l.tryReserveConsumer(), "slot " + i + " free again");
        }
        assertFalse(l.tryReserveConsumer(), "the consumer's depth is the limit");
    }

    @Test
    void unsignaledBind_settlesWithTheNextReportedRequest_andTellsItsRegion() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        post(l, 'B', null);
        VerbsMemoryRegion bound = l.region(0);
        int send = post(l, 'R', "send");
        assertEquals(1, l.outstanding(), "only the send is due: the unsignaled bind reports nothing");
        assertTrue(settledBinds.isEmpty());
        assertTrue(l.reported(send));
        assertEquals(List.of(bound), settledBinds);
        assertEquals("send", l.context(send));
        l.retire(send);
        assertEquals(0, l.outstanding());
        assertNull(l.region(0), "the settled slot lets go of its region");
    }

    @Test
    void reserve_limitsTheProvidersOwnRequests_separatelyFromTheConsumers() {
        SendQueueLedger l = ledger(2, 2);
        assertEquals(4, l.size());
        post(l, 'B', null);
        assertTrue(l.internalRoom());
        post(l, 'B', null);
        assertFalse(l.internalRoom(), "two binds fill a reserve of two");
        post(l, 'R', "a");
        post(l, 'R', "b");
        assertFalse(l.tryReserveConsumer(), "the consumer has its own two");
        assertTrue(l.reported(2));
        l.retire(2);
        assertTrue(l.internalRoom(), "both binds settled with the first reported request");
        assertTrue(l.tryReserveConsumer());
    }

    @Test
    void noReserve_withoutMemoryWindows() {
        SendQueueLedger l = ledger(4, 0);
        assertEquals(4, l.size());
        assertFalse(l.internalRoom());
    }

    @Test
    void unrecord_aRequestTheDeviceRefused_leavesNoTrace() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        assertTrue(l.tryReserveConsumer());
        byte flags = l.signaling(SendQueueLedger.SILENT, VerbsNative.OP_SEND);
        int slot = l.record(VerbsNative.OP_SEND, "refused", flags, 10, null);
        l.unrecord(slot);
        l.unreserveConsumer();
        assertEquals(0, l.next(), "nothing was posted");
        assertEquals(0, l.outstanding());
        assertNull(l.context(slot));
        int again = post(l, 'S', "next");
        assertEquals(slot, again, "the slot is used again");
        assertEquals("next", l.context(again));
    }

    @Test
    void synthetic_completesInOrder_afterTheRealRequestsBeforeIt() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        int real = post(l, 'R', "real");
        assertTrue(l.tryReserveConsumer());
        l.recordSynthetic(VerbsNative.OP_LOCAL_INV, "bad", SendQueueLedger.SYNTHETIC_INVALID, region());
        assertTrue(l.doomed());
        assertEquals(-1, l.nextSynthetic(), "the real request is still due before it");
        assertTrue(l.reported(real));
        l.retire(real);
        int synthetic = l.nextSynthetic();
        assertEquals(1, synthetic);
        assertEquals("bad", l.context(synthetic));
        assertEquals(SendQueueLedger.SYNTHETIC_INVALID, l.flags(synthetic));
        l.retire(synthetic);
        assertEquals(-1, l.nextSynthetic());
        assertEquals(0, l.outstanding());
    }

    @Test
    void doomed_settlesUnsignaledRequestsBeforeASynthetic_andIgnoresTheirLateFlush() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        int bind = post(l, 'B', null);
        VerbsMemoryRegion bound = l.region(bind);
        int silent = post(l, 'S', "silent");
        assertTrue((l.flags(silent) & SendQueueLedger.UNSIGNALED) != 0);
        assertTrue(l.tryReserveConsumer());
        l.recordSynthetic(VerbsNative.OP_SEND, "flushed", SendQueueLedger.SYNTHETIC_FLUSH, null);
        int synthetic = l.nextSynthetic();
        assertEquals(2, synthetic, "nothing reported follows the unsignaled two on the device any more");
        assertEquals(List.of(bound), settledBinds);
        l.retire(synthetic);
        assertFalse(l.reported(bind), "the queue pair's flush of the settled bind comes late: ignored");
        assertEquals(0, l.outstanding());
    }

    @Test
    void signaledAfter_tellsWhetherAReportedRequestFollowsABind() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        long bindSeq = l.next();
        post(l, 'B', null);
        assertFalse(l.signaledAfter(bindSeq));
        post(l, 'S', "silent, unsignaled");
        assertFalse(l.signaledAfter(bindSeq));
        post(l, 'R', "reported");
        assertTrue(l.signaledAfter(bindSeq));
    }

    @Test
    void slotsWrapAround_theRing() {
        SendQueueLedger l = ledger(2, 0);
        Object[] contexts = {"a", "b", "c", "d", "e"};
        for (Object c : contexts) {
            int slot = post(l, 'R', c);
            assertTrue(l.reported(slot));
            assertSame(c, l.context(slot));
            l.retire(slot);
        }
        assertEquals(5, l.next());
        assertEquals(0, l.outstanding());
    }

    /** Records a consumer request without handing it to the device (deferred); returns its slot. */
    private static int defer(SendQueueLedger l, char kind, Object context) {
        assertTrue(l.tryReserveConsumer());
        byte flags = l.signaling(kind == 'S' ? SendQueueLedger.SILENT : 0, VerbsNative.OP_SEND);
        return l.record(VerbsNative.OP_SEND, context, flags, 100, null);
    }

    @Test
    void deferred_waitRecorded_andArePostedTogether() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        defer(l, 'S', "a");
        defer(l, 'S', "b");
        int last = defer(l, 'R', "c");
        assertEquals(3, l.unposted());
        assertEquals(3, l.next(), "the next request is numbered after the deferred ones");
        l.posted(3);
        assertEquals(0, l.unposted());
        assertTrue(l.reported(last));
        l.retire(last);
        assertEquals(0, l.outstanding());
    }

    @Test
    void aChainsLaterRequest_completingBeforeThePostReturns_isNotLost() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        defer(l, 'S', "a");
        defer(l, 'S', "b");
        int last = defer(l, 'R', "c");
        // the completion thread takes c's completion while the post of the chain is still returning
        assertTrue(l.reported(last), "the unsignaled two before it are settled");
        assertEquals("c", l.context(last));
        l.retire(last);
        l.posted(3);
        assertEquals(0, l.outstanding());
    }

    /**
     * A memory window bind registered with DEFER, abandoned with the chain it waited in: it stays
     * the provider's own (a synthetic flush the endpoint settles, never reported to the consumer),
     * and gives back a slot of the reserve, not of the consumer's depth.
     */
    @Test
    void abandonUnposted_aDeferredBind_staysInternal_andFreesTheReserve() {
        SendQueueLedger l = ledger(2, 2);
        byte bindFlags = l.signalNextBind() ? SendQueueLedger.INTERNAL
                : SendQueueLedger.INTERNAL | SendQueueLedger.UNSIGNALED;
        VerbsMemoryRegion r = region();
        int bind = l.record(VerbsNative.OP_BIND_MW, null, bindFlags, 0, r);
        defer(l, 'R', "send");
        defer(l, 'R', "other");
        assertFalse(l.tryReserveConsumer(), "the two deferred sends hold the consumer's depth");
        assertEquals(3, l.abandonUnposted());
        assertEquals(bind, l.nextSynthetic());
        assertEquals(SendQueueLedger.SYNTHETIC_FLUSH | SendQueueLedger.INTERNAL, l.flags(bind));
        assertEquals(r, l.region(bind));
        l.retire(bind);
        assertTrue(l.internalRoom());
        assertFalse(l.tryReserveConsumer(), "the bind's retirement freed no consumer slot");
        for (String expected : new String[] {"send", "other"}) {
            int slot = l.nextSynthetic();
            assertEquals(expected, l.context(slot));
            assertEquals(SendQueueLedger.SYNTHETIC_FLUSH, l.flags(slot));
            l.retire(slot);
        }
        assertEquals(0, l.outstanding());
        assertTrue(l.tryReserveConsumer(), "both consumer slots back");
    }

    @Test
    void abandonUnposted_deferredRequestsCompleteFlushed_inOrder() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        int real = post(l, 'R', "posted");
        defer(l, 'S', "a");
        defer(l, 'R', "b");
        assertEquals(2, l.abandonUnposted());
        assertTrue(l.doomed());
        assertEquals(0, l.unposted());
        assertEquals(-1, l.nextSynthetic(), "after the posted request");
        assertTrue(l.reported(real));
        l.retire(real);
        for (String expected : new String[] {"a", "b"}) {
            int slot = l.nextSynthetic();
            assertEquals(expected, l.context(slot));
            assertEquals(SendQueueLedger.SYNTHETIC_FLUSH, l.flags(slot));
            l.retire(slot);
        }
        assertEquals(0, l.outstanding(), "the silent one is no longer counted as unsignaled");
        assertEquals(0, l.abandonUnposted(), "nothing left");
    }

    @Test
    void unrecord_restoresTheRun() {
        SendQueueLedger l = ledger(8, SendQueueLedger.BIND_RESERVE);
        assertEquals("uuu", signaling(l, "SSS"));
        assertTrue(l.tryReserveConsumer());
        int refused = l.record(VerbsNative.OP_SEND, "refused", l.signaling(SendQueueLedger.SILENT,
                VerbsNative.OP_SEND), 1, null);
        assertTrue((l.flags(refused) & SendQueueLedger.UNSIGNALED) == 0, "the fourth is signaled");
        l.unrecord(refused);
        l.unreserveConsumer();
        assertEquals(3, l.next());
        assertEquals("s", signaling(l, "S"), "still the fourth: signaled");
    }
}
