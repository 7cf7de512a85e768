package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A connection request waiting at a listener. Its answer (accept, reject, time-out, or the active
 * side withdrawing) is decided under this object's lock, exactly once, and then handed to the
 * connection's actor.
 */
final class SimConnectionRequest extends Timer.Task implements ConnectionRequest {
    static final int PENDING = 0;
    static final int ACCEPTED = 1;
    static final int REJECTED = 2;
    static final int TIMED_OUT = 3;
    static final int CANCELLED = 4;

    final SimConnection connection;
    final SimListener listener;
    final SimProvider provider;

    // guarded by this
    int state = PENDING;
    SimEndpoint endpoint;
    byte[] acceptPrivateData = SimEndpoint.NO_BYTES;
    int acceptIrd;
    int acceptOrd;
    byte[] rejectPrivateData;
    String rejectReason;
    /** Link in the listener's queue of requests to hand to the handler; guarded by the listener. */
    SimConnectionRequest nextPending;

    SimConnectionRequest(SimConnection connection, SimListener listener) {
        this.connection = connection;
        this.listener = listener;
        this.provider = listener.provider;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return connection.active.localAddress;
    }

    @Override
    public InetSocketAddress localAddress() {
        return listener.localAddress();
    }

    @Override
    public byte[] peerPrivateData() {
        return connection.requestPrivateData.clone();
    }

    @Override
    public int peerIrd() {
        return connection.requestIrd;
    }

    @Override
    public int peerOrd() {
        return connection.requestOrd;
    }

    @Override
    public Endpoint createEndpoint(EndpointOptions options, ConnectionListener listener) throws RdmaException {
        synchronized (this) {
            if (state != PENDING) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "createEndpoint: the request was already answered");
            }
            if (endpoint != null) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "createEndpoint: the request already has an endpoint");
            }
            SimEndpoint e = provider.newEndpoint(options, listener, this);
            e.localAddress = localAddress();
            e.remoteAddress = remoteAddress();
            e.peerPrivateData = connection.requestPrivateData;
            endpoint = e;
            return e;
        }
    }

    @Override
    public void accept(Endpoint ep, byte[] privateData, int ird, int ord) throws RdmaException {
        synchronized (this) {
            if (state == TIMED_OUT) {
                throw new RdmaException(RdmaStatus.TIMEOUT, "accept: the request was left unanswered for more than "
                        + provider.live().connectTimeoutMillis + " ms and was rejected");
            }
            if (state == CANCELLED) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "accept: the peer withdrew the request");
            }
            if (state != PENDING) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "accept: the request was already answered");
            }
            if (ep == null || ep != endpoint) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "accept: the endpoint was not created for this request");
            }
            byte[] pd = provider.checkPrivateData("accept", privateData,
                    provider.capabilities().transportType().replyPrivateDataSize());
            provider.checkDepths("accept", ird, ord);
            // MS-SMBD 6.2: the accepting side's IRD and ORD are set before the peer learns of the acceptance.
            endpoint.markAccepting(connection, ird, ord);
            acceptPrivateData = pd;
            acceptIrd = ird;
            acceptOrd = ord;
            state = ACCEPTED;
        }
        listener.answered(this);
        provider.timer.cancel(this);
        connection.kick();
    }

    @Override
    public void reject(byte[] privateData) throws RdmaException {
        byte[] pd = provider.checkPrivateData("reject", privateData, SimProvider.REJECT_PRIVATE_DATA_SIZE);
        if (!answerNegatively(REJECTED, pd, "the peer rejected the request")) {
            throw new RdmaException(RdmaStatus.INVALID_STATE, "reject: the request was already answered");
        }
    }

    /** Rejects unless already answered; returns whether this call answered it. */
    boolean answerNegatively(int how, byte[] privateData, String reason) {
        SimEndpoint e;
        synchronized (this) {
            if (state != PENDING) {
                return false;
            }
            state = how;
            rejectPrivateData = privateData;
            rejectReason = reason;
            e = endpoint;
        }
        listener.answered(this);
        provider.timer.cancel(this);
        if (e != null) {
            e.markRejected();
        }
        connection.kick();
        return true;
    }

    /** After the active side withdrew: an endpoint created for the request ends without events. */
    void releaseEndpoint() {
        SimEndpoint e;
        synchronized (this) {
            e = endpoint;
        }
        listener.answered(this);
        provider.timer.cancel(this);
        if (e != null) {
            e.markRejected();
        }
    }

    /** The provider's limit for an unanswered request ran out. */
    @Override
    void fire() {
        answerNegatively(TIMED_OUT, null, "the peer did not answer within " + provider.live().connectTimeoutMillis + " ms");
    }

    @Override
    public String toString() {
        return "SimConnectionRequest[" + remoteAddress() + " -> " + localAddress() + "]";
    }
}
