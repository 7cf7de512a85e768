package org.smbdirect.bulk.internal;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.ConfigurationPolicy;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.osgi.service.metatype.annotations.Designate;
import org.smbdirect.bulk.BulkAcceptHandler;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectException;

/**
 * Publishes the {@link BulkTransfer} service over the {@link SmbDirect} transport service. The
 * transport is bound statically and reluctantly: sessions live on its connections, so the
 * component does not move to another transport while it has one.
 */
@Component(service = BulkTransfer.class, configurationPid = BulkTransferComponent.PID,
        configurationPolicy = ConfigurationPolicy.OPTIONAL)
@Designate(ocd = BulkConfiguration.class)
public final class BulkTransferComponent implements BulkTransfer {
    /** The configuration PID. */
    public static final String PID = "org.smbdirect.bulk";
    private static final System.Logger LOG = System.getLogger(BulkTransferComponent.class.getName());

    private final BulkTransferImpl transfer;

    /**
     * Activates; an out-of-range value fails activation with a message naming the field and its
     * range.
     *
     * @param transport the SMB Direct transport
     * @param configuration the configuration
     */
    @Activate
    public BulkTransferComponent(
            @Reference(name = "transport", service = SmbDirect.class, cardinality = ReferenceCardinality.MANDATORY,
                    policy = ReferencePolicy.STATIC, policyOption = ReferencePolicyOption.RELUCTANT)
            SmbDirect transport,
            BulkConfiguration configuration) {
        this.transfer = new BulkTransferImpl(transport, toConfig(configuration), Allocator.DIRECT,
                BulkTransferImpl.HELLO_TIMEOUT);
    }

    /**
     * Applies a new configuration to sessions made from now on. An invalid one is refused, logged
     * with the field and its range, and the previous one stays in force.
     *
     * @param configuration the new configuration
     */
    @Modified
    void modified(BulkConfiguration configuration) {
        try {
            transfer.configure(toConfig(configuration));
        } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.ERROR, "configuration " + PID + " refused, previous values stay in force: "
                    + e.getMessage());
        }
    }

    /** Stops the listeners and closes the sessions made through this service. */
    @Deactivate
    void deactivate() {
        transfer.closeAll();
    }

    static BulkConfig toConfig(BulkConfiguration c) {
        return BulkConfig.builder().inlineThreshold(c.inlineThreshold()).maxInFlight(c.maxInFlight())
                .maxMessageSize(c.maxMessageSize()).maxQueuedSends(c.maxQueuedSends()).build();
    }

    @Override
    public CompletionStage<BulkSession> connect(InetSocketAddress remote, BulkHandler handler) {
        return transfer.connect(remote, handler);
    }

    @Override
    public BulkSession connect(InetSocketAddress remote, BulkHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException {
        return transfer.connect(remote, handler, timeout);
    }

    @Override
    public BulkListener listen(InetSocketAddress local, BulkAcceptHandler handler) throws SmbDirectException {
        return transfer.listen(local, handler);
    }

    @Override
    public BulkConfig configuration() {
        return transfer.configuration();
    }
}
