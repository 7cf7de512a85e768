package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;

import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.NoBuffersException;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.RegisteredBuffer;
import org.smbdirect.transport.RemoteAccess;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;

/**
 * The sending half of a {@link Session}: the application's sends, in order, inline (DATA) or
 * large, by the peer's RDMA Read of a registered buffer (READ_REQUEST, then the peer's COMPLETE) or
 * by this side's RDMA Writes into the buffer the peer offers (WRITE_REQUEST, TARGET, the writes,
 * then COMPLETE). Guarded by the session's lock; what calls out is collected in {@link Actions}.
 */
final class SendingHalf {
    private final Session session;
    private final BulkConfig config;
    private final Allocator allocator;
    private final ArrayDeque<OutgoingSend> waiting = new ArrayDeque<>();
    /** Large sends started and not finished, by sequence. */
    private final TreeMap<Long, OutgoingSend> large = new TreeMap<>();
    /** Every started send not finished, inline ones included. */
    private final Set<OutgoingSend> unfinished = new LinkedHashSet<>();
    private long nextSequence = 1;
    // counters
    long inlineSends;
    long readTransfers;
    long writeTransfers;
    long bytesSent;
    long noBuffers;
    int inFlightHighWater;

    SendingHalf(Session session, BulkConfig config, Allocator allocator) {
        this.session = session;
        this.config = config;
        this.allocator = allocator;
    }

    /** Sends waiting to start. */
    int waitingCount() {
        return waiting.size();
    }

    /** The application made a send: it waits for its turn. */
    void enqueue(OutgoingSend s) {
        waiting.add(s);
    }

    /** Large sends started and not finished. */
    int largeInTransfer() {
        return large.size();
    }

    /** Whether every send made is finished. */
    boolean idle() {
        return waiting.isEmpty() && unfinished.isEmpty();
    }

    /** The transport sent the control message that completes {@code s} (DATA, or a WRITE's COMPLETE). */
    void sentLocked(OutgoingSend s, Actions a) {
        if (s.state != OutgoingSend.State.DONE) {
            finishLocked(s, null, a);
        }
    }

    /** The session ends: every send not complete fails. */
    void endLocked(ConnectionLostException failure, Actions a) {
        List<OutgoingSend> failed = new ArrayList<>(unfinished);
        failed.addAll(waiting);
        waiting.clear();
        for (OutgoingSend s : failed) {
            if (s.state != OutgoingSend.State.DONE) {
                finishLocked(s, failure, a);
            }
        }
    }

    /** Starts waiting sends while order, the in-flight limit and the peer's window allow. */
    void startSendsLocked(Actions a) {
        if (!session.ready || session.ended != null) {
            return;
        }
        while (!waiting.isEmpty()) {
            OutgoingSend s = waiting.peek();
            if (!large.isEmpty() && nextSequence - large.firstKey() >= session.peer.receiveWindow) {
                break; // the peer holds at most its window beyond its oldest incomplete send
            }
            if (s.length <= session.limits.inlineLimit()) {
                waiting.poll();
                startInlineLocked(s);
                continue;
            }
            if (large.size() >= config.maxInFlight()) {
                break;
            }
            waiting.poll();
            if (session.limits.rdmaChunk() == 0) {
                failLocally(s, new SmbDirectException("a send of " + s.length + " bytes needs RDMA, but the "
                        + "connection's MaxReadWriteSize is 0"), a);
            } else if (session.limits.useRead()) {
                startReadLocked(s, a);
            } else {
                startWriteLocked(s);
            }
        }
    }

    /** Small data travels in one control message. */
    private void startInlineLocked(OutgoingSend s) {
        s.path = OutgoingSend.Path.INLINE;
        s.sequence = nextSequence++;
        s.state = OutgoingSend.State.SENDING;
        unfinished.add(s);
        session.queue(ControlMessage.encode(Type.DATA, 0, s.sequence, s.length, List.of(), s.data), s);
    }

