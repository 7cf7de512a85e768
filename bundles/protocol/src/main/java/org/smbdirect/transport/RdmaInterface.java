package org.smbdirect.transport;

import java.net.InetAddress;
import java.util.List;
import java.util.Objects;

/**
 * One RDMA interface an SMB Direct transport can carry connections over: an RDMA provider (one
 * adapter) with its addresses, transport and link speed. What an SMB3 server reports for each
 * RDMA-capable interface in FSCTL_QUERY_NETWORK_INTERFACE_INFO, and what a multichannel client
 * compares to pick its channels; {@link SmbDirect#connect(java.net.InetSocketAddress, InetAddress,
 * ConnectionHandler)} opens a channel from a chosen interface's address. Immutable.
 *
 * @since 1.1
 */
public final class RdmaInterface {
    private final String provider;
    private final List<InetAddress> addresses;
    private final String transport;
    private final long linkSpeed;
    private final boolean rdmaRead;
    private final boolean preferred;

    /**
     * Describes an interface.
     *
     * @param provider the provider, as {@code type/name}
     * @param addresses its local addresses
     * @param transport its RDMA transport: {@code InfiniBand}, {@code RoCE} or {@code iWARP}
     * @param linkSpeed bits per second, 0 when unknown
     * @param rdmaRead whether it can RDMA Read
     * @param preferred whether new connections use it when no address is chosen
     */
    public RdmaInterface(String provider, List<InetAddress> addresses, String transport, long linkSpeed,
            boolean rdmaRead, boolean preferred) {
        this.provider = Objects.requireNonNull(provider, "provider");
        this.addresses = List.copyOf(addresses);
        this.transport = Objects.requireNonNull(transport, "transport");
        this.linkSpeed = linkSpeed;
        this.rdmaRead = rdmaRead;
        this.preferred = preferred;
    }

    /**
     * The RDMA provider of the interface.
     *
     * @return {@code type/name}, for example {@code verbs/rxe0}
     */
    public String provider() {
        return provider;
    }

    /**
     * The interface's local addresses: connections from one of them use this interface.
     *
     * @return an immutable list, at least one address
     */
    public List<InetAddress> addresses() {
        return addresses;
    }

    /**
     * The RDMA transport.
     *
     * @return {@code InfiniBand}, {@code RoCE} or {@code iWARP}
     */
    public String transport() {
        return transport;
    }

    /**
     * The link speed (FSCTL_QUERY_NETWORK_INTERFACE_INFO's LinkSpeed).
     *
     * @return bits per second, 0 when the provider does not know it
     */
    public long linkSpeed() {
        return linkSpeed;
    }

    /**
     * Whether the interface can RDMA Read.
     *
     * @return {@code true} when it can
     */
    public boolean rdmaRead() {
        return rdmaRead;
    }

    /**
     * Whether new connections use this interface when no local address is chosen.
     *
     * @return {@code true} for the preferred interface
     */
    public boolean preferred() {
        return preferred;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof RdmaInterface)) {
            return false;
        }
        RdmaInterface i = (RdmaInterface) o;
        return provider.equals(i.provider) && addresses.equals(i.addresses) && transport.equals(i.transport)
                && linkSpeed == i.linkSpeed && rdmaRead == i.rdmaRead && preferred == i.preferred;
    }

    @Override
    public int hashCode() {
        return Objects.hash(provider, addresses, transport, linkSpeed, rdmaRead, preferred);
    }

    @Override
    public String toString() {
        return "RdmaInterface[" + provider + " " + addresses + " " + transport + " " + linkSpeed + " bit/s"
                + (rdmaRead ? "" : ", no RDMA Read") + (preferred ? ", preferred" : "") + "]";
    }
}
