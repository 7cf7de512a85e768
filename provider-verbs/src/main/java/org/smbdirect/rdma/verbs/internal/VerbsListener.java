package org.smbdirect.rdma.verbs.internal;

import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.smbdirect.rdma.ConnectionRequestHandler;
import org.smbdirect.rdma.RdmaListener;

/** A listening rdma_cm identifier. Connection requests reach its handler on the connection thread. */
final class VerbsListener implements RdmaListener {
    private final VerbsProvider provider;
    final long serial;
    private final long cmId;
    private final InetSocketAddress local;
    private final ConnectionRequestHandler handler;
    private final Set<VerbsConnectionRequest> unanswered = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private boolean destroyed;

    VerbsListener(VerbsProvider provider, long serial, long cmId, InetSocketAddress local,
            ConnectionRequestHandler handler) {
        this.provider = provider;
        this.serial = serial;
        this.cmId = cmId;
        this.local = local;
        this.handler = handler;
    }

    @Override
    public InetSocketAddress localAddress() {
        return local;
    }

    boolean isClosed() {
        return closed;
    }

    /** A CONNECT_REQUEST event; connection thread. */
    void onRequest(ByteBuffer event, long id) {
        long requestSerial = provider.newSerial();
        VerbsNative.setCmIdContext(id, requestSerial);
        int length = event.getInt(VerbsNative.EV_PRIVATE_DATA_LEN);
        byte[] data = new byte[length];
        event.get(VerbsNative.EV_PRIVATE_DATA, data);
        // rdma_cm reports the peer's values from this side's point of view: our responder
        // resources are the peer's initiator depth (its ORD), our initiator depth its IRD.
        int peerOrd = event.getInt(VerbsNative.EV_RESPONDER_RESOURCES);
        int peerIrd = event.getInt(VerbsNative.EV_INITIATOR_DEPTH);
        InetSocketAddress remote = VerbsNative.socketAddress(VerbsNative.address(id, true));
        InetSocketAddress to = VerbsNative.socketAddress(VerbsNative.address(id, false));
        VerbsConnectionRequest request = new VerbsConnectionRequest(provider, this, requestSerial, id, data, peerIrd,
                peerOrd, to != null ? to : local, remote);
        provider.remember(requestSerial, request);
        unanswered.add(request);
        provider.cmLoop.schedule(provider.settings.requestTimeoutMillis,
                () -> request.expire("unanswered after " + provider.settings.requestTimeoutMillis + " ms", true));
        try {
            handler.onConnectionRequest(request);
        } catch (RuntimeException | Error e) {
            VerbsProvider.LOG.log(Level.WARNING, "ConnectionRequestHandler threw; rejecting the request", e);
            request.expire("the handler threw " + e, true);
        }
    }

    void answered(VerbsConnectionRequest request) {
        unanswered.remove(request);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        provider.cmLoop.executeAndWait(this::destroy, 10_000);
        provider.forget(this);
    }

    /** Destroys the identifier and rejects what is unanswered; connection thread or shutdown. */
    void destroy() {
        synchronized (this) {
            if (destroyed) {
                return;
            }
            destroyed = true;
        }
        closed = true;
        try {
            VerbsNative.destroyCmId(cmId);
        } catch (NativeException e) {
            VerbsProvider.LOG.log(Level.WARNING, e.getMessage());
        }
        for (VerbsConnectionRequest r : unanswered) {
            r.expire("the listener was closed", true);
        }
        provider.forgetSerial(serial, this, null);
    }

    @Override
    public String toString() {
        return "VerbsListener[" + provider.name() + " " + local + "]";
    }
}