    /**
     * Large data, peer can RDMA Read: the first part inline, the rest registered for read access
     * and described in the request; the receiver reads it and answers COMPLETE.
     */
    private void startReadLocked(OutgoingSend s, Actions a) {
        int first = session.limits.firstPartRead();
        int rest = s.length - first;
        ByteBuffer source;
        try {
            source = directPart(s, first, rest);
        } catch (OutOfMemoryError e) {
            failLocally(s, new NoBuffersException("cannot allocate " + rest + " bytes of direct memory for the send: "
                    + e.getMessage()), a);
            return;
        }
        RegisteredBuffer registration;
        try {
            // the READ_REQUEST queued below carries the descriptors: the registration goes with it
            registration = session.connection.registerForNextSend(source, RemoteAccess.READ);
        } catch (ConnectionLostException e) {
            failLocally(s, e, a);
            return;
        } catch (SmbDirectException e) {
            failLocally(s, new NoBuffersException("cannot register the send's " + rest + " bytes for RDMA Read: "
                    + e.getMessage(), e), a);
            return;
        }
        int count = registration.descriptors().size();
        int maxControlMessage = session.limits.maxControlMessage();
        if (count > ControlMessage.MAX_DESCRIPTORS || ControlMessage.size(count, first) > maxControlMessage) {
            a.add(registration::close);
            failLocally(s, new NoBuffersException("the send's memory needs " + count
                    + " descriptors, more than one control message of at most " + maxControlMessage + " bytes carries"),
                    a);
            return;
        }
        s.path = OutgoingSend.Path.READ;
        s.firstPart = first;
        s.registration = registration;
        startLargeLocked(s, OutgoingSend.State.AWAIT_COMPLETE);
        session.queue(ControlMessage.encode(Type.READ_REQUEST, 0, s.sequence, s.length,
                registration.descriptors(), s.data.slice(s.data.position(), first)), null);
    }

    /**
     * Large data, peer cannot RDMA Read: the first part inline with the total; the receiver
     * registers a buffer and names it in TARGET.
     */
    private void startWriteLocked(OutgoingSend s) {
        s.path = OutgoingSend.Path.WRITE;
        s.firstPart = session.limits.firstPartWrite();
        startLargeLocked(s, OutgoingSend.State.AWAIT_TARGET);
        session.queue(ControlMessage.encode(Type.WRITE_REQUEST, 0, s.sequence, s.length, List.of(),
                s.data.slice(s.data.position(), s.firstPart)), null);
    }

    private void startLargeLocked(OutgoingSend s, OutgoingSend.State state) {
        s.sequence = nextSequence++;
        s.state = state;
        large.put(s.sequence, s);
        unfinished.add(s);
        inFlightHighWater = Math.max(inFlightHighWater, large.size());
    }

    /** The bytes {@code [first, first + n)} of the send in direct memory: the send's own, or a copy. */
    private ByteBuffer directPart(OutgoingSend s, int first, int n) {
        int at = s.data.position() + first;
        if (s.data.isDirect()) {
            return s.data.slice(at, n);
        }
        // "temporary memory" of the original: RDMA needs memory that does not move
        ByteBuffer copy = allocator.allocate(n);
        copy.put(0, s.data, at, n);
        return copy;
    }

