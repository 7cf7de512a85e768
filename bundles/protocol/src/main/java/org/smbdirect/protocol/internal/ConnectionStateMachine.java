package org.smbdirect.protocol.internal;

import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.TerminationReason;

/**
 * The life cycle of one connection around MS-SMBD's Connection.Role: its states and transitions
 * in one place, the first reason for its end latched, and the waiters for its establishment and
 * its end, each woken exactly once.
 *
 * <pre>
 *   CONNECTING --(RDMA established / accepted)--&gt; NEGOTIATING --(3.1.5.6 / 3.1.5.7)--&gt; ESTABLISHED
 *   ESTABLISHED --(graceful close)--&gt; CLOSING
 *   any but CLOSED --(terminate: a rule, a timer, an error, a close)--&gt; TERMINATING
 *   any but CLOSED --(3.1.7.1 Connection Loss)--&gt; CLOSED
 * </pre>
 *
 * <p>Transitions are made on the connection's thread; the state, the loss and the waiters may be
 * read from any thread. The loss may be latched from any thread (a provider call that finds the
 * endpoint gone records it); the first one latched is the one reported.
 */
final class ConnectionStateMachine {

    /** The states. Order matters: later states are further towards the end. */
    enum State {
        /** The RDMA connection is being made (3.1.4.1) or accepted (3.1.7.2). */
        CONNECTING,
        /** The RDMA connection is up; Negotiate messages are exchanged (3.1.5.2 - 3.1.5.7). */
        NEGOTIATING,
        /** Connection.Role is ESTABLISHED: upper-layer messages flow. */
        ESTABLISHED,
        /** The upper layer closed: what it queued is sent, then the connection terminates. */
        CLOSING,
        /** Terminating: the RDMA connection is being disconnected; the provider's event completes it. */
        TERMINATING,
        /** Connection Loss (3.1.7.1) is done: the upper layer was told, everything released. */
        CLOSED
    }

    private static final Map<State, EnumSet<State>> NEXT = new EnumMap<>(State.class);

    static {
        NEXT.put(State.CONNECTING, EnumSet.of(State.NEGOTIATING, State.TERMINATING, State.CLOSED));
        NEXT.put(State.NEGOTIATING, EnumSet.of(State.ESTABLISHED, State.TERMINATING, State.CLOSED));
        NEXT.put(State.ESTABLISHED, EnumSet.of(State.CLOSING, State.TERMINATING, State.CLOSED));
        NEXT.put(State.CLOSING, EnumSet.of(State.TERMINATING, State.CLOSED));
        NEXT.put(State.TERMINATING, EnumSet.of(State.CLOSED));
        NEXT.put(State.CLOSED, EnumSet.noneOf(State.class));
    }

    private volatile State state = State.CONNECTING;
    private final AtomicReference<ConnectionLoss> loss = new AtomicReference<>();
    /** Set before the provider closes, when the provider carrying the connection is going away. */
    private volatile String providerStopped;
    /**
     * The RDMA connection is known to have ended (by the provider's event, or a post refused because
     * the endpoint disconnected): what is already received is handed over, nothing more is posted.
     */
    private boolean rdmaEnded;
    private final CompletableFuture<SmbDirectConnection> established = new CompletableFuture<>();
    private final CompletableFuture<Void> ended = new CompletableFuture<>();

    /**
     * Whether {@code from} may move to {@code to}.
     *
     * @param from a state
     * @param to a state
     * @return {@code true} when the table allows it
     */
    static boolean allowed(State from, State to) {
        return NEXT.get(from).contains(to);
    }

    State state() {
        return state;
    }

    /**
     * Moves to {@code next} if the table allows it from the current state.
     *
     * @param next the state to enter
     * @return {@code true} when moved; {@code false} when not allowed (already further)
     */
    boolean moveTo(State next) {
        if (!allowed(state, next)) {
            return false;
        }
        state = next;
        return true;
    }

    /** Whether upper-layer messages may flow: ESTABLISHED or CLOSING. */
    boolean carriesMessages() {
        State s = state;
        return s == State.ESTABLISHED || s == State.CLOSING;
    }

    /** Whether the connection is terminating or closed. */
    boolean isEnding() {
        return state.compareTo(State.TERMINATING) >= 0;
    }

    boolean isClosed() {
        return state == State.CLOSED;
    }

    /** Marks the RDMA connection gone underneath: deliver what is there, post nothing more. */
    void rdmaEnded() {
        rdmaEnded = true;
    }

    /**
     * Whether the RDMA connection is known to have ended.
     *
     * @return {@code true} once {@link #rdmaEnded()} was called
     */
    boolean isRdmaEnded() {
        return rdmaEnded;
    }

