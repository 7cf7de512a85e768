package org.smbdirect.bulk.internal;

/**
 * What one side of a session announces in its HELLO: its capabilities and the limits the peer
 * must respect. An immutable value.
 */
final class Hello {
    /** The peer's RDMA provider can RDMA Read, so large sends to it travel by its RDMA Read. */
    final boolean canRdmaRead;
    /** Large transfers this side, as a sender, has moving at once; the peer queues no more. */
    final int maxInFlight;
    /** The largest send this side accepts. */
    final int maxMessageSize;
    /** The largest RDMA operation this side's connection performs (Connection.MaxReadWriteSize). */
    final int maxReadWriteSize;
    /** Sends the peer may start beyond the oldest one this side has not yet received completely. */
    final int receiveWindow;

    Hello(boolean canRdmaRead, int maxInFlight, int maxMessageSize, int maxReadWriteSize, int receiveWindow) {
        this.canRdmaRead = canRdmaRead;
        this.maxInFlight = maxInFlight;
        this.maxMessageSize = maxMessageSize;
        this.maxReadWriteSize = maxReadWriteSize;
        this.receiveWindow = receiveWindow;
    }

    @Override
    public String toString() {
        return "HELLO[canRdmaRead=" + canRdmaRead + ", maxInFlight=" + maxInFlight + ", maxMessageSize="
                + maxMessageSize + ", maxReadWriteSize=" + maxReadWriteSize + ", receiveWindow=" + receiveWindow
                + "]";
    }
}