    /** TARGET: the receiver's buffer for the rest of a WRITE-path send; write it. */
    void receiveTargetLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || s.state != OutgoingSend.State.AWAIT_TARGET) {
            throw new MalformedMessageException("TARGET for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "awaits none (" + s.state + ")"));
        }
        if (m.totalLength != s.rdmaLength()) {
            throw new MalformedMessageException("TARGET of " + m.totalLength + " bytes for send " + m.sequence
                    + ", which has " + s.rdmaLength() + " bytes to write");
        }
        s.target = m.descriptors;
        try {
            s.source = directPart(s, s.firstPart, s.rdmaLength());
        } catch (OutOfMemoryError e) {
            abandonWriteLocked(s, new NoBuffersException("cannot allocate " + s.rdmaLength()
                    + " bytes of direct memory for the send: " + e.getMessage()), a);
            return;
        }
        s.state = OutgoingSend.State.WRITING;
        issueWritesLocked(s, a);
    }

    /** Posts the next RDMA Writes of a send, at most MaxReadWriteSize each, {@link #RDMA_WINDOW} at once. */
    private void issueWritesLocked(OutgoingSend s, Actions a) {
        while (s.outstanding < Session.RDMA_WINDOW && s.nextOffset < s.rdmaLength() && s.failure == null) {
            int offset = s.nextOffset;
            int n = Math.min(session.limits.rdmaChunk(), s.rdmaLength() - offset);
            ByteBuffer part = s.source.slice(offset, n);
            List<BufferDescriptorV1> target = s.target;
            SmbDirectConnection c = session.connection;
            s.nextOffset += n;
            s.outstanding++;
            a.add(() -> Session.rdma(() -> c.rdmaWrite(part, target, offset), e -> writeDone(s, e)));
        }
    }

    private void writeDone(OutgoingSend s, Throwable e) {
        Actions a = new Actions();
        synchronized (session.lock) {
            if (session.ended != null || s.state != OutgoingSend.State.WRITING) {
                return;
            }
            s.outstanding--;
            if (e != null && s.failure == null) {
                s.failure = Session.unwrap(e);
            }
            if (s.failure == null) {
                issueWritesLocked(s, a);
                if (s.outstanding == 0 && s.nextOffset == s.rdmaLength()) {
                    // The original: the sender waits for the writes' completion, then sends a
                    // control message saying the transfer is complete; the send completes once sent.
                    s.state = OutgoingSend.State.COMPLETING;
                    s.source = null;
                    session.queue(ControlMessage.signal(Type.COMPLETE, s.sequence, true), s);
                }
            } else if (s.outstanding == 0 && !(s.failure instanceof ConnectionLostException)) {
                abandonWriteLocked(s, new NoBuffersException("cannot RDMA-write the send: " + s.failure.getMessage(),
                        s.failure), a);
            }
            session.settleLocked(a);
        }
        a.run();
    }

    /** The sender cannot write after all: the receiver releases its buffer. */
    private void abandonWriteLocked(OutgoingSend s, NoBuffersException why, Actions a) {
        session.queue(ControlMessage.signal(Type.NOBUFS, s.sequence, true), null);
        finishLocked(s, why, a);
    }

    /** COMPLETE from the receiver: it has read the data; deregister and complete the send. */
    void receiveReadCompleteLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || s.state != OutgoingSend.State.AWAIT_COMPLETE) {
            throw new MalformedMessageException("COMPLETE for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "awaits none (" + s.state + ")"));
        }
        finishLocked(s, null, a);
    }

    /** NOBUFS from the receiver: it could not take the send. */
    void receiveReceiverNoBuffersLocked(ControlMessage m, Actions a) throws MalformedMessageException {
        OutgoingSend s = large.get(m.sequence);
        if (s == null || (s.state != OutgoingSend.State.AWAIT_COMPLETE && s.state != OutgoingSend.State.AWAIT_TARGET)) {
            throw new MalformedMessageException("NOBUFS for send " + m.sequence + ", which "
                    + (s == null ? "is not in transfer" : "cannot be refused any more (" + s.state + ")"));
        }
        finishLocked(s, new NoBuffersException("the peer could not allocate or register memory for the "
                + s.length + "-byte send"), a);
    }

    /** A send completed (failure {@code null}) or failed; releases what it held. */
    void finishLocked(OutgoingSend s, Throwable failure, Actions a) {
        s.state = OutgoingSend.State.DONE;
        unfinished.remove(s);
        if (s.path != OutgoingSend.Path.INLINE) {
            large.remove(s.sequence);
        }
        RegisteredBuffer registration = s.registration;
        s.registration = null;
        s.source = null;
        if (registration != null) {
            a.add(registration::close); // deregistered before the application learns the outcome
        }
        if (failure == null) {
            bytesSent += s.length;
            switch (s.path) {
                case INLINE:
                    inlineSends++;
                    break;
                case READ:
                    readTransfers++;
                    break;
                default:
                    writeTransfers++;
            }
            a.add(() -> s.future.complete(null));
        } else {
            if (failure instanceof NoBuffersException) {
                noBuffers++;
            }
            a.add(() -> s.future.completeExceptionally(failure));
        }
    }

    /** A send that failed before any control message of it was sent. */
    private void failLocally(OutgoingSend s, Throwable failure, Actions a) {
        s.path = s.path == null ? OutgoingSend.Path.INLINE : s.path;
        finishLocked(s, failure, a);
    }
}
