package org.smbdirect.bulk;

import org.osgi.annotation.versioning.ProviderType;
import org.smbdirect.transport.SmbDirect;

/**
 * Builds a {@link BulkTransfer} without an OSGi framework; published for {@link
 * java.util.ServiceLoader} by the bulk module.
 */
@ProviderType
public interface BulkTransferFactory {

    /**
     * Builds a bulk-transfer layer over a transport.
     *
     * @param transport the SMB Direct transport; the caller keeps ownership
     * @param config the configuration
     * @return the bulk-transfer layer
     */
    BulkTransfer create(SmbDirect transport, BulkConfig config);
}
