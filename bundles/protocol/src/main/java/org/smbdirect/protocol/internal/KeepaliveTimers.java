package org.smbdirect.protocol.internal;

import java.time.Duration;

import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.TerminationReason;

/**
 * The timers of one connection and the keepalive rules that use them: MS-SMBD 3.1.6.1 (the
 * Negotiation Timer), 3.1.6.2 (the Idle Connection Timer), the idle timer's retriggering by every
 * message received (3.1.5.5) and its keepalive-response setting when a keepalive goes out
 * (3.1.5.1), plus two of the implementation's own: the bound on waiting for the provider's terminal
 * event, and the bound on a graceful close.
 *
 * <p>Timers run on the transport's {@link Scheduler} (a virtual clock in tests). An expiry only
 * raises a flag and signals the connection; the rule runs on the connection's thread, where every
 * other method here is called.
 */
final class KeepaliveTimers {
    private final Scheduler scheduler;
    private final Runnable signal;
    private final DataModel model;
    private final long responseTimeoutNanos;

    private Scheduler.Timer negotiationTimer;
    private Scheduler.Timer idleTimer;
    private long idleTimerAt;
    private long idleDeadline;
    private Scheduler.Timer terminationTimer;
    private Scheduler.Timer closeTimer;
    private volatile boolean negotiationFired;
    private volatile boolean idleFired;
    /** A message of the current batch of completions retriggered the Idle Connection Timer. */
    private boolean retriggered;

    /**
     * @param scheduler the clock
     * @param signal makes the connection run (any thread)
     * @param model the data model whose KeepaliveRequested and SendImmediate the rules set
     * @param responseTimeout how long a keepalive may stay unanswered (note 3: 5 s)
     */
    KeepaliveTimers(Scheduler scheduler, Runnable signal, DataModel model, Duration responseTimeout) {
        this.scheduler = scheduler;
        this.signal = signal;
        this.model = model;
        this.responseTimeoutNanos = responseTimeout.toNanos();
    }

    // ---------------------------------------------------------------- 3.1.6.1

    /**
     * Starts the Negotiation Timer (120 s active, 3.1.4.1; 5 s passive, 3.1.7.2).
     *
     * @param timeout the interval
     */
    void startNegotiationTimer(Duration timeout) {
        negotiationTimer = scheduler.schedule(() -> {
            negotiationFired = true;
            signal.run();
        }, timeout.toNanos());
    }

    /** Negotiation is complete: the Negotiation Timer stops. */
    void cancelNegotiationTimer() {
        if (negotiationTimer != null) {
            negotiationTimer.cancel();
            negotiationTimer = null;
        }
    }

    /**
     * MS-SMBD 3.1.6.1: whether the Negotiation Timer expired since the last call (the connection
     * then terminates unless negotiation has completed meanwhile).
     *
     * @return {@code true} once per expiry
     */
    boolean negotiationTimerExpired() {
        if (!negotiationFired) {
            return false;
        }
        negotiationFired = false;
        return true;
    }

    // ---------------------------------------------------------------- 3.1.6.2 and its callers

    /**
     * MS-SMBD 3.1.5.5: a message arrived: the Idle Connection Timer is retriggered and
     * KeepaliveRequested reset. The first message of a batch of completions reads the clock; the
     * others of the batch, microseconds later, count from that reading, until {@link #batchEnded}
     * or another rule sets the timer (a clock reading for every message cost 1 KiB one-way messages
     * 5% of their rate).
     *
     * @return whether the message answered a keepalive of this side (KeepaliveRequested was SENT)
     */
    boolean messageReceived() {
        if (!retriggered && model.keepaliveInterval > 0) {
            setIdleDeadline(model.keepaliveInterval);
            retriggered = true;
        }
        boolean answered = model.keepaliveRequested == DataModel.KeepaliveRequested.SENT;
        model.keepaliveRequested = DataModel.KeepaliveRequested.NONE;
        return answered;
    }

    /** A batch of completions was processed: the next message retriggers the timer from a new reading. */
    void batchEnded() {
        retriggered = false;
    }

    /** Negotiation completed: the Idle Connection Timer starts with Connection.KeepaliveInterval. */
    void established() {
        if (model.keepaliveInterval > 0) {
            setIdleDeadline(model.keepaliveInterval);
        }
    }

