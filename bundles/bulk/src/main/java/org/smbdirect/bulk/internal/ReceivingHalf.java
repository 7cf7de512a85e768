package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * The receiving half of a {@link Session}: the peer's sends, checked against the sequence, the
 * receive window and the announced limits, moved into this side's memory (by RDMA Read of the
 * peer's buffer, or by offering a registered buffer for the peer's RDMA Writes) within this side's
 * maxInFlight, and delivered to the handler in order. Changes only on the connection's engine
 * thread (and RDMA completions), under the session's lock.
 */
final class ReceivingHalf {
    private static final System.Logger LOG = System.getLogger(Session.class.getName());
    private final Session session;
    private final BulkConfig config;
    private final Allocator allocator;
    private long expectedSequence = 1;
    /** The peer's sends not yet delivered, in sequence order; the head is never READY for long. */
    private final ArrayDeque<IncomingTransfer> undelivered = new ArrayDeque<>();
    /** The peer's large sends not yet READY or SKIPPED, by sequence. */
    private final Map<Long, IncomingTransfer> incoming = new HashMap<>();
    private final ArrayDeque<IncomingTransfer> incomingQueued = new ArrayDeque<>();
    private int incomingMoving;
    long bytesReceived;

    ReceivingHalf(Session session, BulkConfig config, Allocator allocator) {
        this.session = session;
        this.config = config;
        this.allocator = allocator;
    }

    /** The session ends: every registration is released (after a loss the transport revoked them already). */
    void endLocked(Actions a) {
        for (IncomingTransfer t : incoming.values()) {
            if (t.registration != null) {
                a.add(t.registration::close);
                t.registration = null;
            }
            t.buffer = null;
        }
        incoming.clear();
        incomingQueued.clear();
        undelivered.clear();
    }

    /** Checks a send's sequence and the window, and takes its number. */
    private void acceptSequenceLocked(ControlMessage m) throws MalformedMessageException {
        if (m.sequence != expectedSequence) {
            throw new MalformedMessageException(m.type + " with Sequence " + Long.toUnsignedString(m.sequence)
                    + ", expected " + expectedSequence);
        }
        IncomingTransfer oldest = undelivered.peekFirst();
        int window = session.local.receiveWindow;
        if (oldest != null && m.sequence - oldest.sequence >= window) {
            throw new MalformedMessageException(m.type + " " + m.sequence + " beyond the receive window of "
                    + window + " sends past send " + oldest.sequence + ", which is still incomplete");
        }
        expectedSequence++;
    }

