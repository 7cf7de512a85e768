package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;

import org.smbdirect.rdma.ConnectionListener;
import org.smbdirect.rdma.ConnectionRequest;
import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A connection request taken from an rdma_cm CONNECT_REQUEST event. Owns the new rdma_cm
 * identifier until it is accepted (then the endpoint owns it) or rejected (then it is destroyed).
 */
final class VerbsConnectionRequest implements ConnectionRequest {
    private static final int PENDING = 0;
    private static final int ACCEPTED = 1;
    private static final int REJECTED = 2;
    private static final int EXPIRED = 3;

    private final VerbsProvider provider;
    private final VerbsListener listener;
    final long serial;
    final long cmId;
    private final byte[] privateData;
    private final int peerIrd;
    private final int peerOrd;
    private final InetSocketAddress local;
    private final InetSocketAddress remote;
    private final Object lock = new Object();
    private int state = PENDING;
    private String expiry;
    private VerbsEndpoint endpoint;

    VerbsConnectionRequest(VerbsProvider provider, VerbsListener listener, long serial, long cmId, byte[] privateData,
            int peerIrd, int peerOrd, InetSocketAddress local, InetSocketAddress remote) {
        this.provider = provider;
        this.listener = listener;
        this.serial = serial;
        this.cmId = cmId;
        this.privateData = privateData;
        this.peerIrd = peerIrd;
        this.peerOrd = peerOrd;
        this.local = local;
        this.remote = remote;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
    }

    @Override
    public byte[] peerPrivateData() {
        return privateData.clone();
    }

    @Override
    public int peerIrd() {
        return peerIrd;
    }

    @Override
    public int peerOrd() {
        return peerOrd;
    }

    @Override
    public Endpoint createEndpoint(EndpointOptions options, ConnectionListener connectionListener) throws RdmaException {
        synchronized (lock) {
            if (state != PENDING) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the request was already " + describe());
            }
            if (endpoint != null) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the request already has an endpoint");
            }
            endpoint = provider.newPassiveEndpoint(this, options, connectionListener);
            return endpoint;
        }
    }

    @Override
    public void accept(Endpoint ep, byte[] data, int ird, int ord) throws RdmaException {
        EndpointConnection.checkConnectionParameters(provider, data, ird, ord);
        VerbsEndpoint accepted;
        synchronized (lock) {
            if (state == EXPIRED) {
                throw new RdmaException(RdmaStatus.TIMEOUT, "the provider gave up on the request: " + expiry);
            }
            if (state != PENDING) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the request was already " + describe());
            }
            if (endpoint == null || ep != endpoint) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "accept needs the endpoint created for this request");
            }
            if (endpoint.state() != org.smbdirect.rdma.EndpointState.IDLE) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the endpoint is " + endpoint.state());
            }
            state = ACCEPTED;
            accepted = endpoint;
        }
        listener.answered(this);
        // MS-SMBD 6.2: the queue pair gets the IRD and ORD before the peer hears of the acceptance.
        accepted.connection.accepted(data, ird, ord);
    }

    @Override
    public void reject(byte[] data) throws RdmaException {
        if (data != null && data.length > provider.capabilities().maxPrivateData()) {
            throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "private data of " + data.length + " bytes exceeds "
                    + provider.capabilities().maxPrivateData());
        }
        synchronized (lock) {
            if (state != PENDING) {
                throw new RdmaException(RdmaStatus.INVALID_STATE, "the request was already " + describe());
            }
            state = REJECTED;
        }
        finish(data, true);
    }

    private String describe() {
        switch (state) {
            case ACCEPTED:
                return "accepted";
            case REJECTED:
                return "rejected";
            default:
                return "given up: " + expiry;
        }
    }

    /** Unanswered for too long, the listener closed, or the peer went away. */
    void expire(String why, boolean sendReject) {
        synchronized (lock) {
            if (state != PENDING) {
                return;
            }
            state = EXPIRED;
            expiry = why;
        }
        finish(null, sendReject);
    }

    boolean isPending() {
        synchronized (lock) {
            return state == PENDING;
        }
    }

    void endpointClosed(VerbsEndpoint ep) {
        // The consumer must still answer; an accept now fails because the endpoint is closed.
    }

    private void finish(byte[] data, boolean sendReject) {
        VerbsEndpoint ep;
        synchronized (lock) {
            ep = endpoint;
        }
        listener.answered(this);
        if (ep != null) {
            ep.connection.requestAbandoned();
        }
        if (sendReject) {
            try {
                VerbsNative.reject(cmId, data);
            } catch (NativeException e) {
                VerbsProvider.LOG.log(Level.DEBUG, "rejecting a connection request: " + e.getMessage());
            }
        }
        provider.forgetSerial(serial, this, ep);
        try {
            VerbsNative.destroyCmId(cmId);
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage());
        }
    }

    @Override
    public String toString() {
        return "VerbsConnectionRequest[" + remote + " -> " + local + "]";
    }
}
