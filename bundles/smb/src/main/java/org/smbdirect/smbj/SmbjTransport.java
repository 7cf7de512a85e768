package org.smbdirect.smbj;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Optional;

import org.osgi.annotation.versioning.ProviderType;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.transport.TransportLayerFactory;

/**
 * smbj's transport layer over SMB Direct: each SMB2 message is one SMB Direct message (no Direct
 * TCP header, MS-SMB2 2.1), and READ and WRITE requests of at least {@link
 * SmbjOptions#rdmaThreshold()} bytes move their data through the RDMA channel: the transport
 * registers a buffer for the request, sends its Buffer Descriptor V1 list (MS-SMBD 2.2.3.1) in the
 * request, and the server RDMA-reads (WRITE) or RDMA-writes (READ) it. smbj's read, write and
 * transact sizes follow what the SMB Direct connection can carry (MS-SMBD 3.1.4.7).
 *
 * <p>smbj connects to port 445 by default; the transport takes that as SMB Direct's port for the
 * RDMA transport in use (445 on InfiniBand and RoCE, 5445 on iWARP) and any other port as given.
 *
 * <p>Published as an OSGi service by this bundle (configuration PID {@code org.smbdirect.smbj});
 * without OSGi, made by {@link #create}.
 */
@ProviderType
public interface SmbjTransport extends TransportLayerFactory<SMBPacketData<?>, SMBPacket<?, ?>> {

    /**
     * Makes a transport over an SMB Direct transport, without OSGi.
     *
     * @param transport the SMB Direct transport; the caller keeps ownership
     * @param options the options
     * @return the smbj transport
     */
    static SmbjTransport create(SmbDirect transport, SmbjOptions options) {
        try {
            return (SmbjTransport) implementation().invoke(transport, options);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException(e); // the constructor declares no checked exception
        }
    }

    // The implementation's constructor, found by name in this bundle (module), so that the API does
    // not import its implementation, which imports the API. Looked up from here, it needs neither an
    // OSGi service loader mediator nor a "uses" in the module descriptor: the class is this module's
    // own, on a class path as in OSGi (the bundle's class loader) and on a module path.
    private static MethodHandle implementation() {
        String name = "org.smbdirect.smbj.internal.SmbjTransportImpl";
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            return lookup.findConstructor(lookup.findClass(name),
                    MethodType.methodType(void.class, SmbDirect.class, SmbjOptions.class));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("this bundle (module) lacks " + name + ", the implementation of "
                    + "SmbjTransport.create", e);
        }
    }

    /**
     * smbj's configuration builder with this transport as its transport layer factory and smbj's
     * read, write and transact sizes left to what was negotiated (which this transport caps to what
     * the SMB Direct connection carries); the caller adds what else it wants (dialects, timeouts,
     * signing).
     *
     * @return a new builder
     */
    default SmbConfig.Builder configBuilder() {
        return SmbConfig.builder().withTransportLayerFactory(this).withNegotiatedBufferSize();
    }

    /**
     * The options new connections use.
     *
     * @return the options
     */
    SmbjOptions options();

    /**
     * Counters of READ and WRITE requests over the connections this transport made, and of the
     * path their data took.
     *
     * @return a snapshot
     */
    RdmaChannelStatistics statistics();

    /**
     * The SMB Direct connection under an smbj connection made with this transport.
     *
     * @param connection an smbj connection
     * @return its SMB Direct connection; empty when the connection was not made by this transport
     *         or is not connected
     */
    Optional<SmbDirectConnection> connectionOf(Connection connection);

    /**
     * The registrations this transport holds on an smbj connection's SMB Direct connection for
     * requests not yet sent: where registrations are memory regions of their own (a provider
     * without memory windows, such as soft-iWARP), the next READ's and the next WRITE's buffers are
     * registered while the server serves the last ones, one registration per part of a request sent
     * in parts. They count in the SMB Direct connection's live registrations.
     *
     * @param connection an smbj connection
     * @return the count; 0 where none are made ahead, or for a connection not made by this transport
     */
    int registeredAhead(Connection connection);

    /**
     * The SMB Direct transport underneath.
     *
     * @return the transport
     */
    SmbDirect transport();
}