    /**
     * MS-SMBD 3.1.5.1: the Flags of the message about to be sent. When a keepalive is PENDING it is
     * SMB_DIRECT_RESPONSE_REQUESTED, KeepaliveRequested becomes SENT, and the Idle Connection Timer
     * is set to the keepalive response timeout (note 3).
     *
     * @return the Flags value
     */
    int flagsForNextMessage() {
        if (model.keepaliveRequested != DataModel.KeepaliveRequested.PENDING) {
            return 0;
        }
        model.keepaliveRequested = DataModel.KeepaliveRequested.SENT;
        setIdleDeadline(responseTimeoutNanos);
        return Wire.SMB_DIRECT_RESPONSE_REQUESTED;
    }

    /**
     * The idle timer's check ran: either the deadline moved on meanwhile (it is checked again
     * then), or MS-SMBD 3.1.6.2 applies.
     *
     * @return why the connection ends, or {@code null}
     */
    ConnectionLoss idleTimerFired() {
        if (!idleFired) {
            return null;
        }
        idleFired = false;
        idleTimer = null;
        if (idleDeadline - scheduler.nanoTime() > 0) {
            scheduleIdleCheck(idleDeadline);
            return null;
        }
        return idleConnectionTimerExpired();
    }

    /**
     * MS-SMBD 3.1.6.2 Idle Connection Timer: terminate if a keepalive is outstanding, else request
     * one (KeepaliveRequested PENDING, SendImmediate so that a message carries it even when nothing
     * is queued). Should the keepalive wait for a credit, the peer has the same time to answer as
     * if it had been sent. An idle connection keeps no reassembly buffer.
     *
     * @return the loss on a keepalive timeout, else {@code null}
     */
    ConnectionLoss idleConnectionTimerExpired() {
        if (model.keepaliveRequested != DataModel.KeepaliveRequested.NONE) {
            return new ConnectionLoss(TerminationReason.KEEPALIVE_TIMEOUT, "no message from the peer within "
                    + Duration.ofNanos(responseTimeoutNanos).toSeconds() + " s of a keepalive (KeepaliveRequested "
                    + model.keepaliveRequested + ")");
        }
        model.keepaliveRequested = DataModel.KeepaliveRequested.PENDING;
        model.sendImmediate = true;
        setIdleDeadline(responseTimeoutNanos);
        model.reassembly.releaseIfIdle();
        return null;
    }

    /**
     * Sets the Idle Connection Timer to expire {@code delayNanos} from now. The scheduled check
     * moves only when the deadline comes earlier; a later deadline is noticed when the check runs,
     * so that retriggering on every message costs no timer operation.
     */
    private void setIdleDeadline(long delayNanos) {
        retriggered = false;
        idleDeadline = scheduler.nanoTime() + delayNanos;
        if (idleTimer == null || idleTimerAt - idleDeadline > 0) {
            if (idleTimer != null) {
                idleTimer.cancel();
            }
            scheduleIdleCheck(idleDeadline);
        }
    }

    /** The check runs at the deadline itself, not after a delay from a second reading of the clock. */
    private void scheduleIdleCheck(long deadline) {
        idleTimerAt = deadline;
        idleTimer = scheduler.scheduleAt(() -> {
            idleFired = true;
            signal.run();
        }, deadline);
    }

    /**
     * When the Idle Connection Timer's check is scheduled (tests).
     *
     * @return the time on the scheduler's clock, or -1 when none is scheduled
     */
    long idleCheckAt() {
        return idleTimer == null ? -1 : idleTimerAt;
    }

    // ---------------------------------------------------------------- the implementation's own

    /**
     * After a disconnect is requested, the provider promises a terminal event; should it never
     * come, {@code then} ends the connection after the keepalive response timeout.
     *
     * @param then what to run (it hands work to the connection)
     */
    void awaitTerminalEvent(Runnable then) {
        terminationTimer = scheduler.schedule(then, responseTimeoutNanos);
    }

    /**
     * A graceful close gives the queued messages the keepalive response timeout to go out.
     *
     * @param then what to run when they have not (it hands work to the connection)
     */
    void boundGracefulClose(Runnable then) {
        closeTimer = scheduler.schedule(then, responseTimeoutNanos);
    }

    /** Stops the protocol timers (negotiation, idle): the connection is terminating. */
    void cancelProtocolTimers() {
        cancelNegotiationTimer();
        if (idleTimer != null) {
            idleTimer.cancel();
            idleTimer = null;
        }
    }

    /** Stops every timer: the connection has ended. */
    void cancelAll() {
        cancelProtocolTimers();
        if (terminationTimer != null) {
            terminationTimer.cancel();
            terminationTimer = null;
        }
        if (closeTimer != null) {
            closeTimer.cancel();
            closeTimer = null;
        }
    }
}
