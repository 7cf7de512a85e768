package org.smbdirect.protocol.internal;

import java.time.Duration;

import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.ConnectionParameters;

/**
 * MS-SMBD 3.1.4.7 Query Connection Parameters: the values a connection negotiated, fixed when it
 * was established. Immutable.
 */
final class Parameters implements ConnectionParameters {
    private final int maxSendSize;
    private final int maxFragmentedSendSize;
    private final int maxReceiveSize;
    private final int maxFragmentedRecvSize;
    private final int maxReadWriteSize;
    private final Duration keepaliveInterval;
    private final int protocol;
    private final int receiveCreditMax;
    private final int sendCreditTarget;
    private final int ird;
    private final int ord;
    private final boolean initiator;
    private final boolean rdmaRead;
    private final boolean remoteInvalidate;
    private final String provider;
    private final String transport;

    /**
     * @param m the data model once Connection.Role is ESTABLISHED
     * @param initiator whether this side connected
     * @param capabilities the provider's
     * @param provider the provider
     */
    Parameters(DataModel m, boolean initiator, ProviderCapabilities capabilities, RdmaProvider provider) {
        maxSendSize = m.maxSendSize;
        maxFragmentedSendSize = m.maxFragmentedSendSize;
        maxReceiveSize = m.maxReceiveSize;
        maxFragmentedRecvSize = m.maxFragmentedRecvSize;
        maxReadWriteSize = m.maxReadWriteSize;
        keepaliveInterval = Duration.ofNanos(m.keepaliveInterval);
        protocol = m.protocol;
        receiveCreditMax = m.credits.receiveCreditMax;
        sendCreditTarget = m.credits.sendCreditTarget;
        ird = m.ird;
        ord = m.ord;
        this.initiator = initiator;
        rdmaRead = capabilities.rdmaRead();
        remoteInvalidate = capabilities.remoteInvalidate();
        this.provider = provider.type() + "/" + provider.name();
        transport = capabilities.transportType().displayName();
    }

    @Override
    public String transport() {
        return transport;
    }

    @Override
    public int maxSendSize() {
        return maxSendSize;
    }

    @Override
    public int maxFragmentedSendSize() {
        return maxFragmentedSendSize;
    }

    @Override
    public int maxReceiveSize() {
        return maxReceiveSize;
    }

    @Override
    public int maxFragmentedRecvSize() {
        return maxFragmentedRecvSize;
    }

    @Override
    public int maxReadWriteSize() {
        return maxReadWriteSize;
    }

    @Override
    public Duration keepaliveInterval() {
        return keepaliveInterval;
    }

    @Override
    public int protocolVersion() {
        return protocol;
    }

    @Override
    public int receiveCreditMax() {
        return receiveCreditMax;
    }

    @Override
    public int sendCreditTarget() {
        return sendCreditTarget;
    }

    @Override
    public int ird() {
        return ird;
    }

    @Override
    public int ord() {
        return ord;
    }

    @Override
    public boolean initiator() {
        return initiator;
    }

    @Override
    public boolean rdmaRead() {
        return rdmaRead;
    }

    @Override
    public boolean remoteInvalidate() {
        return remoteInvalidate;
    }

    @Override
    public String provider() {
        return provider;
    }

    @Override
    public String toString() {
        return String.format("MaxSendSize=%d MaxReceiveSize=%d MaxFragmentedSendSize=%d MaxFragmentedRecvSize=%d "
                + "MaxReadWriteSize=%d KeepaliveInterval=%ds Protocol=0x%04X ReceiveCreditMax=%d "
                + "SendCreditTarget=%d IRD=%d ORD=%d provider=%s", maxSendSize, maxReceiveSize,
                maxFragmentedSendSize, maxFragmentedRecvSize, maxReadWriteSize, keepaliveInterval.toSeconds(),
                protocol, receiveCreditMax, sendCreditTarget, ird, ord, provider);
    }
}
