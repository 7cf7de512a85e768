package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.protocol.internal.ConnectionStateMachine.State;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.TerminationReason;

/** The connection's life cycle: its transition table, the first loss latched, waiters woken once. */
class ConnectionStateMachineTest {

    /** Every pair of states: whether the table allows the move. */
    @ParameterizedTest(name = "{0} -> {1}: {2}")
    @CsvSource({
        "CONNECTING, NEGOTIATING, true", "CONNECTING, ESTABLISHED, false", "CONNECTING, CLOSING, false",
        "CONNECTING, TERMINATING, true", "CONNECTING, CLOSED, true", "CONNECTING, CONNECTING, false",
        "NEGOTIATING, ESTABLISHED, true", "NEGOTIATING, CLOSING, false", "NEGOTIATING, TERMINATING, true",
        "NEGOTIATING, CLOSED, true", "NEGOTIATING, CONNECTING, false",
        "ESTABLISHED, CLOSING, true", "ESTABLISHED, TERMINATING, true", "ESTABLISHED, CLOSED, true",
        "ESTABLISHED, NEGOTIATING, false", "ESTABLISHED, ESTABLISHED, false",
        "CLOSING, TERMINATING, true", "CLOSING, CLOSED, true", "CLOSING, ESTABLISHED, false",
        "TERMINATING, CLOSED, true", "TERMINATING, ESTABLISHED, false", "TERMINATING, CLOSING, false",
        "CLOSED, CLOSED, false", "CLOSED, TERMINATING, false", "CLOSED, CONNECTING, false",
    })
    void transitionTable(State from, State to, boolean allowed) {
        assertEquals(allowed, ConnectionStateMachine.allowed(from, to));
    }

    /** The way of a connection that negotiates, is used, closes and ends. */
    @Test
    void aConnectionsLife_movesInOrder_andNeverBack() {
        ConnectionStateMachine m = new ConnectionStateMachine();
        assertEquals(State.CONNECTING, m.state());
        assertTrue(m.moveTo(State.NEGOTIATING));
        assertFalse(m.carriesMessages());
        assertTrue(m.moveTo(State.ESTABLISHED));
        assertTrue(m.carriesMessages() && m.maySend());
        assertTrue(m.moveTo(State.CLOSING));
        assertTrue(m.carriesMessages(), "a closing connection still sends what was queued");
        m.rdmaEnded();
        assertFalse(m.maySend(), "nothing is posted once the RDMA connection ended");
        assertTrue(m.moveTo(State.TERMINATING));
        assertTrue(m.isEnding());
        assertFalse(m.moveTo(State.ESTABLISHED));
        assertTrue(m.moveTo(State.CLOSED));
        assertFalse(m.moveTo(State.CLOSED), "the teardown runs once");
    }

    /** The first loss latched is the one reported, whoever latches later and from whichever thread. */
    @Test
    void firstLossLatched() throws Exception {
        ConnectionStateMachine m = new ConnectionStateMachine();
        Thread[] threads = new Thread[8];
        for (int i = 0; i < threads.length; i++) {
            TerminationReason r = TerminationReason.values()[i];
            threads[i] = new Thread(() -> m.latch(r, "thread"));
        }
        ConnectionLoss first = m.latch(TerminationReason.KEEPALIVE_TIMEOUT, "first");
        for (Thread t : threads) {
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }
        assertSame(first, m.loss());
        assertEquals(TerminationReason.KEEPALIVE_TIMEOUT, m.latch(TerminationReason.LOCAL_CLOSE, "later").reason());
    }

    /** Once the provider is going away, every loss is reported as the provider stopping. */
    @Test
    void providerStopping_everyLossIsProviderStopped() {
        ConnectionStateMachine m = new ConnectionStateMachine();
        m.providerStopping("provider sim/a stopped");
        ConnectionLoss l = m.latch(TerminationReason.PEER_DISCONNECTED, "RDMA connection disconnected");
        assertEquals(TerminationReason.PROVIDER_STOPPED, l.reason());
        assertTrue(l.detail().contains("PEER_DISCONNECTED"), l.detail());
    }

    /** The waiters for establishment and for the end are each woken exactly once. */
    @Test
    void waiters_wokenOnce() {
        ConnectionStateMachine m = new ConnectionStateMachine();
        AtomicInteger established = new AtomicInteger();
        AtomicInteger ended = new AtomicInteger();
        m.establishedFuture().whenComplete((c, t) -> established.incrementAndGet());
        m.endedFuture().whenComplete((v, t) -> ended.incrementAndGet());
        m.established(null);
        m.failEstablishment(new ConnectionLostException(new ConnectionLoss(TerminationReason.LOCAL_CLOSE, "x")));
        m.ended();
        m.ended();
        assertEquals(1, established.get());
        assertFalse(m.establishedFuture().isCompletedExceptionally(), "established first: the later loss is not reported there");
        assertEquals(1, ended.get());
    }
}
