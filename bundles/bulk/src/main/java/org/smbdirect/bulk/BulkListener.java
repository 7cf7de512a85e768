package org.smbdirect.bulk;

import java.net.InetSocketAddress;

import org.osgi.annotation.versioning.ProviderType;

/** A listening bulk-transfer endpoint. */
@ProviderType
public interface BulkListener extends AutoCloseable {

    /**
     * The address listened on.
     *
     * @return the local address, or {@code null} while no RDMA provider is available
     */
    InetSocketAddress localAddress();

    /** Stops listening; sessions already accepted are unaffected. Idempotent. */
    @Override
    void close();
}
