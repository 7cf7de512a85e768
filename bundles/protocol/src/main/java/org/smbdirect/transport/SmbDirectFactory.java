package org.smbdirect.transport;

import java.util.List;

import org.osgi.annotation.versioning.ProviderType;
import org.smbdirect.rdma.RdmaProvider;

/**
 * Builds an {@link SmbDirect} transport without an OSGi framework. The protocol module publishes
 * an implementation for {@link java.util.ServiceLoader}; a program on the module path declares
 * {@code uses org.smbdirect.transport.SmbDirectFactory} and loads it.
 */
@ProviderType
public interface SmbDirectFactory {

    /**
     * Builds a transport over the given RDMA providers; new connections use the first.
     *
     * @param providers the providers, in order of preference; the caller keeps ownership and closes
     *        them after closing the transport
     * @param config the configuration
     * @return a transport, which the caller closes
     * @throws IllegalArgumentException when {@code providers} is empty
     */
    SmbDirect create(List<RdmaProvider> providers, SmbDirectConfig config);
}
