package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.TerminationReason;

/**
 * The sending side of one connection: MS-SMBD 3.1.4.2 (Send Message: the upper layer's messages
 * enter), 3.1.5.1 (Sending Upper Layer Messages, the current text: credits per message), 3.1.5.4
 * (Sending a Data Transfer Message: fragmentation), and the Negotiate messages' sends.
 *
 * <p>Threads: {@link #enqueue} and the writability calls run on any thread and touch only the
 * accepting end of Connection.SendQueue ({@link SendQueue}), under the inbox lock; everything else
 * runs on the connection's thread, which takes what was accepted at each step ({@link
 * #drainInbox}), in the order it was accepted.
 */
final class Sender {
    private static final System.Logger LOG = ConnectionLog.LOG;
    private static final System.Logger.Level TRACE = System.Logger.Level.TRACE;

    private final Object owner;
    private final DataModel model;
    private final CreditLedger credits;
    private final ConnectionStateMachine lifecycle;
    private final ConnectionCounters counters;
    private final Terminator end;
    private final int maxPendingSends;
    private final boolean remoteInvalidate;

    /** {@link #enqueue}: queued; the sending rules should run. */
    static final int QUEUED = 0;
    /** {@link #enqueue}: queued behind messages waiting for a completion; nothing to run. */
    static final int QUEUED_BEHIND = 1;
    /** {@link #enqueue}: failed at once. */
    static final int FAILED = 2;

    // ---- shared with the upper layer's threads, guarded by inboxLock (with the queue's records)
    private final Object inboxLock = new Object();
    private final SendQueue queue;
    private boolean sendsClosed;
    /**
     * The sending rules stopped with messages queued, for a send credit or a send buffer; the
     * completion that brings one runs them again. A message queued meanwhile needs no run of its
     * own: it cannot overtake the ones waiting before it.
     */
    private boolean waiting;
    private CompletableFuture<Void> writable;

    // ---- the connection's thread
    private SendBuffers sendBuffers;
    private int inlineThreshold;
    /** The refusal a failure Negotiate Response carries, to terminate with once it is sent (3.1.5.3). */
    private ConnectionLoss afterNegotiationSend;
    /** A negotiation message that overtook the established event, posted when it arrives. */
    private Runnable deferredUntilEstablished;
    /**
     * Messages below this sequence number were reported sent; their records are finished at the
     * connection's next look at the queue, under the lock it takes there once a step anyway,
     * rather than under a lock of their own each.
     */
    private long sentThrough;
    /** The fragment built last and not yet posted (see {@link #postHeld}). */
    private SendBuffers.Slot held;

    /**
     * @param owner the connection, for messages
     * @param model the data model (SendQueue, credits, SendImmediate, sizes)
     * @param lifecycle the connection's state
     * @param counters the connection's counters
     * @param end ends the connection
     * @param maxPendingSends the most upper-layer messages waiting
     * @param remoteInvalidate whether the provider can send with invalidate
     */
    Sender(Object owner, DataModel model, ConnectionStateMachine lifecycle, ConnectionCounters counters,
            Terminator end, int maxPendingSends, boolean remoteInvalidate) {
        this.owner = owner;
        this.model = model;
        this.credits = model.credits;
        this.lifecycle = lifecycle;
        this.counters = counters;
        this.end = end;
        this.maxPendingSends = maxPendingSends;
        this.remoteInvalidate = remoteInvalidate;
        this.queue = model.sendQueue;
    }

    /**
     * The send buffers exist (with the endpoint).
     *
     * @param buffers the registered send buffers
     * @param inline the largest message posted inline
     */
    void attach(SendBuffers buffers, int inline) {
        this.sendBuffers = buffers;
        this.inlineThreshold = inline;
    }

    // ================================================================ 3.1.4.2, any thread