    /** DATA: a whole send; delivered in order. */
    void receiveDataLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        acceptSequenceLocked(m);
        ByteBuffer copy = ByteBuffer.allocate(m.totalLength);
        copy.put(m.inline.duplicate()).flip();
        undelivered.add(IncomingTransfer.inline(m.sequence, copy));
        deliverLocked(a);
    }

    /** READ_REQUEST or WRITE_REQUEST: a large send; moved as soon as an in-flight slot is free. */
    void receiveRequestLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        acceptSequenceLocked(m);
        boolean read = m.type == Type.READ_REQUEST;
        if (m.totalLength > config.maxMessageSize()) {
            throw new MalformedMessageException(m.type + " of " + m.totalLength + " bytes exceeds the MaxMessageSize "
                    + config.maxMessageSize() + " this side announced");
        }
        if (read && !session.local.canRdmaRead) {
            throw new MalformedMessageException("READ_REQUEST although this side announced it cannot RDMA Read");
        }
        if (session.limits.rdmaChunk() == 0) {
            throw new MalformedMessageException(m.type + " although MaxReadWriteSize is 0");
        }
        if (incoming.size() >= session.peer.maxInFlight) {
            throw new MalformedMessageException(m.type + " " + m.sequence + " while " + incoming.size()
                    + " transfers are open, the peer announced at most " + session.peer.maxInFlight);
        }
        byte[] first = new byte[m.inline.remaining()];
        m.inline.duplicate().get(first);
        IncomingTransfer t = IncomingTransfer.large(m.sequence, read, m.totalLength, first, m.descriptors);
        undelivered.add(t);
        incoming.put(t.sequence, t);
        incomingQueued.add(t);
        startIncomingLocked(a);
    }

    /** Starts queued incoming transfers while this side's in-flight limit allows. */
    private void startIncomingLocked(Actions a) {
        while (incomingMoving < config.maxInFlight() && !incomingQueued.isEmpty() && session.ended == null) {
            IncomingTransfer t = incomingQueued.poll();
            incomingMoving++;
            t.holdsSlot = true;
            t.state = IncomingTransfer.State.MOVING;
            ByteBuffer buffer;
            try {
                buffer = allocator.allocate(t.totalLength);
            } catch (OutOfMemoryError e) {
                refuseLocked(t, "cannot allocate " + t.totalLength + " bytes: " + e.getMessage(), a);
                continue;
            }
            buffer.put(0, t.firstPart);
            t.firstPart = null;
            t.buffer = buffer;
            if (t.read) {
                issueReadsLocked(t, a);
            } else {
                offerTargetLocked(t, a);
            }
        }
    }

    /** WRITE path: register the rest of the buffer for write access and name it in TARGET. */
    private void offerTargetLocked(IncomingTransfer t, Actions a) {
        RegisteredBuffer registration;
        try {
            // the TARGET queued below carries the descriptors: the registration goes with it
            registration = session.connection.registerForNextSend(t.buffer.slice(t.firstPartLength, t.rdmaLength()),
                    RemoteAccess.WRITE);
        } catch (ConnectionLostException e) {
            return; // the loss ends every transfer
        } catch (SmbDirectException e) {
            refuseLocked(t, "cannot register " + t.rdmaLength() + " bytes for RDMA Write: " + e.getMessage(), a);
            return;
        }
        int count = registration.descriptors().size();
        if (count > ControlMessage.MAX_DESCRIPTORS
                || ControlMessage.size(count, 0) > session.limits.maxControlMessage()) {
            a.add(registration::close);
            refuseLocked(t, "the buffer needs " + count + " descriptors, more than one control message carries", a);
            return;
        }
        t.registration = registration;
        session.queue(ControlMessage.encode(Type.TARGET, 0, t.sequence, t.rdmaLength(),
                registration.descriptors(), null), null);
    }

    /** READ path: posts the next RDMA Reads, at most MaxReadWriteSize each, {@link #RDMA_WINDOW} at once. */
    private void issueReadsLocked(IncomingTransfer t, Actions a) {
        while (t.outstanding < Session.RDMA_WINDOW && t.nextOffset < t.rdmaLength() && t.failure == null) {
            int offset = t.nextOffset;
            int n = Math.min(session.limits.rdmaChunk(), t.rdmaLength() - offset);
            ByteBuffer part = t.buffer.slice(t.firstPartLength + offset, n);
            List<BufferDescriptorV1> source = t.source;
            SmbDirectConnection c = session.connection;
            t.nextOffset += n;
            t.outstanding++;
            a.add(() -> Session.rdma(() -> c.rdmaRead(part, source, offset), e -> readDone(t, e)));
        }
    }

    private void readDone(IncomingTransfer t, Throwable e) {
        Actions a = new Actions();
        synchronized (session.lock) {
            if (session.ended != null || t.state != IncomingTransfer.State.MOVING) {
                return;
            }
            t.outstanding--;
            if (e != null && t.failure == null) {
                t.failure = Session.unwrap(e);
            }
            if (t.failure == null) {
                issueReadsLocked(t, a);
                if (t.outstanding == 0 && t.nextOffset == t.rdmaLength()) {
                    // The original: the receiver reports the transfer complete; the sender deregisters.
                    session.queue(ControlMessage.signal(Type.COMPLETE, t.sequence, false), null);
                    readyLocked(t, a);
                }
            } else if (t.outstanding == 0 && !(t.failure instanceof ConnectionLostException)) {
                refuseLocked(t, "cannot RDMA-read the data: " + t.failure.getMessage(), a);
            }
            session.settleLocked(a);
        }
        a.run();
    }

    /** COMPLETE from the sender (WRITE path): the data is in the buffer; deregister and deliver. */
    void receiveWriteCompleteLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        IncomingTransfer t = awaitingWritesLocked(m);
        a.add(t.registration::close);
        t.registration = null;
        readyLocked(t, a);
    }

    /** NOBUFS from the sender (WRITE path): it cannot write after all; release the buffer. */
    void receiveSenderNoBuffersLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        IncomingTransfer t = awaitingWritesLocked(m);
        a.add(t.registration::close);
        t.registration = null;
        t.buffer = null;
        settleIncomingLocked(t, IncomingTransfer.State.SKIPPED, a);
    }

    private IncomingTransfer awaitingWritesLocked(ControlMessage m) throws MalformedMessageException {
        IncomingTransfer t = incoming.get(m.sequence);
        if (t == null || t.read || t.registration == null) {
            throw new MalformedMessageException(m.type + " from the sender for send " + m.sequence + ", for which "
                    + (t == null ? "no transfer is open" : "no TARGET was offered"));
        }
        return t;
    }

    /** This side cannot take a transfer: NOBUFS to the sender; later sends go on. */
    private void refuseLocked(IncomingTransfer t, String reason, Actions a) {
        LOG.log(System.Logger.Level.DEBUG, () -> session + ": refusing " + t + ": " + reason);
        if (t.registration != null) {
            a.add(t.registration::close);
            t.registration = null;
        }
        t.buffer = null;
        session.queue(ControlMessage.signal(Type.NOBUFS, t.sequence, false), null);
        settleIncomingLocked(t, IncomingTransfer.State.SKIPPED, a);
    }

    private void readyLocked(IncomingTransfer t, Actions a) {
        settleIncomingLocked(t, IncomingTransfer.State.READY, a);
    }

    private void settleIncomingLocked(IncomingTransfer t, IncomingTransfer.State state, Actions a) {
        t.state = state;
        incoming.remove(t.sequence);
        if (state == IncomingTransfer.State.SKIPPED) {
            releaseSlotLocked(t);
        }
        deliverLocked(a);
        startIncomingLocked(a);
    }

    /**
     * A transfer keeps its slot, and so its memory, until delivered: transfers that complete
     * early wait for order within this side's maxInFlight. Transfers start in order, so the
     * oldest incomplete one always has a slot.
     */
    private void releaseSlotLocked(IncomingTransfer t) {
        if (t.holdsSlot) {
            t.holdsSlot = false;
            incomingMoving--;
        }
    }

    /** Hands every send that is complete and has no incomplete send before it to the handler. */
    private void deliverLocked(Actions a) {
        IncomingTransfer t;
        while ((t = undelivered.peekFirst()) != null) {
            if (t.state == IncomingTransfer.State.SKIPPED) {
                undelivered.poll();
            } else if (t.state == IncomingTransfer.State.READY) {
                undelivered.poll();
                releaseSlotLocked(t);
                ByteBuffer data = t.buffer;
                t.buffer = null;
                bytesReceived += data.remaining();
                a.add(() -> session.deliver(data));
            } else {
                break;
            }
        }
    }
}
