package org.smbdirect.smbj.internal;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectFactory;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.smbj.SMBClient;
import com.hierynomus.smbj.connection.Connection;

/**
 * What the transport's tests run on: smbj over the engine, on a simulated fabric of their own,
 * against a {@link FakeSmb2Server} that negotiates the given dialect.
 */
final class SmbjOverSim implements AutoCloseable {
    final RdmaProvider provider;
    final SmbDirect transport;
    final FakeSmb2Server server;
    final SmbjTransport smbj;
    final SMBClient client;

    SmbjOverSim(SMB2Dialect dialect, SmbjOptions options, SmbDirectConfig config) throws Exception {
        this(dialect, options, config, true);
    }

    /**
     * As the other constructor, with {@code remoteInvalidate} false for a fabric without send with
     * invalidate (as soft-iWARP, whose verbs provider has no memory windows).
     */
    SmbjOverSim(SMB2Dialect dialect, SmbjOptions options, SmbDirectConfig config, boolean remoteInvalidate)
            throws Exception {
        RdmaProviderFactory sim = ServiceLoader.load(RdmaProviderFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(f -> f.type().equals("sim")).findFirst().orElseThrow();
        provider = sim.create(Map.of("fabric", "smbj-" + UUID.randomUUID(), "remoteInvalidate", remoteInvalidate))
                .get(0);
        transport = ServiceLoader.load(SmbDirectFactory.class).findFirst().orElseThrow().create(List.of(provider), config);
        server = new FakeSmb2Server(transport, new InetSocketAddress(provider.addresses().get(0), 0));
        server.dialect = dialect.getValue();
        smbj = SmbjTransport.create(transport, options);
        client = new SMBClient(smbj.configBuilder().withDialects(dialect).withTimeout(30, TimeUnit.SECONDS).build());
    }

    /** A new smbj connection to the server (smbj's own, when one is open already). */
    Connection connect() throws IOException {
        return client.connect(server.address().getAddress().getHostAddress(), server.address().getPort());
    }

    @Override
    public void close() throws Exception {
        client.close();
        server.close();
        transport.close();
        provider.close();
    }

    /** Waits up to 10 s for a condition that follows from what the test did, failing with {@code what}. */
    static void waitUntil(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                org.junit.jupiter.api.Assertions.fail(what + ": not within 10 s");
            }
            Thread.sleep(10);
        }
    }
}
