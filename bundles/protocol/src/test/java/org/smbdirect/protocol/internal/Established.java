package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/** An engine connection negotiated with a raw peer, in either role. */
final class Established implements AutoCloseable {
    final RawPeer peer;
    final ConnectionHandle connection;
    /** The Negotiate Response the engine sent (passive engine), or null. */
    final NegotiateResponse response;
    private final RawPeer.Acceptor acceptor;

    private Established(RawPeer peer, ConnectionHandle connection, NegotiateResponse response, RawPeer.Acceptor acceptor) {
        this.peer = peer;
        this.connection = connection;
        this.response = response;
        this.acceptor = acceptor;
    }

    /** The engine listens; the raw peer connects and sends this Negotiate Request. */
    static Established passive(Fixture fx, SmbDirectTransport t, RdmaProvider engineSide, RdmaProvider peerSide,
            Recorder upper, byte[] negotiateRequest) throws Exception {
        SmbDirectListener l = t.listen(fx.anyAddress(engineSide), upper);
        RawPeer peer = RawPeer.connect(peerSide, l.localAddress(), new IrdOrdHeader(4, 4).toPrivateData(), 16);
        peer.send(negotiateRequest);
        NegotiateResponse rsp = NegotiateResponse.decode(ByteBuffer.wrap(peer.receive()));
        ConnectionHandle c = (ConnectionHandle) upper.connection();
        l.close();
        return new Established(peer, c, rsp, null);
    }

    /**
     * The engine connects; the raw peer answers with this Negotiate Response and consumes the
     * engine's first Data Transfer message (its initial credit grant).
     */
    static Established active(Fixture fx, SmbDirectTransport t, RdmaProvider peerSide, Recorder upper,
            byte[] negotiateResponse) throws Exception {
        RawPeer.Acceptor acceptor = new RawPeer.Acceptor(peerSide, fx.anyAddress(peerSide), 16, null);
        CompletableFuture<SmbDirectConnection> f = t.connect(acceptor.address(), upper).toCompletableFuture();
        RawPeer peer = acceptor.next();
        peer.receive();
        peer.send(negotiateResponse);
        ConnectionHandle c = (ConnectionHandle) Fixture.get(f);
        peer.receive(); // the engine's first Data Transfer message, granting its receive credits
        return new Established(peer, c, null, acceptor);
    }

    @Override
    public void close() {
        peer.close();
        if (acceptor != null) {
            acceptor.close();
        }
    }
}