    /**
     * MS-SMBD 3.1.4.2 Send Message: checks the length and queues the message for 3.1.5.1; a lost
     * or closing connection fails it at once.
     *
     * @param message the bytes from position to limit, or {@code null} with {@code parts}
     * @param parts a gathering send's buffers, or {@code null}
     * @param hasToken whether a remote token is to be invalidated
     * @param token the token
     * @param future completed when sent, or {@code null} with {@code h}
     * @param h called when sent, or {@code null} with {@code future}
     * @param attachment for {@code h}
     * @param maxFragmentedSendSize Connection.MaxFragmentedSendSize, or -1 when not yet negotiated
     * @return {@link #QUEUED} when the message was queued and the sending rules should run, {@link
     *         #QUEUED_BEHIND} when it was queued behind messages that wait for a credit or a send
     *         buffer (the completion that brings one runs the rules), {@link #FAILED} when it was
     *         failed at once
     */
    int enqueue(ByteBuffer message, ByteBuffer[] parts, boolean hasToken, int token,
            CompletableFuture<Void> future, CompletionHandler<Void, Object> h, Object attachment,
            int maxFragmentedSendSize) {
        long total = message != null ? message.remaining() : 0;
        if (parts != null) {
            for (ByteBuffer p : parts) {
                total += p.remaining();
            }
        }
        if (total == 0 && !hasToken) {
            // A Data Transfer message with DataLength 0 reaches no upper layer (3.1.5.8 delivers
            // data only): the peer would drop it without a trace.
            throw new IllegalArgumentException("an empty message cannot be sent: the peer's SMB Direct layer "
                    + "hands only data to its upper layer (MS-SMBD 3.1.4.2, 3.1.5.8)");
        }
        if (maxFragmentedSendSize >= 0 && total > maxFragmentedSendSize) {
            throw new IllegalArgumentException("message of " + total + " bytes exceeds MaxFragmentedSendSize "
                    + maxFragmentedSendSize + " (MS-SMBD 3.1.4.2)");
        }
        ConnectionLoss lost;
        synchronized (inboxLock) {
            lost = lifecycle.loss();
            if (!sendsClosed && lost == null) {
                if (queue.accepted() >= maxPendingSends) {
                    throw new IllegalStateException(queue.accepted() + " messages are already waiting to be sent on "
                            + owner + " (maxPendingSends " + maxPendingSends + "; isWritable() and writable() "
                            + "tell when there is room)");
                }
                queue.add(parts != null ? parts.clone() : message, (int) total, hasToken, token,
                        future != null ? future : h, attachment);
                return waiting ? QUEUED_BEHIND : QUEUED;
            } else if (lost == null) {
                lost = new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "the connection is closing");
            }
        }
        ConnectionLostException e = new ConnectionLostException(lost);
        if (future != null) {
            future.completeExceptionally(e);
        } else {
            h.failed(e, attachment);
        }
        return FAILED;
    }

    /**
     * Whether a send would be accepted now: fewer than maxPendingSends messages wait.
     *
     * @return {@code true} when there is room
     */
    boolean isWritable() {
        synchronized (inboxLock) {
            return queue.accepted() < maxPendingSends;
        }
    }

    /**
     * Completes once a send would be accepted (at once when one would be now), or when the
     * connection is lost (then exceptionally).
     *
     * @return the stage
     */
    CompletableFuture<Void> writable() {
        synchronized (inboxLock) {
            ConnectionLoss l = lifecycle.loss();
            if (l != null) {
                return CompletableFuture.failedFuture(new ConnectionLostException(l));
            }
            if (queue.accepted() < maxPendingSends) {
                return CompletableFuture.completedFuture(null);
            }
            if (writable == null) {
                writable = new CompletableFuture<>();
            }
            return writable;
        }
    }

    // ================================================================ the connection's thread

    /**
     * Takes what the upper layer queued into the connection's view of Connection.SendQueue, and
     * finishes the messages reported sent since the last look.
     */
    void drainInbox() {
        CompletableFuture<Void> room;
        synchronized (inboxLock) {
            waiting = false;
            room = finishSent();
            queue.publish();
        }
        if (room != null) {
            room.complete(null);
        }
    }

    /**
     * Under {@link #inboxLock}: the records of the messages reported sent are finished.
     *
     * @return the writability stage to complete (outside the lock) when that made room, else null
     */
    private CompletableFuture<Void> finishSent() {
        queue.finishThrough(sentThrough);
        if (writable != null && queue.accepted() < maxPendingSends) {
            CompletableFuture<Void> room = writable;
            writable = null;
            return room;
        }
        return null;
    }

    /**
     * MS-SMBD 3.1.5.1 Sending Upper Layer Messages, the current text: credit processing per
     * message (3.1.5.9 through {@code receives}), the last send credit never spent without granting
     * one, the keepalive flag of 3.1.6.2, one Data Transfer message per fragment (3.1.5.4).
     *
     * @param ep the endpoint
     * @param receives posts receives for 3.1.5.9
     * @param timers the keepalive state
     */
    void sendUpperLayerMessages(Endpoint ep, Receiver receives, KeepaliveTimers timers) {
        if (model.role != DataModel.Role.ESTABLISHED) {
            return;
        }
        sendQueued(ep, receives, timers);
        postHeld(ep, 0);
    }

    private void sendQueued(Endpoint ep, Receiver receives, KeepaliveTimers timers) {
        while (lifecycle.maySend()) {
            // An upper-layer message carries the credits or keepalive answer of SendImmediate just
            // as well as an empty message of the engine's own.
            boolean upper = !queue.isEmpty();
            if (!upper && !model.sendImmediate) {
                break;
            }
            if (credits.sendCredits == 0) {
                counters.creditStalls++;
                waitForCompletion();
                break;
            }
            SendBuffers.Slot slot;
            try {
                slot = sendBuffers.acquire();
            } catch (RdmaException e) {
                end.terminate(TerminationReason.LOCAL_RESOURCES, "cannot register send buffers: " + e.getMessage());
                return;
            }
            if (slot == null) {
                waitForCompletion(); // every send buffer is in flight; continue when one completes
                break;
            }
            // The message's CreditsGranted is zero until now: perform 3.1.5.9.
            receives.manageCreditsPriorToSending(true, true);
            if (!lifecycle.maySend()) {
                // Posting the receives failed and ended the connection (its buffers may be gone).
                if (sendBuffers != null) {
                    sendBuffers.release(slot);
                }
                return;
            }
            int granted = credits.grantable();
            if (!credits.maySend(granted)) {
                sendBuffers.release(slot);
                counters.creditStalls++;
                waitForCompletion();
                break;
            }
            int flags = timers.flagsForNextMessage();
            if (flags != 0) {
                counters.keepalivesSent++;
            }
            if (!sendDataTransferMessage(ep, upper, slot, granted, flags)) {
                return;
            }
            credits.sent(granted);
            counters.creditsGranted += granted;
            model.sendImmediate = false;
        }
    }

    /**
     * The rules stop for a credit or a send buffer, which only a completion (or a released
     * message's receive) brings, and every completion runs them again.
     */
    private void waitForCompletion() {
        synchronized (inboxLock) {
            waiting = true;
        }
    }

    /**
     * MS-SMBD 3.1.5.4 Sending a Data Transfer Message: builds and posts the next fragment of the
     * next upper-layer message ({@code upper}) or an empty message of the engine's own: DataOffset
     * 24 and DataLength min(remaining, MaxSendSize - 24), or exactly 20 bytes when empty; a remote
     * token to invalidate goes with the first fragment only.
     */
    private boolean sendDataTransferMessage(Endpoint ep, boolean upper, SendBuffers.Slot slot, int granted,
            int flags) {
        int left = upper ? queue.remaining() : 0;
        int dataLength = Math.min(left, model.maxSendSize - Wire.DATA_OFFSET);
        int total = DataTransferHeader.encode(slot.buffer, slot.base, credits.sendCreditTarget, granted, flags,
                left - dataLength, dataLength);
        slot.sgl[0].set(slot.region, slot.base, total);
        slot.dataLength = dataLength;
        slot.postFlags = total <= inlineThreshold ? RequestFlags.INLINE : 0;
        slot.invalidate = upper && queue.tokenGoesNext() && remoteInvalidate;
        slot.remoteToken = upper ? queue.token() : 0;
        slot.message = upper ? queue.next() : SendBuffers.Slot.NO_MESSAGE;
        // Copied last: taking the message's last fragment moves the queue on.
        slot.lastFragment = upper && queue.takeFragment(slot.buffer, slot.base + Wire.DATA_OFFSET, dataLength);
        // The fragment built before this one goes now, deferred: a burst reaches the provider's
        // hardware (the sim's wire, a verbs doorbell) once, with its last post.
        if (!postHeld(ep, RequestFlags.DEFER)) {
            // Ending: the message is failed with the connection's loss, whatever of it was taken.
            sendBuffers.release(slot);
            return false;
        }
        held = slot;
        if (LOG.isLoggable(TRACE)) {
            // What goes on the wire, decoded back from the send buffer.
            LOG.log(TRACE, owner + " sent " + new DataTransferHeader().decode(slot.buffer, slot.base, total));
        }
        counters.fragmentsSent++;
        return true;
    }

    /**
     * Posts the fragment built last, if any.
     *
     * @param flags {@link RequestFlags#DEFER} when another follows at once, else 0
     * @return {@code false} when the provider refused (the connection is ending)
     */
    private boolean postHeld(Endpoint ep, int flags) {
        SendBuffers.Slot slot = held;
        if (slot == null) {
            return true;
        }
        held = null;
        try {
            if (slot.invalidate) {
                ep.postSendAndInvalidate(slot, slot.sgl, 1, slot.postFlags | flags, slot.remoteToken);
            } else {
                ep.postSend(slot, slot.sgl, 1, slot.postFlags | flags);
            }
            return true;
        } catch (RdmaException e) {
            // Its message is failed with the connection's loss reason (failAll).
            sendBuffers.release(slot);
            end.postFailed("send failed", e);
            return false;
        }
    }

    /**
     * A send completed: its buffer is free again; the upper-layer message completes after its last
     * fragment, and a failure Negotiate Response, once sent, ends the connection.
     *
     * @param slot the send buffer
     * @param status the completion's status
     */
    void sendCompleted(SendBuffers.Slot slot, RdmaStatus status) {
        long m = slot.message;
        boolean last = slot.lastFragment;
        sendBuffers.release(slot);
        if (status != RdmaStatus.SUCCESS) {
            // Its message is failed with the connection's loss reason (failAll).
            if (status != RdmaStatus.FLUSHED) {
                end.terminate(TerminationReason.TRANSPORT_ERROR, "SEND completed with " + status + " ("
                        + status.description() + ")");
            }
            return;
        }
        if (m == SendBuffers.Slot.NO_MESSAGE) {
            if (afterNegotiationSend != null) {
                ConnectionLoss why = afterNegotiationSend;
                afterNegotiationSend = null;
                end.terminate(why.reason(), why.detail());
            }
            return;
        }
        // A queue pair's sends complete in the order they were posted (a reliable connection's
        // send queue, in verbs, NDK and the sim alike): the last fragment's completion is the
        // message's, and every message before it completed already.
        if (last) {
            counters.messagesSent++;
            counters.bytesSent += queue.length(m);
            queue.reportSent(m);
            sentThrough = m + 1;
        }
    }

    // ================================================================ negotiation messages

    /**
     * Posts a Negotiate Request or Response (3.1.5.2, 3.1.5.3) from a send buffer. When the peer's
     * message overtook this side's established event, the post waits for {@link
     * #establishedEventArrived()}.
     *
     * @param ep the endpoint
     * @param encoder writes the message at the buffer's position
     * @param size its size
     * @param refusal for a failure response: the loss to terminate with once it is sent; else null
     * @return {@code true} when posted (or deferred)
     */
    boolean postNegotiationMessage(Endpoint ep, Consumer<ByteBuffer> encoder, int size, ConnectionLoss refusal) {
        if (lifecycle.isEnding()) {
            return false; // ended meanwhile: its send buffers are gone
        }
        afterNegotiationSend = refusal;
        try {
            SendBuffers.Slot slot = sendBuffers.acquire();
            encoder.accept(slot.buffer.duplicate().order(slot.buffer.order()).position(slot.base));
            slot.message = SendBuffers.Slot.NO_MESSAGE;
            slot.sgl[0].set(slot.region, slot.base, size);
            int flags = size <= inlineThreshold ? RequestFlags.INLINE : 0;
            try {
                ep.postSend(slot, slot.sgl, 1, flags);
            } catch (RdmaException e) {
                if (e.status() != RdmaStatus.NOT_CONNECTED) {
                    throw e;
                }
                EndpointState now = ep.state();
                if (now == EndpointState.CONNECTING) {
                    // The peer's message overtook our own established event: post once it arrives.
                    deferredUntilEstablished = () -> {
                        try {
                            ep.postSend(slot, slot.sgl, 1, 0);
                        } catch (RdmaException again) {
                            end.postFailed("negotiation send failed", again);
                        }
                    };
                    return true;
                }
                if (now != EndpointState.CONNECTED) {
                    throw e;
                }
                // established between the refused post and the look at the state (the provider's
                // thread): the endpoint takes it now
                ep.postSend(slot, slot.sgl, 1, flags);
            }
            return true;
        } catch (RdmaException e) {
            end.postFailed("negotiation send failed", e);
            return false;
        }
    }

    /** The provider's established event arrived: a deferred negotiation message goes now. */
    void establishedEventArrived() {
        Runnable r = deferredUntilEstablished;
        deferredUntilEstablished = null;
        if (r != null) {
            r.run();
        }
    }

    // ================================================================ closing

    /** No more messages are accepted (a graceful close); those queued still go. */
    void closeIntake() {
        synchronized (inboxLock) {
            sendsClosed = true;
        }
    }

    /**
     * Whether every message accepted has been sent and its sends completed.
     *
     * @return {@code true} when nothing is left to send
     */
    boolean allSent() {
        boolean idle;
        CompletableFuture<Void> room;
        synchronized (inboxLock) {
            room = finishSent();
            idle = queue.accepted() == 0;
        }
        if (room != null) {
            room.complete(null);
        }
        return idle && (sendBuffers == null || sendBuffers.allFree());
    }

    /**
     * The connection ended: every message not yet complete (queued, partly posted, with fragments
     * in flight, or not yet taken by the connection) fails with the loss; nothing more is accepted.
     *
     * @param failure the loss
     */
    void failAll(ConnectionLostException failure) {
        List<Object> failed;
        CompletableFuture<Void> room;
        synchronized (inboxLock) {
            sendsClosed = true;
            queue.finishThrough(sentThrough); // reported sent already: not failed again
            failed = queue.failAll();
            room = writable;
            writable = null;
        }
        SendQueue.fail(failed, failure);
        if (room != null) {
            room.completeExceptionally(failure);
        }
        sendBuffers = null;
        deferredUntilEstablished = null;
    }
}
