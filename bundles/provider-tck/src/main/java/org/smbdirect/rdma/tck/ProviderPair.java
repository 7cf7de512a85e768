package org.smbdirect.rdma.tck;

import java.net.InetSocketAddress;
import java.util.Objects;

import org.smbdirect.rdma.RdmaProvider;

/**
 * The providers for the active ({@link #client()}) and passive ({@link #server()}) ends of a test's
 * connections, which may be one and the same provider, and the address the passive side listens on.
 */
public final class ProviderPair implements AutoCloseable {
    private final RdmaProvider client;
    private final RdmaProvider server;
    private final InetSocketAddress listenAddress;
    private final AutoCloseable closer;

    private ProviderPair(RdmaProvider client, RdmaProvider server, InetSocketAddress listenAddress, AutoCloseable closer) {
        this.client = Objects.requireNonNull(client, "client");
        this.server = Objects.requireNonNull(server, "server");
        this.listenAddress = Objects.requireNonNull(listenAddress, "listenAddress");
        this.closer = closer;
    }

    /**
     * Describes a pair.
     *
     * @param client the provider that connects
     * @param server the provider that listens and accepts (may be {@code client})
     * @param listenAddress where {@code server} listens; port 0 lets it choose
     * @param closer releases both providers (and anything else the fixture opened); may be {@code null}
     *        to close the providers
     * @return the pair
     */
    public static ProviderPair of(RdmaProvider client, RdmaProvider server, InetSocketAddress listenAddress,
            AutoCloseable closer) {
        return new ProviderPair(client, server, listenAddress, closer);
    }

    /**
     * The provider of the active side.
     *
     * @return the provider
     */
    public RdmaProvider client() {
        return client;
    }

    /**
     * The provider of the passive side.
     *
     * @return the provider
     */
    public RdmaProvider server() {
        return server;
    }

    /**
     * Where the passive side listens.
     *
     * @return the address; port 0 asks the provider to choose
     */
    public InetSocketAddress listenAddress() {
        return listenAddress;
    }

    /**
     * Tells whether both ends use one provider.
     *
     * @return {@code true} when {@link #client()} is {@link #server()}
     */
    public boolean sameProvider() {
        return client == server;
    }

    /**
     * Releases the providers.
     *
     * @throws Exception from the fixture's closer
     */
    @Override
    public void close() throws Exception {
        if (closer != null) {
            closer.close();
        } else {
            client.close();
            server.close();
        }
    }
}
