package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Connection.SendQueue (MS-SMBD 3.1.1.1): the upper layer's messages from their acceptance
 * (3.1.4.2) until the send of their last fragment completes, in a ring of records indexed by
 * sequence number.
 *
 * <p>Why a ring of parallel arrays and not a queue of message objects: a connection with hundreds
 * of messages queued behind its credits reads each record once, long after it was written, from
 * memory the other processor wrote last. Consecutive records share cache lines here, and adding or
 * posting one stores no reference into a queue; with 64 such connections the objects' lines and
 * the queues' reference stores were the cost that grew with the number of connections.
 *
 * <p>Sequence numbers: {@code [head, tail)} are accepted and not yet finished; of these, {@code
 * [head, next)} are fully posted, {@code [next, published)} wait to be posted, and {@code
 * [published, tail)} were accepted after the connection last looked ({@link #publish}).
 *
 * <p>Threads: {@link #add}, {@link #publish}, {@link #finishThrough}, {@link #accepted} and
 * {@link #failAll} run under the owner's lock (the records may be replaced by larger ones when an
 * upper layer's thread adds); everything else runs on the connection's thread, on the records it
 * took at its last {@link #publish}: a record it reads there is never written again until it is
 * finished.
 */
final class SendQueue {
    private static final int FIRST_CAPACITY = 8;

    /** The records' storage; replaced, never resized, when it grows. */
    private static final class Records {
        final int mask;
        /** The message: a {@link ByteBuffer}, or a gathering send's {@code ByteBuffer[]}. */
        final Object[] payload;
        /** A {@link CompletableFuture} or a {@link CompletionHandler}. */
        final Object[] completion;
        final Object[] attachment;
        /** The message's first byte in a single buffer's payload. */
        final int[] start;
        final int[] length;
        /** The remote token to invalidate with the first fragment, if {@link #hasToken}. */
        final int[] token;
        final boolean[] hasToken;

        Records(int capacity) {
            mask = capacity - 1;
            payload = new Object[capacity];
            completion = new Object[capacity];
            attachment = new Object[capacity];
            start = new int[capacity];
            length = new int[capacity];
            token = new int[capacity];
            hasToken = new boolean[capacity];
        }

        int capacity() {
            return mask + 1;
        }
    }

    // ---- under the owner's lock
    private Records records = new Records(FIRST_CAPACITY);
    private long head;
    private long tail;

    // ---- the connection's thread
    private Records view = records;
    private long published;
    private long next;
    /**
     * Bytes of message {@link #next} already placed into posted fragments: 0 before its first
     * fragment (an empty message's only fragment finishes it at once).
     */
    private int offset;

    // ================================================================ under the owner's lock

    /**
     * Accepts a message (3.1.4.2).
     *
     * @param payload a {@link ByteBuffer} (bytes from its position) or a gathering send's {@code
     *        ByteBuffer[]} (taken as it is: the caller passes a copy of the array)
     * @param length the message's length
     * @param hasToken whether a remote token is to be invalidated
     * @param token the token
     * @param completion a {@link CompletableFuture} or a {@link CompletionHandler}
     * @param attachment the handler's attachment
     */
    void add(Object payload, int length, boolean hasToken, int token, Object completion, Object attachment) {
        if (tail - head == records.capacity()) {
            grow();
        }
        Records r = records;
        int i = (int) tail & r.mask;
        r.payload[i] = payload;
        r.start[i] = payload instanceof ByteBuffer ? ((ByteBuffer) payload).position() : 0;
        r.length[i] = length;
        r.token[i] = token;
        r.hasToken[i] = hasToken;
        r.completion[i] = completion;
        r.attachment[i] = attachment;
        tail++;
    }

    private void grow() {
        Records old = records;
        Records r = new Records(old.capacity() * 2);
        for (long s = head; s < tail; s++) {
            int from = (int) s & old.mask;
            int to = (int) s & r.mask;
            r.payload[to] = old.payload[from];
            r.completion[to] = old.completion[from];
            r.attachment[to] = old.attachment[from];
            r.start[to] = old.start[from];
            r.length[to] = old.length[from];
            r.token[to] = old.token[from];
            r.hasToken[to] = old.hasToken[from];
        }
        // The old records stay as they are: the connection's thread may still read them.
        records = r;
    }

    /**
     * Messages accepted and not yet finished (the count maxPendingSends bounds).
     *
     * @return the count
     */
    int accepted() {
        return (int) (tail - head);
    }

    /** The connection's thread takes what was accepted so far. */
    void publish() {
        view = records;
        published = tail;
    }

    /**
     * The messages before {@code bound} were reported sent ({@link #reportSent}, in order): their
     * records are cleared and their slots free for new messages.
     *
     * @param bound one past the last message reported
     */
    void finishThrough(long bound) {
        Records r = records;
        for (; head < bound; head++) {
            clear(r, (int) head & r.mask);
        }
    }

    /**
     * Takes every message not yet finished, clearing the queue.
     *
     * @return the completions and attachments of those messages, in pairs, in order
     */
    List<Object> failAll() {
        List<Object> out = new ArrayList<>();
        Records r = records;
        for (long s = head; s < tail; s++) {
            int i = (int) s & r.mask;
            out.add(r.completion[i]);
            out.add(r.attachment[i]);
            clear(r, i);
        }
        head = tail;
        view = r;
        published = tail;
        next = tail;
        offset = 0;
        return out;
    }

    private static void clear(Records r, int i) {
        r.payload[i] = null;
        r.completion[i] = null;
        r.attachment[i] = null;
    }

    // ================================================================ the connection's thread

    /**
     * Whether no message waits to be posted: Connection.SendQueue's emptiness as 3.1.5.1 and
     * 3.1.5.9 mean it (messages fully posted and waiting for their sends' completions are kept
     * here too, but are no longer queued to be sent).
     *
     * @return {@code true} when nothing taken by the last {@link #publish} is left to post
     */
    boolean isEmpty() {
        return next == published;
    }

    /**
     * Messages waiting to be posted.
     *
     * @return the count, as of the last {@link #publish}
     */
    int size() {
        return (int) (published - next);
    }

    /**
     * The sequence number of the message to post from next.
     *
     * @return {@code next}; valid while {@link #isEmpty()} is {@code false}
     */
    long next() {
        return next;
    }

    /**
     * Bytes of the next message not yet placed into a fragment.
     *
     * @return the count
     */
    int remaining() {
        return view.length[(int) next & view.mask] - offset;
    }

    /**
     * Whether the next fragment is the next message's first and carries a remote token to
     * invalidate (3.1.5.4: with the first fragment only).
     *
     * @return {@code true} when it does
     */
    boolean tokenGoesNext() {
        return offset == 0 && view.hasToken[(int) next & view.mask];
    }

    /**
     * The next message's remote token.
     *
     * @return the token
     */
    int token() {
        return view.token[(int) next & view.mask];
    }

    /**
     * Copies the next {@code n} bytes of the next message into {@code dst} at {@code index}
     * (absolute; no buffer's position changes) and counts them posted.
     *
     * @param dst the send buffer
     * @param index where in it
     * @param n how many bytes (0 for an empty message's only fragment)
     * @return {@code true} when this fragment is the message's last: the queue moved on to the next
     */
    boolean takeFragment(ByteBuffer dst, int index, int n) {
        Records r = view;
        int i = (int) next & r.mask;
        if (n > 0) {
            Object p = r.payload[i];
            if (p instanceof ByteBuffer) {
                dst.put(index, (ByteBuffer) p, r.start[i] + offset, n);
            } else {
                copyParts((ByteBuffer[]) p, offset, dst, index, n);
            }
        }
        offset += n;
        if (offset < r.length[i]) {
            return false;
        }
        next++;
        offset = 0;
        return true;
    }

    private static void copyParts(ByteBuffer[] parts, int skip, ByteBuffer dst, int index, int n) {
        for (ByteBuffer p : parts) {
            int have = p.remaining();
            if (skip >= have) {
                skip -= have;
                continue;
            }
            int take = Math.min(have - skip, n);
            dst.put(index, p, p.position() + skip, take);
            index += take;
            n -= take;
            skip = 0;
            if (n == 0) {
                return;
            }
        }
    }

    /**
     * The length of a message fully posted and not yet finished.
     *
     * @param seq the message
     * @return its length
     */
    int length(long seq) {
        return view.length[(int) seq & view.mask];
    }

    /**
     * Reports message {@code seq} sent to whoever waits for it; {@link #finishThrough} follows
     * under the owner's lock.
     *
     * @param seq a message fully posted whose last fragment's send completed
     */
    @SuppressWarnings("unchecked")
    void reportSent(long seq) {
        Records r = view;
        int i = (int) seq & r.mask;
        Object c = r.completion[i];
        if (c == null) {
            return; // failed already with the connection's loss (failAll)
        }
        if (c instanceof CompletableFuture) {
            ((CompletableFuture<Void>) c).complete(null);
        } else {
            ((CompletionHandler<Void, Object>) c).completed(null, r.attachment[i]);
        }
    }

    /**
     * Fails the messages {@link #failAll} took.
     *
     * @param taken its result
     * @param failure the reason
     */
    @SuppressWarnings("unchecked")
    static void fail(List<Object> taken, Throwable failure) {
        for (int k = 0; k < taken.size(); k += 2) {
            Object c = taken.get(k);
            if (c instanceof CompletableFuture) {
                ((CompletableFuture<Void>) c).completeExceptionally(failure);
            } else {
                ((CompletionHandler<Void, Object>) c).failed(failure, taken.get(k + 1));
            }
        }
    }
}
