package org.smbdirect.rdma;

import java.net.InetSocketAddress;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A listening endpoint created by {@link RdmaProvider#listen}.
 */
@ProviderType
public interface RdmaListener extends AutoCloseable {

    /**
     * The address listened on; when port 0 was asked for, the port the provider chose.
     *
     * @return the local address
     */
    InetSocketAddress localAddress();

    /**
     * Stops listening. Requests not yet answered are rejected; connections already accepted are
     * unaffected. Idempotent.
     */
    @Override
    void close();
}
