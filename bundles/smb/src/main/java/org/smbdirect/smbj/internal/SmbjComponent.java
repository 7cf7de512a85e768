package org.smbdirect.smbj.internal;

import java.time.Duration;
import java.util.Optional;

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
import org.smbdirect.smbj.RdmaChannelStatistics;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.TransportLayer;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;

/**
 * Publishes the {@link SmbjTransport} service over the {@link SmbDirect} transport service (which
 * one: the configuration's {@code transport.target}). The transport is bound statically and
 * reluctantly: smbj's connections live on its connections.
 */
@Component(service = SmbjTransport.class, configurationPid = SmbjComponent.PID,
        configurationPolicy = ConfigurationPolicy.OPTIONAL)
@Designate(ocd = SmbjConfiguration.class)
public final class SmbjComponent implements SmbjTransport {
    /** The configuration PID. */
    public static final String PID = "org.smbdirect.smbj";
    private static final System.Logger LOG = System.getLogger(SmbjComponent.class.getName());

    private final SmbjTransportImpl delegate;

    /**
     * Activates; an out-of-range value fails activation with a message naming the field.
     *
     * @param transport the SMB Direct transport
     * @param configuration the configuration
     */
    @Activate
    public SmbjComponent(
            @Reference(name = "transport", service = SmbDirect.class, cardinality = ReferenceCardinality.MANDATORY,
                    policy = ReferencePolicy.STATIC, policyOption = ReferencePolicyOption.RELUCTANT)
            SmbDirect transport,
            SmbjConfiguration configuration) {
        this.delegate = new SmbjTransportImpl(transport, toOptions(configuration));
    }

    /**
     * Applies a new configuration to connections made from now on; an invalid one is refused and
     * logged, and the previous one stays in force.
     *
     * @param configuration the new configuration
     */
    @Modified
    void modified(SmbjConfiguration configuration) {
        try {
            delegate.configure(toOptions(configuration));
        } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.ERROR, "configuration " + PID + " refused, previous values stay in force: "
                    + e.getMessage());
        }
    }

    /** Closes the SMB Direct connections made through this service. */
    @Deactivate
    void deactivate() {
        delegate.closeAll();
    }

    static SmbjOptions toOptions(SmbjConfiguration c) {
        return SmbjOptions.builder().rdmaChannel(c.rdmaChannel()).rdmaThreshold(c.rdmaThreshold())
                .remoteInvalidation(c.remoteInvalidation())
                .connectTimeout(Duration.ofSeconds(c.connectTimeoutSeconds())).readParts(c.readParts())
                .writeParts(c.writeParts()).registerAhead(c.registerAhead())
                .strictSignatures(c.strictSignatures()).build();
    }

    @Override
    public TransportLayer<SMBPacket<?, ?>> createTransportLayer(
            PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers, SmbConfig config) {
        return delegate.createTransportLayer(handlers, config);
    }

    @Override
    public SmbjOptions options() {
        return delegate.options();
    }

    @Override
    public RdmaChannelStatistics statistics() {
        return delegate.statistics();
    }

    @Override
    public Optional<SmbDirectConnection> connectionOf(Connection connection) {
        return delegate.connectionOf(connection);
    }

    @Override
    public int registeredAhead(Connection connection) {
        return delegate.registeredAhead(connection);
    }

    @Override
    public SmbDirect transport() {
        return delegate.transport();
    }
}
