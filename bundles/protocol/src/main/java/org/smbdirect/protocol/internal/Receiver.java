package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.IntSupplier;

import org.smbdirect.protocol.wire.internal.DataTransferHeader;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.HeldMessage;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.TerminationReason;

/**
 * The receiving side of one established connection: MS-SMBD 3.1.5.8 (Receiving a Data Transfer
 * Message: the checks of {@link DataTransferChecks}, credits, reassembly, delivery to the upper
 * layer) and the receives of 3.1.5.9 (Managing Credits Prior to Sending: posting them), with the
 * receive buffers they use.
 *
 * <p>Receive buffers: a connection starts with {@link #INITIAL_RECEIVE_BUFFERS} and doubles them
 * while its peer is busy and asks for more credits, up to ReceiveCreditMax and its share of the
 * transport's receive buffer budget, and never beyond the receive queue's depth, which is fixed
 * when the endpoint is created. A buffer is posted (one ReceiveCredit), being delivered, held by
 * the upper layer ({@link HeldMessage}), or free. Only free buffers are posted, so an upper layer
 * that holds messages throttles its peer through the credits it stops granting.
 *
 * <p>Confined to the connection's thread, except {@link HeldMessage#release()}, which hands the
 * buffer back through the connection's executor.
 */
final class Receiver {
    private static final System.Logger LOG = ConnectionLog.LOG;
    private static final System.Logger.Level TRACE = System.Logger.Level.TRACE;

    /** Receive buffers a connection starts with. */
    static final int INITIAL_RECEIVE_BUFFERS = 32;
    /** A peer that uses half the receive buffers within this time is busy. */
    static final long RECEIVE_GROWTH_WINDOW_NANOS = 10_000_000L;

    private final Object owner;
    private final SmbDirectConnection handle;
    private final DataModel model;
    private final CreditLedger credits;
    private final ConnectionStateMachine lifecycle;
    private final ConnectionCounters counters;
    private final Registrations registrations;
    private final KeepaliveTimers timers;
    private final Scheduler clock;
    private final Consumer<Runnable> execute;
    private final Terminator end;
    private final boolean strictReassembly;
    private final IntSupplier budgetShare;
    private final DataTransferHeader header = new DataTransferHeader();
    private final DataTransferChecks.Received received = new DataTransferChecks.Received();

    private volatile ConnectionHandler handler;
    private ReceiveBuffers buffers;
    private boolean growthFailed;
    /** Whether the buffers reached the budget's share: one is then kept back for 3.1.5.9's MUST. */
    private boolean keepReserve;
    private int receivedSinceGrowthCheck;
    private long lastGrowthCheckNanos = Long.MIN_VALUE / 2;
    private int held;

    // the message being delivered, which the handler may hold
    private ByteBuffer delivering;
    private OptionalInt deliveringToken;
    private ReceiveBuffers.Slot deliveringSlot;
    private HeldMessageImpl heldNow;
    private volatile Thread deliveringThread;

    Receiver(Object owner, SmbDirectConnection handle, DataModel model, ConnectionStateMachine lifecycle,
            ConnectionCounters counters, Registrations registrations, KeepaliveTimers timers, Scheduler clock,
            Consumer<Runnable> execute, Terminator end, boolean strictReassembly, IntSupplier budgetShare) {
        this.owner = owner;
        this.handle = handle;
        this.model = model;
        this.credits = model.credits;
        this.lifecycle = lifecycle;
        this.counters = counters;
        this.registrations = registrations;
        this.timers = timers;
        this.clock = clock;
        this.execute = execute;
        this.end = end;
        this.strictReassembly = strictReassembly;
        this.budgetShare = budgetShare;
    }

    void handler(ConnectionHandler h) {
        handler = h;
    }

    ConnectionHandler handler() {
        return handler;
    }

    /**
     * The receive buffers of 3.1.5.9's initialisation: the first slab, at most as many as the
     * receive queue holds.
     *
     * @param ep the endpoint
     * @param receiveDepth the receive queue's depth, fixed at the endpoint's creation
     * @param maxRegionSize the provider's region size limit
     * @throws RdmaException when the memory cannot be registered
     */
    void createBuffers(Endpoint ep, int receiveDepth, long maxRegionSize) throws RdmaException {
        int max = maxReceiveBuffers(credits.receiveCreditMax, receiveDepth);
        buffers = new ReceiveBuffers(ep, Math.min(INITIAL_RECEIVE_BUFFERS, max), max, model.maxReceiveSize,
                maxRegionSize);
    }

