package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Connection.SendQueue (MS-SMBD 3.1.1.1) as a ring of records: order, growth, fragments, finishing. */
class SendQueueTest {

    private static ByteBuffer message(int tag, int length) {
        byte[] b = new byte[length + 3];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) (tag * 31 + i);
        }
        // The message starts at position 3: the record keeps the caller's position.
        return ByteBuffer.wrap(b).position(3);
    }

    private static byte[] bytes(ByteBuffer m) {
        byte[] b = new byte[m.remaining()];
        m.duplicate().get(b);
        return b;
    }

    /** Posts the next message in fragments of at most {@code max} bytes; returns its bytes. */
    private static byte[] takeWhole(SendQueue q, int max) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteBuffer dst = ByteBuffer.allocate(max + 10);
        boolean last;
        do {
            int n = Math.min(q.remaining(), max);
            last = q.takeFragment(dst, 10, n);
            byte[] f = new byte[n];
            dst.get(10, f);
            out.writeBytes(f);
        } while (!last);
        return out.toByteArray();
    }

    /**
     * The ring grows while the connection still posts from records it took before: what it reads
     * there stays valid, and every message comes out whole and in order (MS-SMBD 3.1.1.1: a FIFO).
     */
    @ParameterizedTest(name = "{0} taken, then {1} more added before the next look, fragments of {2} B")
    @CsvSource({"8, 1, 100", "8, 40, 100", "3, 100, 7", "1, 1000, 1000"})
    void add_growsWhileTheConnectionPostsFromAnOlderView_everyMessageWholeAndInOrder(int first, int more, int max) {
        SendQueue q = new SendQueue();
        List<byte[]> expected = new ArrayList<>();
        for (int i = 0; i < first; i++) {
            ByteBuffer m = message(i, 1 + i * 13 % 300);
            expected.add(bytes(m));
            q.add(m, m.remaining(), false, 0, new CompletableFuture<Void>(), null);
        }
        q.publish();
        assertEquals(first, q.size());
        // Half of the first message is posted; then the ring grows under it.
        int n = Math.min(q.remaining(), max) / 2;
        ByteBuffer dst = ByteBuffer.allocate(max + 10);
        assertFalse(q.takeFragment(dst, 10, n), "the first message is not posted whole yet");
        for (int i = first; i < first + more; i++) {
            ByteBuffer m = message(i, 1 + i * 13 % 300);
            expected.add(bytes(m));
            q.add(m, m.remaining(), false, 0, new CompletableFuture<Void>(), null);
        }
        assertEquals(first + more, q.accepted());
        assertEquals(first, q.size(), "the connection sees only what it took");
        byte[] firstPart = new byte[n];
        dst.get(10, firstPart);
        List<byte[]> got = new ArrayList<>();
        byte[] rest = takeWhole(q, max);
        byte[] whole = new byte[n + rest.length];
        System.arraycopy(firstPart, 0, whole, 0, n);
        System.arraycopy(rest, 0, whole, n, rest.length);
        got.add(whole);
        for (int i = 1; i < first; i++) {
            got.add(takeWhole(q, max));
        }
        assertTrue(q.isEmpty());
        q.publish();
        while (!q.isEmpty()) {
            got.add(takeWhole(q, max));
        }
        assertEquals(expected.size(), got.size());
        for (int i = 0; i < got.size(); i++) {
            assertArrayEquals(expected.get(i), got.get(i), "message " + i);
        }
    }

    /** A gathering send's parts make one message; fragments cut across the parts' boundaries. */
    @Test
    void takeFragment_gatheringSend_fragmentsCutAcrossParts() {
        SendQueue q = new SendQueue();
        ByteBuffer[] parts = {message(1, 5), ByteBuffer.allocate(0), message(2, 9), message(3, 4)};
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (ByteBuffer p : parts) {
            all.writeBytes(bytes(p));
        }
        q.add(parts, 18, false, 0, new CompletableFuture<Void>(), null);
        q.publish();
        assertArrayEquals(all.toByteArray(), takeWhole(q, 4));
        assertTrue(q.isEmpty());
        assertEquals(3, parts[0].position(), "the parts' positions are not changed");
    }

    /** 3.1.5.4: the remote token goes with the message's first fragment only. */
    @Test
    void tokenGoesNext_withTheFirstFragmentOnly() {
        SendQueue q = new SendQueue();
        q.add(message(1, 10), 10, true, 0x1234, new CompletableFuture<Void>(), null);
        q.add(message(2, 10), 10, false, 0, new CompletableFuture<Void>(), null);
        q.publish();
        assertTrue(q.tokenGoesNext());
        assertEquals(0x1234, q.token());
        ByteBuffer dst = ByteBuffer.allocate(20);
        assertFalse(q.takeFragment(dst, 0, 4));
        assertFalse(q.tokenGoesNext(), "the second fragment carries no token");
        assertTrue(q.takeFragment(dst, 0, 6));
        assertFalse(q.tokenGoesNext(), "the next message has none");
    }

    /**
     * Messages reported sent free their slots when finished, in order: maxPendingSends counts the
     * others, and a ring that wrapped around reuses the freed slots for new messages.
     */
    @Test
    void finishThrough_freesTheReportedMessagesSlots_newMessagesReuseThem() {
        SendQueue q = new SendQueue();
        List<CompletableFuture<Void>> f = new ArrayList<>();
        for (int round = 0; round < 5; round++) {
            for (int i = 0; i < 6; i++) {
                CompletableFuture<Void> c = new CompletableFuture<>();
                f.add(c);
                q.add(message(f.size(), 1), 1, false, 0, c, null);
            }
            q.publish();
            long first = q.next();
            for (int i = 0; i < 6; i++) {
                takeWhole(q, 10);
            }
            q.reportSent(first);
            q.reportSent(first + 1);
            assertEquals(6, q.accepted(), "reported, not yet finished");
            q.finishThrough(first + 2);
            assertEquals(4, q.accepted());
            for (int i = 2; i < 6; i++) {
                q.reportSent(first + i);
            }
            q.finishThrough(first + 6);
            assertEquals(0, q.accepted());
        }
        assertEquals(30, f.stream().filter(CompletableFuture::isDone).count());
    }

    /**
     * The end fails every message not yet finished, in order, with its own callback: queued, taken,
     * partly posted, or fully posted and in flight; one reported sent and finished is not failed.
     */
    @Test
    void failAll_failsEveryUnfinishedMessageInOrder_notTheFinished() {
        SendQueue q = new SendQueue();
        List<String> failed = new ArrayList<>();
        CompletionHandler<Void, Object> h = new CompletionHandler<>() {
            @Override
            public void completed(Void result, Object attachment) {
                failed.add("completed " + attachment);
            }

            @Override
            public void failed(Throwable exc, Object attachment) {
                failed.add(attachment + ": " + exc.getMessage());
            }
        };
        CompletableFuture<Void> future = new CompletableFuture<>();
        q.add(message(0, 4), 4, false, 0, h, "sent");
        q.add(message(1, 4), 4, false, 0, h, "in flight");
        q.add(message(2, 8), 8, false, 0, future, null);
        q.publish();
        takeWhole(q, 10);
        takeWhole(q, 10);
        q.takeFragment(ByteBuffer.allocate(8), 0, 4); // message 2 partly posted
        q.add(message(3, 4), 4, false, 0, h, "not yet taken");
        q.reportSent(0);
        q.finishThrough(1);

        SendQueue.fail(q.failAll(), new IllegalStateException("lost"));
        assertEquals(List.of("completed sent", "in flight: lost", "not yet taken: lost"), failed);
        assertTrue(future.isCompletedExceptionally());
        assertEquals(0, q.accepted());
        assertTrue(q.isEmpty());
    }
}
