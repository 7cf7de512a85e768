package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * The rule classes of one established connection on a {@link FakeEndpoint}, without a fabric or
 * an engine thread: for testing them on their own.
 */
final class RuleFixture {
    final FakeEndpoint ep = new FakeEndpoint();
    final DataModel model = new DataModel();
    final ConnectionStateMachine lifecycle = new ConnectionStateMachine();
    final VirtualScheduler clock = new VirtualScheduler();
    final ConnectionCounters counters = new ConnectionCounters();
    final List<TerminationReason> ended = new ArrayList<>();
    final KeepaliveTimers timers;
    final Receiver receiver;
    final Sender sender;
    /** The transport's connections, which the receive buffer budget is shared among. */
    int connections = 1;

    final Terminator end = new Terminator() {
        @Override
        public void terminate(TerminationReason reason, String detail) {
            ended.add(reason);
            lifecycle.moveTo(ConnectionStateMachine.State.TERMINATING);
        }

        @Override
        public void postFailed(String what, RdmaException e) {
            ended.add(TerminationReason.TRANSPORT_ERROR);
            lifecycle.moveTo(ConnectionStateMachine.State.TERMINATING);
        }
    };

    /**
     * An established connection: the peer asked for {@code target} credits; receives are posted
     * and granted as after negotiation.
     */
    RuleFixture(SmbDirectConfig config, int receiveDepth, int target, ConnectionHandler handler) throws RdmaException {
        model.initialValues(DataModel.Role.PASSIVE, config);
        model.credits.receiveCreditTarget = target;
        model.role = DataModel.Role.ESTABLISHED;
        lifecycle.moveTo(ConnectionStateMachine.State.NEGOTIATING);
        lifecycle.moveTo(ConnectionStateMachine.State.ESTABLISHED);
        ep.receiveDepth = receiveDepth;
        timers = new KeepaliveTimers(clock, () -> { }, model, Duration.ofSeconds(5));
        Registrations registrations = new Registrations(null, lifecycle, 1L << 30);
        receiver = new Receiver("test", null, model, lifecycle, counters, registrations, timers, clock, Runnable::run,
                end, config.strictReassembly(), () -> Receiver.receiveBufferShare(config.receiveBufferBudget(), connections));
        receiver.handler(handler);
        receiver.createBuffers(ep, receiveDepth, 1L << 30);
        receiver.manageCreditsPriorToSending(true, false);
        model.credits.granted(model.credits.grantable());
        sender = new Sender("test", model, lifecycle, counters, end, config.maxPendingSends(), true);
        sender.attach(new SendBuffers(ep, config.maxSendSize(), config.sendBuffers(), 1L << 30), 0);
    }

    /** The peer's next message lands in the oldest posted receive and is processed (3.1.5.8). */
    boolean arrive(byte[] message) {
        ReceiveBuffers.Slot slot = (ReceiveBuffers.Slot) ep.takeReceive();
        if (slot == null) {
            return false;
        }
        slot.buffer.put(slot.base, message);
        model.credits.receiveCompleted();
        receiver.receiveDataTransferMessage(slot, message.length, false, 0);
        model.credits.granted(model.credits.grantable()); // what the engine's next message grants
        return true;
    }

    /** Queues an upper-layer message (3.1.4.2) and runs 3.1.5.1 as the connection's thread would. */
    void send(ByteBuffer message) {
        sender.enqueue(message, null, false, 0, new CompletableFuture<>(), null, null, -1);
        sender.drainInbox();
        sender.sendUpperLayerMessages(ep, receiver, timers);
    }
}