    /**
     * The most receive buffers a connection has: ReceiveCreditMax, but never more than the
     * receive queue holds (a receive posted beyond its depth is refused, and the depth is fixed
     * when the endpoint is created).
     *
     * @param receiveCreditMax Connection.ReceiveCreditMax
     * @param receiveDepth the receive queue's depth
     * @return the bound, at least 1
     */
    static int maxReceiveBuffers(int receiveCreditMax, int receiveDepth) {
        return Math.max(1, Math.min(receiveCreditMax, receiveDepth));
    }

    /**
     * A connection's share of its transport's receive buffer budget: the budget divided by the
     * connections, never below {@link #INITIAL_RECEIVE_BUFFERS} (what every connection starts
     * with), or no bound without a budget. Many busy connections each cycling through
     * ReceiveCreditMax buffers touch more memory than the caches hold; the share keeps the total
     * near the budget.
     *
     * @param budget the transport's budget, 0 for none
     * @param connections the transport's connections now
     * @return the most receive buffers the connection grows to
     */
    static int receiveBufferShare(int budget, int connections) {
        if (budget == 0) {
            return Integer.MAX_VALUE;
        }
        return Math.max(INITIAL_RECEIVE_BUFFERS, budget / Math.max(1, connections));
    }

    /** The receive buffers there are now (tests and statistics). */
    int capacity() {
        return buffers == null ? 0 : buffers.capacity();
    }

    /** The receive buffers free now: neither posted, being delivered, nor held (tests). */
    int free() {
        return buffers == null ? 0 : buffers.freeCount();
    }

    /** The receive buffers the upper layer holds now. */
    int held() {
        return held;
    }

    /**
     * MS-SMBD 3.1.5.9 Managing Credits Prior to Sending: posts the receives the {@link
     * CreditLedger} asks for; when one must be posted and no buffer is free, allocates one first
     * (within ReceiveCreditMax and the receive depth), as the rule's MUST says.
     *
     * <p>Once a connection's buffers have reached its share of the budget, the optional posts of
     * the rule's last paragraph leave one buffer free, and the MUST posts that one. A connection
     * that mostly sends finds every buffer posted whenever its last send credit comes (its peer
     * holds the credits and rarely uses them); without the reserve each such moment would add a
     * buffer, up to ReceiveCreditMax, whatever the budget.
     *
     * @param sendPath whether a message is being built
     * @param sendQueueNotEmpty whether Connection.SendQueue holds a message
     * @return the receives newly posted
     */
    int manageCreditsPriorToSending(boolean sendPath, boolean sendQueueNotEmpty) {
        if (buffers == null || lifecycle.isRdmaEnded()) {
            return 0;
        }
        boolean must = credits.mustPost(sendQueueNotEmpty);
        int capacity = buffers.capacity();
        int want = credits.receivesToPost(sendPath, sendQueueNotEmpty,
                keepReserve && !must ? capacity - 1 : capacity);
        if (want == 0) {
            return 0;
        }
        if (must && buffers.freeCount() == 0) {
            keepReserve = capacity >= budgetShare.getAsInt();
            grow(1);
        }
        int posted;
        try {
            posted = buffers.post(want);
        } catch (RdmaException e) {
            end.postFailed("posting receives failed", e);
            return 0;
        }
        credits.posted(posted);
        return posted;
    }

