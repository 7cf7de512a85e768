package org.smbdirect.transport;

import java.net.InetSocketAddress;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A listening SMB Direct endpoint created by {@link SmbDirect#listen}. It follows the transport's
 * preferred RDMA provider: when that provider goes away or a preferred one arrives, the listener
 * moves to it; connections already accepted stay where they are.
 */
@ProviderType
public interface SmbDirectListener extends AutoCloseable {

    /**
     * The address listened on (with the chosen port when port 0 was asked for).
     *
     * @return the local address, or {@code null} while no provider is available
     */
    InetSocketAddress localAddress();

    /**
     * The type of the RDMA provider currently listened on.
     *
     * @return for example {@code sim}, or {@code null} while no provider is available
     */
    String providerType();

    /**
     * Stops listening; accepted connections are unaffected. Idempotent.
     */
    @Override
    void close();
}
