package org.smbdirect.protocol.internal;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.ArmType;
import org.smbdirect.rdma.CompletionQueue;
import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * How one connection becomes ESTABLISHED, in either of the two ways a connection starts: MS-SMBD
 * 3.1.4.1 (Connecting to the Peer) and 3.1.7.2 (Connection Arrival), each with its endpoint, its
 * queues and the IRD/ORD Negotiate Header of section 6; the receive for the first message; the
 * Negotiate messages of 3.1.5.2, 3.1.5.3, 3.1.5.6 and 3.1.5.7, whose rules are {@link
 * Negotiator}'s; the receive credits of 3.1.5.9's initialisation and the parameters of 3.1.4.7;
 * and the Negotiation Timer (3.1.6.1).
 *
 * <p>Confined to the connection's thread. The connection owns what outlives the establishment
 * (the endpoint, the completion queue, the upper layer's handler) and the one teardown order;
 * what this asks of it is {@link Owner}.
 */
final class Establishment {
    private static final System.Logger LOG = ConnectionLog.LOG;
    private static final System.Logger.Level TRACE = ConnectionLog.TRACE;

    /** What the establishment asks of its connection. */
    interface Owner extends Terminator, ConnectionListener {

        /**
         * Creates the connection's completion queue.
         *
         * @param depth its entries
         * @return the queue, its notifications going to the connection
         * @throws RdmaException when the provider refuses
         */
        CompletionQueue createCompletionQueue(int depth) throws RdmaException;

        /**
         * The endpoint exists: the connection's end closes it from now on.
         *
         * @param ep the endpoint
         */
        void endpointCreated(Endpoint ep);

        /**
         * The upper layer's handler for a connection that arrived, as its accept handler chose it
         * (3.1.7.2).
         *
         * @param h the handler
         */
        void handler(ConnectionHandler h);

        /** Closes the connection (its accept handler took none). */
        void closeAsync();

        /** Negotiation succeeded: the transport counts the connection as established. */
        void connectionEstablished();
    }

    private final Owner owner;
    private final RdmaProvider provider;
    private final ProviderCapabilities capabilities;
    private final SmbDirectConfig config;
    private final boolean initiator;
    private final DataModel model;
    private final ConnectionStateMachine lifecycle;
    private final ConnectionCounters counters;
    private final ConnectionHandle handle;
    private final KeepaliveTimers timers;
    private final Registrations registrations;
    private final Sender sender;
    private final Receiver receiver;
    private final RdmaOperations rdmaOperations;

    private Endpoint endpoint;
    private int receiveDepth;
    private int inlineThreshold;
    private ByteBuffer negotiationBuffer;
    private MemoryRegion negotiationRegion;
    private final Sge[] negotiationSgl = {new Sge()};
    /** The request context of the receive for the first message. */
    final Object negotiationContext = new Object();
    /** The accept handler of a connection that arrived (3.1.7.2). */
    private AcceptHandler acceptHandler;
    /** Whether the upper layer was given the connection (and so is told of its end). */
    private boolean delivered;

    Establishment(Owner owner, RdmaProvider provider, SmbDirectConfig config, boolean initiator, DataModel model,
            ConnectionStateMachine lifecycle, ConnectionCounters counters, ConnectionHandle handle,
            KeepaliveTimers timers, Registrations registrations, Sender sender, Receiver receiver,
            RdmaOperations rdmaOperations) {
        this.owner = owner;
        this.provider = provider;
        this.capabilities = provider.capabilities();
        this.config = config;
        this.initiator = initiator;
        this.model = model;
        this.lifecycle = lifecycle;
        this.counters = counters;
        this.handle = handle;
        this.timers = timers;
        this.registrations = registrations;
        this.sender = sender;
        this.receiver = receiver;
        this.rdmaOperations = rdmaOperations;
    }

    // ================================================================ 3.1.4.1 and 3.1.7.2

    /**
     * Creates the completion queue and the endpoint options for this connection.
     *
     * @param local the local address to connect from, {@code null} for the provider's first
     */
    private EndpointOptions createQueues(InetAddress local) throws RdmaException {
        int maxDepth = capabilities.maxQueueDepth();
        int sendDepth = Math.min(config.sendBuffers() + RdmaOperations.DEPTH, maxDepth);
        receiveDepth = Math.min(Math.max(config.receiveCreditMax(), 1), maxDepth);
        int cqDepth = Math.min(sendDepth + receiveDepth, capabilities.maxCompletionQueueDepth());
        CompletionQueue cq = owner.createCompletionQueue(cqDepth);
        inlineThreshold = Math.min(capabilities.inlineLimit(), config.maxSendSize());
        return EndpointOptions.builder(cq, cq).sendQueueDepth(sendDepth).receiveQueueDepth(receiveDepth)
                .inlineThreshold(inlineThreshold).rnrRetryCount(config.rnrRetryCount()).localAddress(local).build();
    }

    /**
     * The provider's address to reach a peer from: the first of the peer's family (an IPv6 peer
     * needs an IPv6 local address), on the peer's link for a link-local peer; {@code null} when
     * the provider has none of that family (it then says so when connecting).
     */
    static InetAddress localAddressFor(InetAddress peer, List<InetAddress> own) {
        InetAddress first = null;
        for (InetAddress a : own) {
            if ((a instanceof Inet6Address) != (peer instanceof Inet6Address)) {
                continue;
            }
            if (peer.isLinkLocalAddress() && a.isLinkLocalAddress() && ((Inet6Address) peer).getScopeId() != 0
                    && ((Inet6Address) peer).getScopeId() == ((Inet6Address) a).getScopeId()) {
                return a;
            }
            if (first == null) {
                first = a;
            }
        }
        return first;
    }

    /** The endpoint exists: its send buffers, the CQ armed, the receive for the first message posted. */
    private void endpointCreated(Endpoint ep, CompletionQueue cq) throws RdmaException {
        endpoint = ep;
        owner.endpointCreated(ep);
        ep.attach(owner);
        registrations.attach(ep);
        sender.attach(new SendBuffers(ep, config.maxSendSize(), config.sendBuffers(), capabilities.maxRegionSize()),
                inlineThreshold);
        cq.arm(ArmType.ANY);
        // 3.1.4.1 and 3.1.7.2: at least 512 bytes, posted before the peer can send.
        negotiationBuffer = ByteBuffer.allocateDirect(Wire.NEGOTIATION_RECEIVE_SIZE).order(ByteOrder.LITTLE_ENDIAN);
        negotiationRegion = ep.register(negotiationBuffer, Access.LOCAL_WRITE);
        negotiationSgl[0].set(negotiationRegion, 0, Wire.NEGOTIATION_RECEIVE_SIZE);
        ep.postReceive(negotiationContext, negotiationSgl, 1);
    }

    /**
     * Whether the connection ended, or its provider is being removed, before its first step ran:
     * then the step must not touch the provider (its removal may have returned already); the
     * termination queued by the removal ends the connection.
     */
    private boolean endedBeforeStart() {
        return lifecycle.isEnding() || lifecycle.isProviderStopping();
    }

    /**
     * MS-SMBD 3.1.4.1 Connecting to the Peer (on the connection's thread).
     *
     * @param remote the peer
     * @param local the provider's address to connect from, {@code null} for one of the peer's family
     */
    void connectingToThePeer(InetSocketAddress remote, InetAddress local) {
        if (endedBeforeStart()) {
            return;
        }
        model.initialValues(DataModel.Role.ACTIVE, config);
        timers.startNegotiationTimer(config.activeNegotiationTimeout());
        try {
            EndpointOptions options = createQueues(local != null ? local
                    : localAddressFor(remote.getAddress(), provider.addresses()));
            endpointCreated(provider.createEndpoint(options, owner), options.sendQueue());
            model.ird = Math.min(config.ird(), capabilities.maxIrd());
            model.ord = Math.min(config.ord(), capabilities.maxOrd());
            // MS-SMBD 6.1: the IRD/ORD Negotiate Header leads the request's private data where the
            // transport carries it (iWARP, or as configured).
            byte[] privateData = Negotiator.requestPrivateData(config, capabilities.transportType(), model.ird,
                    model.ord);
            endpoint.connect(remote, privateData, model.ird, model.ord);
        } catch (RdmaException e) {
            owner.terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, e.getMessage());
        }
    }

    /**
     * MS-SMBD 3.1.7.2 Connection Arrival (on the connection's thread).
     *
     * @param request the peer's request
     * @param acceptHandler offered the connection once negotiated
     */
    void connectionArrival(ConnectionRequest request, AcceptHandler acceptHandler) {
        this.acceptHandler = acceptHandler;
        if (endedBeforeStart()) {
            return; // the provider's closing answers the request
        }
        model.initialValues(DataModel.Role.PASSIVE, config);
        timers.startNegotiationTimer(config.passiveNegotiationTimeout());
        try {
            // The receive for the Negotiate Request is posted before accepting, so it always finds one.
            EndpointOptions options = createQueues(null);
            endpointCreated(request.createEndpoint(options, owner), options.sendQueue());
        } catch (RdmaException e) {
            rejectQuietly(request);
            owner.terminate(e.status() == RdmaStatus.INSUFFICIENT_RESOURCES ? TerminationReason.LOCAL_RESOURCES
                    : TerminationReason.CONNECT_FAILED, "cannot prepare the connection: " + e.getMessage());
            return;
        }
        // MS-SMBD 6.2: connection-manager padding (InfiniBand, RoCE) is no header; only the
        // transport the policy names carries one.
        Negotiator.Acceptance a = Negotiator.accept(config, capabilities.transportType(), request.peerPrivateData(),
                request.peerIrd(), request.peerOrd(), Math.min(config.ird(), capabilities.maxIrd()),
                Math.min(config.ord(), capabilities.maxOrd()));
        if (a.refusal != null) {
            rejectQuietly(request);
            owner.terminate(a.refusal.reason(), a.refusal.detail());
            return;
        }
        model.ird = a.depths.ird;
        model.ord = a.depths.ord;
        try {
            request.accept(endpoint, a.replyPrivateData, Math.min(model.ird, capabilities.maxIrd()),
                    Math.min(model.ord, capabilities.maxOrd()));
            lifecycle.moveTo(ConnectionStateMachine.State.NEGOTIATING);
        } catch (RdmaException e) {
            owner.terminate(TerminationReason.CONNECT_FAILED, "accept failed: " + e.getMessage());
        }
    }

    private static void rejectQuietly(ConnectionRequest request) {
        try {
            request.reject(null);
        } catch (RdmaException e) {
            // already answered or timed out
        }
    }

    /** The RDMA connection is up: the initiator starts negotiating (3.1.4.1, 3.1.5.2). */
    void rdmaEstablished() {
        if (lifecycle.isEnding()) {
            return;
        }
        if (!initiator) {
            sender.establishedEventArrived();
            return;
        }
        // MS-SMBD 6.2: the connecting peer uses the values the accepting peer transmitted.
        Negotiator.Acceptance a = Negotiator.established(config, capabilities.transportType(),
                endpoint.peerPrivateData(), model.ird, model.ord, endpoint.ird(), endpoint.ord());
        if (a.refusal != null) {
            owner.terminate(a.refusal.reason(), a.refusal.detail());
            return;
        }
        model.ird = a.depths.ird;
        model.ord = a.depths.ord;
        lifecycle.moveTo(ConnectionStateMachine.State.NEGOTIATING);
        // MS-SMBD 3.1.5.2 Sending a Negotiate Request.
        NegotiateRequest req = Negotiator.negotiateRequest(model);
        if (sender.postNegotiationMessage(endpoint, req::encode, NegotiateRequest.SIZE, null)
                && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " sent " + req);
        }
    }

    // ================================================================ 3.1.5.6 and 3.1.5.7 receiving

    /** The buffer of the receive for the first message. */
    ByteBuffer negotiationBuffer() {
        return negotiationBuffer;
    }

    /** MS-SMBD 3.1.5.6 Receiving a Negotiate Request, then 3.1.5.9 and 3.1.5.3. */
    void receiveNegotiateRequest(ByteBuffer b, int base, int length) {
        Negotiator.Outcome o = Negotiator.receiveNegotiateRequest(model, config, b, base, length);
        traceReceived(o.message);
        if (!o.isAccepted()) {
            refuseOrTerminate(o);
            return;
        }
        initializeReceiveCredits();
        if (lifecycle.isEnding()) {
            return; // posting failed because the connection is already gone: nothing to answer
        }
        if (model.credits.receiveCredits == 0) {
            refuseOrTerminate(Negotiator.Outcome.refuse(Wire.STATUS_INSUFFICIENT_RESOURCES,
                    TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted", null));
            return;
        }
        // MS-SMBD 3.1.5.3 Sending a Negotiate Response: every receive posted is granted.
        int granted = Math.min(model.credits.receiveCredits, CreditLedger.MAX_CREDITS);
        NegotiateResponse rsp = Negotiator.negotiateResponse(model, granted);
        model.credits.granted(granted);
        counters.creditsGranted += granted;
        if (!sender.postNegotiationMessage(endpoint, rsp::encode, NegotiateResponse.SIZE, null)) {
            return;
        }
        traceSent(rsp);
        established();
        // 3.1.7.2 / 3.1.5.6: the new Connection is indicated to the upper layer.
        ConnectionHandler h = null;
        try {
            h = acceptHandler.onConnection(handle);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, handle + ": accept handler failed", e);
        }
        if (h == null) {
            owner.closeAsync();
        } else {
            owner.handler(h);
            delivered = true;
        }
    }

    /** MS-SMBD 3.1.5.7 Receiving a Negotiate Response, then 3.1.5.9. */
    void receiveNegotiateResponse(ByteBuffer b, int base, int length) {
        Negotiator.Outcome o = Negotiator.receiveNegotiateResponse(model, config, b, base, length);
        traceReceived(o.message);
        if (!o.isAccepted()) {
            refuseOrTerminate(o);
            return;
        }
        counters.creditsReceived += model.credits.sendCredits;
        initializeReceiveCredits();
        if (lifecycle.isEnding()) {
            return;
        }
        if (model.credits.receiveCredits == 0) {
            owner.terminate(TerminationReason.NEGOTIATE_NO_RECEIVE_CREDITS, "no receive could be posted");
            return;
        }
        established();
        delivered = true;
        // The peer holds no send credit until our first message grants the receives just posted;
        // send that message at once unless the upper layer queues one first (3.1.5.1).
        model.sendImmediate = true;
        lifecycle.established(handle);
    }

    /**
     * A negotiation that fails: with a failure Negotiate Response first (3.1.5.3, then a graceful
     * termination once it is sent) where 3.1.5.6 says so, else at once.
     */
    private void refuseOrTerminate(Negotiator.Outcome o) {
        if (o.failureStatus == 0) {
            owner.terminate(o.loss.reason(), o.loss.detail());
            return;
        }
        LOG.log(System.Logger.Level.DEBUG, () -> handle + " refusing the negotiation: " + o.loss.message());
        NegotiateResponse rsp = Negotiator.negotiateResponseFailure(o.failureStatus);
        if (sender.postNegotiationMessage(endpoint, rsp::encode, NegotiateResponse.SIZE, o.loss)) {
            traceSent(rsp);
        }
    }

    /** The receive buffers of 3.1.5.9's initialisation: the first slab, then the first posts. */
    private void initializeReceiveCredits() {
        releaseNegotiationBuffer();
        try {
            receiver.createBuffers(endpoint, receiveDepth, capabilities.maxRegionSize());
        } catch (RdmaException e) {
            LOG.log(System.Logger.Level.WARNING, handle + ": cannot register receive buffers: " + e.getMessage());
            return;
        }
        receiver.manageCreditsPriorToSending(true, false);
    }

    /** Negotiation succeeded: Connection.Role ESTABLISHED, the idle timer runs, 3.1.4.7's parameters fixed. */
    private void established() {
        timers.cancelNegotiationTimer();
        timers.established();
        model.role = DataModel.Role.ESTABLISHED;
        lifecycle.moveTo(ConnectionStateMachine.State.ESTABLISHED);
        rdmaOperations.establish(model.ord);
        Parameters p = new Parameters(model, initiator, capabilities, provider);
        handle.established(p, endpoint.localAddress());
        owner.connectionEstablished();
        LOG.log(System.Logger.Level.DEBUG, () -> handle + " established: " + p);
    }

    private void releaseNegotiationBuffer() {
        if (negotiationRegion != null) {
            try {
                endpoint.deregister(negotiationRegion);
            } catch (RdmaException e) {
                // gone with the endpoint
            }
            negotiationRegion = null;
            negotiationBuffer = null;
        }
    }

    private void traceReceived(Object message) {
        if (message != null && LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " received " + message);
        }
    }

    private void traceSent(Object message) {
        if (LOG.isLoggable(TRACE)) {
            LOG.log(TRACE, handle + " sent " + message);
        }
    }

    // ================================================================ 3.1.6.1

    /** MS-SMBD 3.1.6.1 Negotiation Timer: the connection terminates unless negotiated meanwhile. */
    void negotiationTimerExpired() {
        if (model.role != DataModel.Role.ESTABLISHED && !lifecycle.isEnding()) {
            owner.terminate(TerminationReason.NEGOTIATION_TIMEOUT, "no negotiation within "
                    + (initiator ? config.activeNegotiationTimeout() : config.passiveNegotiationTimeout()).toSeconds()
                    + " s (" + model.role + ")");
        }
    }

    // ================================================================ after the end

    /** Whether the upper layer was given the connection (and so is told of its end). */
    boolean delivered() {
        return delivered;
    }

    /** Connection Loss (3.1.7.1): the buffer of the first receive is dropped with the endpoint. */
    void release() {
        negotiationBuffer = null;
        negotiationRegion = null;
    }

    /** The receive queue's depth, fixed when the endpoint was created. */
    int receiveDepth() {
        return receiveDepth;
    }
}
