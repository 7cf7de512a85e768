package org.smbdirect.protocol.internal;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.EndpointOptions;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.Sge;

/**
 * An endpoint that records what the rule classes post, for testing them without a fabric: sends
 * keep a copy of their bytes, receives their context; a receive queue depth is enforced as a
 * provider would.
 */
final class FakeEndpoint implements Endpoint {
    final List<byte[]> sent = new ArrayList<>();
    final List<Integer> sentFlags = new ArrayList<>();
    /** The contexts of the sends, in posting order, for completing them. */
    final List<Object> sentContexts = new ArrayList<>();
    final ArrayDeque<Object> receives = new ArrayDeque<>();
    int registrations;
    int receiveDepth = Integer.MAX_VALUE;
    EndpointState state = EndpointState.CONNECTED;
    /**
     * When set, the next send is refused as a provider refuses it while the endpoint connects
     * (NOT_CONNECTED), and the endpoint is in this state by the time anyone looks.
     */
    EndpointState refuseNextSendThen;

    @Override
    public RdmaProvider provider() {
        throw new UnsupportedOperationException();
    }

    @Override
    public EndpointOptions options() {
        throw new UnsupportedOperationException();
    }

    @Override
    public EndpointState state() {
        return state;
    }

    @Override
    public void connect(InetSocketAddress remote, byte[] privateData, int ird, int ord) {
        throw new UnsupportedOperationException();
    }

    @Override
    public byte[] peerPrivateData() {
        return new byte[0];
    }

    @Override
    public int ird() {
        return 16;
    }

    @Override
    public int ord() {
        return 16;
    }

    @Override
    public InetSocketAddress localAddress() {
        return null;
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    public void disconnect() {
        state = EndpointState.DISCONNECTED;
    }

    @Override
    public void close() {
        state = EndpointState.CLOSED;
    }

    @Override
    public void attach(Object attachment) {
    }

    @Override
    public Object attachment() {
        return null;
    }

    @Override
    public MemoryRegion register(ByteBuffer buffer, int access) {
        registrations++;
        ByteBuffer view = buffer.slice();
        int token = registrations;
        return new MemoryRegion() {
            @Override
            public int token() {
                return token;
            }

            @Override
            public long remoteOffset() {
                return 0;
            }

            @Override
            public int length() {
                return view.capacity();
            }

            @Override
            public int access() {
                return access;
            }

            @Override
            public ByteBuffer buffer() {
                return view.duplicate();
            }

            @Override
            public Endpoint endpoint() {
                return FakeEndpoint.this;
            }

            @Override
            public boolean isValid() {
                return true;
            }
        };
    }

    @Override
    public void deregister(MemoryRegion region) {
    }

    @Override
    public void postInvalidate(Object context, MemoryRegion region, int flags) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void postReceive(Object context, Sge[] sgl, int count) throws RdmaException {
        if (receives.size() >= receiveDepth) {
            throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "receive queue full (" + receiveDepth + ")");
        }
        receives.add(context);
    }

    @Override
    public void postSend(Object context, Sge[] sgl, int count, int flags) throws RdmaException {
        if (refuseNextSendThen != null) {
            state = refuseNextSendThen;
            refuseNextSendThen = null;
            throw new RdmaException(RdmaStatus.NOT_CONNECTED, "the endpoint is CONNECTING");
        }
        ByteBuffer b = sgl[0].region().buffer();
        byte[] copy = new byte[sgl[0].length()];
        b.get(sgl[0].offset(), copy);
        sent.add(copy);
        sentFlags.add(flags);
        sentContexts.add(context);
    }

    @Override
    public void postSendAndInvalidate(Object context, Sge[] sgl, int count, int flags, int remoteToken) throws RdmaException {
        postSend(context, sgl, count, flags);
    }

    @Override
    public void postRead(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags) {
        throw new UnsupportedOperationException();
    }

    @Override
    public void postWrite(Object context, Sge[] sgl, int count, long remoteOffset, int remoteToken, int flags) {
        throw new UnsupportedOperationException();
    }

    /** The oldest posted receive, as its completion would return it. */
    Object takeReceive() {
        return receives.poll();
    }
}