    /**
     * Whether messages are to be sent and receives posted: ESTABLISHED or CLOSING, with the RDMA
     * connection still up.
     *
     * @return {@code true} when sending may go on
     */
    boolean maySend() {
        return carriesMessages() && !rdmaEnded;
    }

    // ---------------------------------------------------------------- the loss

    /**
     * The provider carrying the connection is going away: whatever ends the connection from now on
     * is reported as {@link TerminationReason#PROVIDER_STOPPED}. Any thread.
     *
     * @param detail which provider
     */
    void providerStopping(String detail) {
        providerStopped = detail;
    }

    /**
     * Whether the provider is going away.
     *
     * @return {@code true} after {@link #providerStopping}
     */
    boolean isProviderStopping() {
        return providerStopped != null;
    }

    /** Whether an ending deserves a warning: a broken rule, a timer, or an error, not an orderly end. */
    static boolean isFailure(TerminationReason r) {
        switch (r) {
            case LOCAL_CLOSE:
            case PEER_DISCONNECTED:
            case PROVIDER_STOPPED:
            case TRANSPORT_SHUTDOWN:
                return false;
            default:
                return true;
        }
    }

    /**
     * The loss to report for an end: once the provider is going away, whatever its closing makes
     * fail first (a post on a closed endpoint, the disconnect event) is reported as the provider
     * stopping, the cause the upper layer needs to know.
     *
     * @param reason why
     * @param detail what exactly
     * @return the loss
     */
    ConnectionLoss lossFor(TerminationReason reason, String detail) {
        String stopped = providerStopped;
        if (stopped != null && reason != TerminationReason.PROVIDER_STOPPED) {
            return new ConnectionLoss(TerminationReason.PROVIDER_STOPPED, stopped + " (" + reason + ": " + detail + ")");
        }
        return new ConnectionLoss(reason, detail);
    }

    /**
     * Latches why the connection ended unless a reason is latched already. Any thread.
     *
     * @param l the loss
     * @return the latched loss: the first one
     */
    ConnectionLoss latch(ConnectionLoss l) {
        loss.compareAndSet(null, l);
        return loss.get();
    }

    /**
     * Latches the loss for {@code reason} (see {@link #lossFor}).
     *
     * @param reason why
     * @param detail what exactly
     * @return the latched loss
     */
    ConnectionLoss latch(TerminationReason reason, String detail) {
        ConnectionLoss l = loss.get();
        return l != null ? l : latch(lossFor(reason, detail));
    }

    /**
     * The latched loss.
     *
     * @return why the connection ended, or {@code null} while it has not
     */
    ConnectionLoss loss() {
        return loss.get();
    }

    /**
     * A provider call failed. When the RDMA connection has already ended underneath (the endpoint
     * is no longer connected; the provider's event is on its way), the connection is lost (MS-SMBD
     * 3.1.7.1): the failure says so, with the loss the connection will report, rather than as a
     * refusal that an upper layer takes for a lack of resources.
     *
     * @param what the call
     * @param e the provider's exception
     * @param ep the endpoint, or {@code null}
     * @return the exception for the upper layer
     */
    SmbDirectException providerFailure(String what, RdmaException e, Endpoint ep) {
        ConnectionLoss l = loss.get();
        if (l == null && ep != null && ep.state().compareTo(EndpointState.DISCONNECTED) >= 0) {
            // Not latched: the provider's event, on its way, says why the connection ended (a
            // reset or an error is not a disconnect), and that is what the connection reports.
            l = lossFor(state == State.CLOSING ? TerminationReason.LOCAL_CLOSE : TerminationReason.PEER_DISCONNECTED,
                    "the RDMA connection ended underneath (" + what + ")");
        }
        return l != null ? new ConnectionLostException(l) : new SmbDirectException(what + ": " + e.getMessage(), e);
    }

    // ---------------------------------------------------------------- waiters

    /** Completes with the connection once established (the initiator's connect), or fails with its loss. */
    CompletableFuture<SmbDirectConnection> establishedFuture() {
        return established;
    }

    /** Completes when the connection has ended and released everything. */
    CompletableFuture<Void> endedFuture() {
        return ended;
    }

    /** Wakes the waiters for establishment. */
    void established(SmbDirectConnection handle) {
        established.complete(handle);
    }

    /**
     * Wakes the waiters for establishment with the loss (a no-op once established).
     *
     * @param failure the loss as an exception
     */
    void failEstablishment(ConnectionLostException failure) {
        established.completeExceptionally(failure);
    }

    /** Wakes the waiters for the end: last step of the teardown. */
    void ended() {
        ended.complete(null);
    }

    @Override
    public String toString() {
        return state + (rdmaEnded ? " (RDMA ended)" : "") + (loss.get() == null ? "" : ", " + loss.get());
    }
}
