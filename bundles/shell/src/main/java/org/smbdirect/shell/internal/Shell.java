package org.smbdirect.shell.internal;

import org.osgi.framework.BundleContext;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.transport.SmbDirect;

/** The services the commands work with, as the commands component holds them at the moment. */
interface Shell {

    /** The bundle's context, to find providers and wait for services. */
    BundleContext context();

    /**
     * The transport.
     *
     * @return the service
     * @throws UsageException when there is none (the protocol bundle is not active)
     */
    SmbDirect transport() throws UsageException;

    /** The transport, or {@code null} when there is none. */
    SmbDirect transportOrNull();

    /**
     * The bulk-transfer service.
     *
     * @return the service
     * @throws UsageException when there is none
     */
    BulkTransfer bulk() throws UsageException;

    /** The bulk-transfer service, or {@code null}. */
    BulkTransfer bulkOrNull();

    /**
     * The configurations the commands change.
     *
     * @return access to Config Admin
     * @throws UsageException when there is no Configuration Admin service
     */
    Configs configs() throws UsageException;

    /** Whether a Configuration Admin service is there. */
    boolean hasConfigurationAdmin();
}
