package org.smbdirect.protocol.internal;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.transport.TerminationReason;

/**
 * How a rule class ends its connection: the receiver "MUST terminate the connection" of 3.1.5.6
 * to 3.1.5.8, the timers of 3.1.6, and the provider's refusals. Implemented by the connection,
 * which owns the one teardown order; called on the connection's thread.
 */
interface Terminator {

    /**
     * Terminates the connection with a reason the upper layer reads; the first reason stands.
     *
     * @param reason why
     * @param detail what exactly
     */
    void terminate(TerminationReason reason, String detail);

    /**
     * A post was refused: the RDMA connection's end when the endpoint has disconnected underneath
     * (the messages already received are handed over first, 3.1.7.1), else a provider failure
     * (3.1.4.2).
     *
     * @param what the post
     * @param e the provider's refusal
     */
    void postFailed(String what, RdmaException e);
}