    /**
     * MS-SMBD 3.1.5.8 Receiving a Data Transfer Message.
     *
     * @param slot the receive buffer the message is in
     * @param length its length as received
     * @param tokenInvalidated whether the peer invalidated a token with it
     * @param token that token
     */
    void receiveDataTransferMessage(ReceiveBuffers.Slot slot, int length, boolean tokenInvalidated, int token) {
        counters.fragmentsReceived++;
        DataTransferChecks.Received r = received;
        r.length = length;
        if (length >= Wire.DATA_TRANSFER_HEADER_SIZE) {
            DataTransferHeader h = header.decode(slot.buffer, slot.base, length);
            if (LOG.isLoggable(TRACE)) {
                LOG.log(TRACE, owner + " received " + h);
            }
            r.creditsRequested = h.creditsRequested();
            r.creditsGranted = h.creditsGranted();
            r.dataOffset = Integer.toUnsignedLong(h.dataOffset());
            r.dataLength = Integer.toUnsignedLong(h.dataLength());
            r.remainingDataLength = Integer.toUnsignedLong(h.remainingDataLength());
        }
        r.maxFragmentedRecvSize = model.maxFragmentedRecvSize;
        r.reassemblyRemaining = model.reassembly.remaining();
        r.peerHoldsCredit = credits.peerHoldsCredit();
        r.sendCredits = credits.sendCredits;
        r.strictReassembly = strictReassembly;
        TerminationReason violation = DataTransferChecks.check(r);
        if (violation != null) {
            buffers.free(slot);
            end.terminate(violation, r.toString());
            return;
        }
        // (Connection.ReceiveCredits was decremented when the completion was taken.)
        credits.received(header.creditsRequested(), header.creditsGranted());
        counters.creditsReceived += header.creditsGranted();
        growReceiveBuffers();
        if ((header.flags() & Wire.SMB_DIRECT_RESPONSE_REQUESTED) != 0) {
            // The peer asks for a prompt answer. Read literally, 3.1.5.8 would set KeepaliveRequested
            // to PENDING, which makes 3.1.5.1 put SMB_DIRECT_RESPONSE_REQUESTED on the answer itself,
            // and the two peers would then keep requesting responses from each other forever. The
            // answer is therefore a prompt message without the flag, as the implementations that
            // interoperate with Windows do.
            counters.keepalivesReceived++;
            model.sendImmediate = true;
        }
        if (tokenInvalidated) {
            model.invalidatedToken = token;
            model.invalidatedTokenPresent = true;
            registrations.invalidatedByPeer(token);
        }
        int offset = slot.base + (int) r.dataOffset;
        int len = (int) r.dataLength;
        boolean keep = false;
        if (r.creditsOnlyInsideSequence()) {
            LOG.log(System.Logger.Level.DEBUG, () -> owner + ": empty message inside a fragmented sequence, taken "
                    + "as credits and keepalive");
        } else if (!model.reassembly.inProgress() && r.remainingDataLength == 0) {
            // A whole message in one fragment: deliver the receive buffer itself, no copy.
            if (len > 0 || model.invalidatedTokenPresent) {
                ByteBuffer view = slot.view;
                view.limit(offset - slot.base + len).position(offset - slot.base);
                keep = deliver(view, len, slot);
            }
        } else {
            ByteBuffer whole = model.reassembly.add(slot.buffer, offset, len, r.remainingDataLength);
            if (whole != null && deliver(whole, whole.remaining(), null)) {
                model.reassembly.handOver();
            }
        }
        if (!keep) {
            buffers.free(slot);
        }
        if (!lifecycle.carriesMessages()) {
            return;
        }
        // Done after delivery rather than before, so the buffer just processed can be posted again
        // and an answer the upper layer queued meanwhile carries the credits.
        if (model.sendQueue.isEmpty() && manageCreditsPriorToSending(false, false) > 0) {
            model.sendImmediate = true;
        }
    }

    /** A receive that will never be processed (failed, flushed, or after the end): its buffer is free. */
    void discard(ReceiveBuffers.Slot slot) {
        buffers.free(slot);
    }

