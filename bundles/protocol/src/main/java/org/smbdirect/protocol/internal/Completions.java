package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;

import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionNotificationHandler;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.CompletionResult;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.transport.TerminationReason;

/**
 * The connection's completion queue and what each completion leads to: a send to {@link Sender},
 * a receive to MS-SMBD 3.1.5.5 (Receiving Any Message: by Connection.Role, to the negotiation of
 * {@link Establishment} or to 3.1.5.8 in {@link Receiver}), an RDMA Read or Write segment to
 * {@link RdmaOperations}; a work request that failed means the RDMA layer has ended the connection
 * (3.1.4.2).
 *
 * <p>Polled on the connection's thread, or on the thread that took the notification when the
 * connection's steps run there; what it needs of its connection is {@link Owner}.
 */
final class Completions {
    private static final System.Logger LOG = ConnectionLog.LOG;
    private static final int RESULT_BATCH = 32;

    /** What the completions ask of their connection, the actor that polls them. */
    interface Owner extends Terminator {

        /**
         * Whether the connection's steps run where its completions are taken.
         *
         * @return {@code false} once moved to the engine's threads
         */
        boolean staysInline();

        /** The rest of the completions are the engine loop's: the connection polls them there. */
        void pollOnLoop();

        /**
         * A bug of ours: logged, counted, and the connection ends rather than the thread.
         *
         * @param where what was being done
         * @param e the failure
         */
        void internalError(String where, RuntimeException e);
    }

    private final Owner owner;
    private final DataModel model;
    private final ConnectionStateMachine lifecycle;
    private final ConnectionCounters counters;
    private final KeepaliveTimers timers;
    private final Sender sender;
    private final Receiver receiver;
    private final RdmaOperations rdmaOperations;
    private final Establishment establishment;
    private final Object negotiationContext;

    private CompletionQueue cq;
    private CompletionResult[] results;

    Completions(Owner owner, DataModel model, ConnectionStateMachine lifecycle, ConnectionCounters counters,
            KeepaliveTimers timers, Sender sender, Receiver receiver, RdmaOperations rdmaOperations,
            Establishment establishment) {
        this.owner = owner;
        this.model = model;
        this.lifecycle = lifecycle;
        this.counters = counters;
        this.timers = timers;
        this.sender = sender;
        this.receiver = receiver;
        this.rdmaOperations = rdmaOperations;
        this.establishment = establishment;
        this.negotiationContext = establishment.negotiationContext;
    }

    /**
     * Creates the queue.
     *
     * @param provider the provider
     * @param depth its entries
     * @param handler takes its notifications
     * @return the queue
     * @throws RdmaException when the provider refuses
     */
    CompletionQueue create(RdmaProvider provider, int depth, CompletionNotificationHandler handler)
            throws RdmaException {
        cq = provider.createCompletionQueue(depth, handler);
        results = new CompletionResult[RESULT_BATCH];
        for (int i = 0; i < results.length; i++) {
            results[i] = new CompletionResult();
        }
        return cq;
    }

    /** Asks for a notification of the next completion. */
    void arm() {
        cq.arm(ArmType.ANY);
    }

    /** Processes every completion in the queue while the connection has not closed. */
    void poll() {
        for (;;) {
            if (!owner.staysInline() && !EventLoopGroup.inEngineStep()) {
                // moved to the engine's threads while this step held a provider's thread: the
                // rest of the completions are the loop's
                owner.pollOnLoop();
                return;
            }
            int n = cq.getResultsEx(results);
            if (n == 0) {
                return;
            }
            for (int i = 0; i < n; i++) {
                CompletionResult r = results[i];
                // Once closed the buffers are released: the rest of the batch (flushed work) has
                // nothing left to do.
                if (!lifecycle.isClosed()) {
                    try {
                        onCompletion(r);
                    } catch (RuntimeException e) {
                        owner.internalError("completion " + r, e);
                    }
                }
                r.set(null, null, null, RdmaStatus.SUCCESS, 0, false, false, 0);
            }
            if (lifecycle.isClosed()) {
                return;
            }
            timers.batchEnded(); // 3.1.5.5: the batch's messages retriggered the idle timer once
        }
    }

    private void onCompletion(CompletionResult r) {
        Object ctx = r.requestContext();
        RdmaStatus status = r.status();
        if (lifecycle.isRdmaEnded() && status != RdmaStatus.SUCCESS) {
            if (ctx instanceof ReceiveBuffers.Slot) {
                receiver.discard((ReceiveBuffers.Slot) ctx);
            }
            return; // what completed still counts; what failed is part of the loss
        }
        if (ctx instanceof SendBuffers.Slot) {
            sender.sendCompleted((SendBuffers.Slot) ctx, status);
        } else if (ctx instanceof ReceiveBuffers.Slot) {
            ReceiveBuffers.Slot slot = (ReceiveBuffers.Slot) ctx;
            model.credits.receiveCompleted();
            if (lifecycle.isEnding()) {
                receiver.discard(slot); // the connection ceased processing
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(slot.buffer, slot.base, r.bytesTransferred(), slot, r.tokenInvalidated(),
                        r.invalidatedToken());
            } else {
                receiver.discard(slot);
                failed(r);
            }
        } else if (ctx == negotiationContext) {
            if (lifecycle.isEnding()) {
                return;
            } else if (status == RdmaStatus.SUCCESS) {
                receiveAnyMessage(establishment.negotiationBuffer(), 0, r.bytesTransferred(), null,
                        r.tokenInvalidated(), r.invalidatedToken());
            } else {
                failed(r);
            }
        } else if (ctx instanceof RdmaTransfer.Segment) {
            if (!rdmaOperations.completed((RdmaTransfer.Segment) ctx, r)) {
                failed(r);
            }
        }
    }

    /** A work request failed: the RDMA layer has ended the connection (3.1.4.2). */
    private void failed(CompletionResult r) {
        if (r.status() != RdmaStatus.FLUSHED) {
            owner.terminate(TerminationReason.TRANSPORT_ERROR, r.type() + " completed with " + r.status() + " ("
                    + r.status().description() + ")");
        }
    }

    /** MS-SMBD 3.1.5.5 Receiving Any Message: by Connection.Role. */
    private void receiveAnyMessage(ByteBuffer b, int base, int length, ReceiveBuffers.Slot slot,
            boolean tokenInvalidated, int token) {
        switch (model.role) {
            case PASSIVE:
                establishment.receiveNegotiateRequest(b, base, length);
                break;
            case ACTIVE:
                establishment.receiveNegotiateResponse(b, base, length);
                break;
            default:
                if (slot == null) {
                    return;
                }
                if (timers.messageReceived()) {
                    counters.keepalivesAnswered++;
                }
                receiver.receiveDataTransferMessage(slot, length, tokenInvalidated, token);
        }
    }

    /** Connection Loss (3.1.7.1): the queue is closed (after the endpoint). */
    void close() {
        if (cq != null) {
            try {
                cq.close();
            } catch (RdmaException e) {
                LOG.log(System.Logger.Level.DEBUG, () -> owner + ": completion queue close: " + e.getMessage());
            }
        }
    }

    /** Connection Loss (3.1.7.1): the results are dropped with the queue. */
    void release() {
        results = null;
    }
}
