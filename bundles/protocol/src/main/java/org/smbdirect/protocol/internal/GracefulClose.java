package org.smbdirect.protocol.internal;

import java.util.function.Consumer;

import org.smbdirect.transport.TerminationReason;

/**
 * The upper layer's close of an established connection: what it queued is sent first (within the
 * keepalive response timeout), then the RDMA connection is disconnected; before establishment, at
 * once. On the connection's thread.
 */
final class GracefulClose {
    private final ConnectionStateMachine lifecycle;
    private final Sender sender;
    private final RdmaOperations rdmaOperations;
    private final KeepaliveTimers timers;
    private final Consumer<Runnable> execute;
    private final Terminator end;

    /**
     * @param lifecycle the connection's state
     * @param sender the sending side, whose intake closes
     * @param rdmaOperations the RDMA operations, which finish first too
     * @param timers bound the time the close waits
     * @param execute runs a task on the connection's thread
     * @param end ends the connection
     */
    GracefulClose(ConnectionStateMachine lifecycle, Sender sender, RdmaOperations rdmaOperations,
            KeepaliveTimers timers, Consumer<Runnable> execute, Terminator end) {
        this.lifecycle = lifecycle;
        this.sender = sender;
        this.rdmaOperations = rdmaOperations;
        this.timers = timers;
        this.execute = execute;
        this.end = end;
    }

    /**
     * The upper layer closes: gracefully when established; before establishment, at once.
     *
     * @return whether the close waits for what was queued: the connection is now CLOSING, and a
     *         disconnect that follows is this close
     */
    boolean begin() {
        if (lifecycle.state() == ConnectionStateMachine.State.ESTABLISHED) {
            lifecycle.moveTo(ConnectionStateMachine.State.CLOSING);
            sender.closeIntake();
            timers.boundGracefulClose(() -> execute.accept(() -> end.terminate(TerminationReason.LOCAL_CLOSE,
                    "closed before every queued message was sent")));
            check();
            return true;
        } else if (lifecycle.state().compareTo(ConnectionStateMachine.State.ESTABLISHED) < 0) {
            end.terminate(TerminationReason.LOCAL_CLOSE, "closed while connecting");
        }
        return false;
    }

    /** Disconnects once every message accepted before the close has been sent. */
    void check() {
        if (sender.allSent() && rdmaOperations.idle()) {
            end.terminate(TerminationReason.LOCAL_CLOSE, "closed by the upper layer");
        }
    }
}
