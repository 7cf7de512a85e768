package org.smbdirect.bulk.internal;

import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.bulk.BulkTransferFactory;
import org.smbdirect.transport.SmbDirect;

import aQute.bnd.annotation.Resolution;
import aQute.bnd.annotation.spi.ServiceProvider;

/** Builds the bulk-transfer layer without OSGi; published for {@link java.util.ServiceLoader}. */
// Optional: inside OSGi the DS component is the way in; no Service Loader Mediator is needed.
@ServiceProvider(value = BulkTransferFactory.class, resolution = Resolution.OPTIONAL)
public final class DefaultBulkTransferFactory implements BulkTransferFactory {

    /** Creates the factory (ServiceLoader needs a public no-argument constructor). */
    public DefaultBulkTransferFactory() {
    }

    @Override
    public BulkTransfer create(SmbDirect transport, BulkConfig config) {
        return new BulkTransferImpl(transport, config, Allocator.DIRECT, BulkTransferImpl.HELLO_TIMEOUT);
    }
}