    /**
     * Passes a complete message and Connection.InvalidatedToken to the upper layer (3.1.5.8).
     *
     * @return whether the upper layer holds the message (its buffer stays with it)
     */
    private boolean deliver(ByteBuffer message, int length, ReceiveBuffers.Slot slot) {
        OptionalInt token = model.takeInvalidatedToken();
        counters.messagesReceived++;
        counters.bytesReceived += length;
        ConnectionHandler h = handler;
        if (h == null) {
            return false;
        }
        delivering = message;
        deliveringToken = token;
        deliveringSlot = slot;
        heldNow = null;
        deliveringThread = Thread.currentThread();
        try {
            h.onMessage(handle, message, token);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, owner + ": message handler failed", e);
        } finally {
            deliveringThread = null;
            delivering = null;
            deliveringSlot = null;
        }
        return heldNow != null;
    }

    /**
     * The upper layer keeps the message being delivered ({@link SmbDirectConnection#holdMessage()}).
     * Only on the connection's thread, inside {@link ConnectionHandler#onMessage}.
     *
     * @return the held message
     * @throws IllegalStateException outside a delivery
     */
    HeldMessage hold() {
        if (!delivering()) {
            throw new IllegalStateException("holdMessage() is called from within ConnectionHandler.onMessage, "
                    + "for the message being delivered");
        }
        if (heldNow == null) {
            heldNow = new HeldMessageImpl(this, delivering, deliveringToken, deliveringSlot);
            held++;
        }
        return heldNow;
    }

    /**
     * Whether the calling thread is inside this connection's delivery of a message (and so may
     * hold it). Any thread.
     *
     * @return {@code true} inside {@link ConnectionHandler#onMessage}
     */
    boolean delivering() {
        return deliveringThread == Thread.currentThread();
    }

    /**
     * A held message was released (on the connection's thread): its buffer is posted again at once
     * (3.1.5.9, as when sending). A message of its own carries the credit only when the peer runs
     * low on credits; otherwise it travels with the next message.
     */
    private void released(HeldMessageImpl m) {
        held--;
        if (m.slot != null && buffers != null) {
            buffers.free(m.slot);
        }
        if (lifecycle.maySend() && manageCreditsPriorToSending(true, false) > 0 && model.sendQueue.isEmpty()
                && credits.peerCredits <= credits.receiveCreditTarget / 2) {
            model.sendImmediate = true;
        }
    }

    /**
     * ReceiveCreditMax is a ceiling, not a reservation: when the peer asks for more credits than
     * there are buffers and has used half of them within {@link #RECEIVE_GROWTH_WINDOW_NANOS}
     * (more than 1,600 messages a second with the initial 32), the buffers double, up to the
     * connection's share of the budget ({@link #receiveBufferShare}). Idle and quiet connections
     * stay small; a busy peer reaches the full window within a few hundred messages. Memory that
     * cannot be had leaves the connection as it is.
     */
    private void growReceiveBuffers() {
        if (lifecycle.isRdmaEnded()) {
            return;
        }
        int capacity = buffers.capacity();
        if (++receivedSinceGrowthCheck < Math.max(1, capacity / 2)) {
            return;
        }
        receivedSinceGrowthCheck = 0;
        long now = clock.nanoTime();
        boolean busy = now - lastGrowthCheckNanos < RECEIVE_GROWTH_WINDOW_NANOS;
        lastGrowthCheckNanos = now;
        int share = budgetShare.getAsInt();
        keepReserve &= capacity >= share;
        int limit = Math.min(Math.min(credits.receiveCreditTarget, buffers.max()), share);
        if (busy && capacity < limit) {
            grow(Math.min(capacity, limit - capacity));
        }
    }

    private void grow(int n) {
        if (growthFailed || buffers.capacity() >= buffers.max()) {
            return;
        }
        try {
            buffers.grow(n);
        } catch (RdmaException e) {
            growthFailed = true;
            LOG.log(System.Logger.Level.DEBUG, () -> owner + ": receive buffers stay at " + buffers.capacity() + ": "
                    + e.getMessage());
        }
    }

    /** The connection ended: the buffers go with the endpoint; held messages keep their bytes. */
    void release() {
        buffers = null;
    }

    /** A message the upper layer keeps beyond its delivery; its buffer and credit return on release. */
    private static final class HeldMessageImpl implements HeldMessage {
        private final Receiver receiver;
        private final ByteBuffer message;
        private final OptionalInt token;
        final ReceiveBuffers.Slot slot;
        private final AtomicBoolean released = new AtomicBoolean();

        HeldMessageImpl(Receiver receiver, ByteBuffer message, OptionalInt token, ReceiveBuffers.Slot slot) {
            this.receiver = receiver;
            this.message = message;
            this.token = token;
            this.slot = slot;
        }

        @Override
        public ByteBuffer message() {
            return message;
        }

        @Override
        public OptionalInt invalidatedToken() {
            return token;
        }

        @Override
        public void release() {
            if (released.compareAndSet(false, true)) {
                receiver.execute.accept(() -> receiver.released(this));
            }
        }
    }
}
