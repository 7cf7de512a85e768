package org.smbdirect.protocol.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

import org.osgi.framework.Constants;
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
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.AcceptHandler;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.RdmaInterface;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;
import org.smbdirect.transport.TransportStatistics;

/**
 * Publishes the {@link SmbDirect} transport service. Binds every RDMA provider service matching
 * {@code provider.target} (dynamic, greedy): the highest {@code service.ranking} takes new
 * connections and listeners; a provider that goes away takes its connections with it.
 */
@Component(service = SmbDirect.class, configurationPid = SmbDirectComponent.PID,
        configurationPolicy = ConfigurationPolicy.OPTIONAL)
@Designate(ocd = SmbDirectConfiguration.class)
public final class SmbDirectComponent implements SmbDirect {
    /** The configuration PID. */
    public static final String PID = "org.smbdirect.protocol";
    private static final System.Logger LOG = System.getLogger(SmbDirectComponent.class.getName());

    private final SmbDirectTransport transport;

    /**
     * Activates with a configuration; an out-of-range value fails activation with a message naming
     * the field and its range.
     *
     * @param configuration the configuration
     */
    @Activate
    public SmbDirectComponent(SmbDirectConfiguration configuration) {
        this.transport = new SmbDirectTransport(toConfig(configuration), new SystemScheduler("smbdirect-timers"), true);
    }

    @Reference(name = "provider", service = RdmaProvider.class, cardinality = ReferenceCardinality.MULTIPLE,
            policy = ReferencePolicy.DYNAMIC, policyOption = ReferencePolicyOption.GREEDY)
    void addProvider(RdmaProvider provider, Map<String, Object> properties) {
        transport.addProvider(provider, ranking(properties), serviceId(properties));
    }

    void updatedProvider(RdmaProvider provider, Map<String, Object> properties) {
        transport.updateProvider(provider, ranking(properties));
    }

    void removeProvider(RdmaProvider provider) {
        transport.removeProvider(provider);
    }

    /**
     * Applies a new configuration to connections made from now on. An invalid configuration is
     * refused, logged with the field and its range, and the previous one stays in force.
     *
     * @param configuration the new configuration
     */
    @Modified
    void modified(SmbDirectConfiguration configuration) {
        try {
            transport.updateConfig(toConfig(configuration));
        } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.ERROR, "configuration " + PID + " refused, previous values stay in force: "
                    + e.getMessage());
        }
    }

    @Deactivate
    void deactivate() {
        transport.close();
    }

    static SmbDirectConfig toConfig(SmbDirectConfiguration c) {
        return SmbDirectConfig.builder().receiveCreditMax(c.receiveCreditMax()).sendCreditTarget(c.sendCreditTarget())
                .maxSendSize(c.maxSendSize()).maxReceiveSize(c.maxReceiveSize())
                .maxFragmentedRecvSize(c.maxFragmentedRecvSize()).maxReadWriteSize(c.maxReadWriteSize())
                .keepaliveIntervalSeconds(c.keepaliveIntervalSeconds())
                .keepaliveResponseTimeoutSeconds(c.keepaliveResponseTimeoutSeconds())
                .activeNegotiationTimeoutSeconds(c.activeNegotiationTimeoutSeconds())
                .passiveNegotiationTimeoutSeconds(c.passiveNegotiationTimeoutSeconds())
                .preferredSendSizeLimit(c.preferredSendSizeLimit()).irdOrdHeader(c.irdOrdHeader()).rnrRetryCount(c.rnrRetryCount())
                .strictReassembly(c.strictReassembly()).ird(c.ird())
                .ord(c.ord()).sendBuffers(c.sendBuffers()).maxPendingSends(c.maxPendingSends())
                .engineThreads(c.engineThreads()).rdmaRegistrationCacheBytes(c.rdmaRegistrationCacheBytes())
                .engineSpinMicroseconds(c.engineSpinMicroseconds()).receiveBufferBudget(c.receiveBufferBudget())
                .build();
    }

    private static int ranking(Map<String, Object> p) {
        Object r = p.get(Constants.SERVICE_RANKING);
        return r instanceof Integer ? (Integer) r : 0;
    }

    private static long serviceId(Map<String, Object> p) {
        Object id = p.get(Constants.SERVICE_ID);
        return id instanceof Long ? (Long) id : 0L;
    }

    @Override
    public CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, ConnectionHandler handler) {
        return transport.connect(remote, handler);
    }

    @Override
    public CompletionStage<SmbDirectConnection> connect(InetSocketAddress remote, InetAddress local,
            ConnectionHandler handler) {
        return transport.connect(remote, local, handler);
    }

    @Override
    public List<RdmaInterface> interfaces() {
        return transport.interfaces();
    }

    @Override
    public SmbDirectConnection connect(InetSocketAddress remote, ConnectionHandler handler, Duration timeout)
            throws SmbDirectException, InterruptedException {
        return transport.connect(remote, handler, timeout);
    }

    @Override
    public SmbDirectListener listen(InetSocketAddress local, AcceptHandler handler) throws SmbDirectException {
        return transport.listen(local, handler);
    }

    @Override
    public List<SmbDirectConnection> connections() {
        return transport.connections();
    }

    @Override
    public TransportStatistics statistics() {
        return transport.statistics();
    }

    @Override
    public SmbDirectConfig configuration() {
        return transport.configuration();
    }

    @Override
    public String provider() {
        return transport.provider();
    }

    @Override
    public int defaultPort() {
        return transport.defaultPort();
    }

    /** Consumers of the service do not close it; the component's deactivation does. */
    @Override
    public void close() {
        LOG.log(System.Logger.Level.DEBUG, "close() on the SmbDirect service ignored: the framework owns it");
    }
}
