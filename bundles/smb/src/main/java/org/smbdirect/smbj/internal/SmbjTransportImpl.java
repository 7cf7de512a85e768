package org.smbdirect.smbj.internal;

import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

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

/** {@link SmbjTransport} over one {@link SmbDirect} transport. */
public final class SmbjTransportImpl implements SmbjTransport {
    private final SmbDirect transport;
    private final Statistics statistics = new Statistics();
    private final Set<SmbDirectTransportLayer> layers = ConcurrentHashMap.newKeySet();
    private volatile SmbjOptions options;

    /**
     * Makes the transport.
     *
     * @param transport the SMB Direct transport
     * @param options the options for new connections
     */
    public SmbjTransportImpl(SmbDirect transport, SmbjOptions options) {
        this.transport = Objects.requireNonNull(transport, "transport");
        this.options = Objects.requireNonNull(options, "options");
    }

    @Override
    public TransportLayer<SMBPacket<?, ?>> createTransportLayer(
            PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers, SmbConfig config) {
        return new SmbDirectTransportLayer(transport, options, statistics, layers, handlers, config);
    }

    /**
     * Replaces the options; connections made from now on use them.
     *
     * @param newOptions the options
     */
    public void configure(SmbjOptions newOptions) {
        options = Objects.requireNonNull(newOptions, "options");
    }

    @Override
    public SmbjOptions options() {
        return options;
    }

    @Override
    public RdmaChannelStatistics statistics() {
        return statistics.snapshot();
    }

    @Override
    public Optional<SmbDirectConnection> connectionOf(Connection connection) {
        for (SmbDirectTransportLayer l : layers) {
            if (l.smbjConnection() == connection) {
                return Optional.ofNullable(l.connection());
            }
        }
        return Optional.empty();
    }

    @Override
    public int registeredAhead(Connection connection) {
        for (SmbDirectTransportLayer l : layers) {
            if (l.smbjConnection() == connection) {
                return l.registeredAhead();
            }
        }
        return 0;
    }

    @Override
    public SmbDirect transport() {
        return transport;
    }

    /**
     * Closes the SMB Direct connections this transport made and that are still open; smbj's
     * connections on them fail their waiting requests as on a lost connection.
     */
    public void closeAll() {
        for (SmbDirectTransportLayer l : layers) {
            l.shutDown();
        }
    }

    /** The transport layers open now (tests). */
    Set<SmbDirectTransportLayer> layers() {
        return layers;
    }

    @Override
    public String toString() {
        return "SmbjTransport[" + transport.provider() + ", " + options + "]";
    }
}
