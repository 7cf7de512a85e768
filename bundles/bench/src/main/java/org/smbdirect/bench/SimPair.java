package org.smbdirect.bench;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.UUID;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectFactory;
import org.smbdirect.transport.SmbDirectListener;

/**
 * Two SMB Direct transports on two simulated RDMA providers of one fabric, built without OSGi as
 * a user of the plain factories would, and connections between them.
 */
final class SimPair implements AutoCloseable {
    final RdmaProvider clientProvider;
    final RdmaProvider serverProvider;
    final SmbDirect client;
    final SmbDirect server;
    private final SmbDirectListener listener;
    private final LinkedBlockingQueue<SmbDirectConnection> accepted = new LinkedBlockingQueue<>();
    private volatile ConnectionHandler serverHandler;
    private final List<SmbDirectConnection> connections = new ArrayList<>();

    SimPair(SmbDirectConfig config, Map<String, Object> simConfig) throws Exception {
        String fabric = "bench-" + UUID.randomUUID();
        Map<String, Object> sim = new HashMap<>(simConfig);
        sim.put("fabric", fabric);
        RdmaProviderFactory f = ServiceLoader.load(RdmaProviderFactory.class).stream().map(ServiceLoader.Provider::get)
                .filter(x -> x.type().equals("sim")).findFirst().orElseThrow();
        clientProvider = f.create(sim).get(0);
        serverProvider = f.create(sim).get(0);
        SmbDirectFactory t = ServiceLoader.load(SmbDirectFactory.class).findFirst().orElseThrow();
        client = t.create(List.of(clientProvider), config);
        server = t.create(List.of(serverProvider), config);
        listener = server.listen(new InetSocketAddress(serverProvider.addresses().get(0), 0), c -> {
            accepted.add(c);
            return serverHandler; // set by connect before it connects
        });
    }

    SimPair() throws Exception {
        this(SmbDirectConfig.defaults(), Map.of());
    }

    /**
     * Connects with handlers in the given mode: {@code "inline"} declares both non-blocking
     * ({@link ConnectionHandler#nonBlocking(ConnectionHandler)}: called on the thread that takes the
     * completions), {@code "engine"} leaves them on the engine's threads (the default).
     */
    SmbDirectConnection[] connect(String handlers, ConnectionHandler clientSide, ConnectionHandler serverSide)
            throws Exception {
        switch (handlers) {
            case "inline":
                return connect(ConnectionHandler.nonBlocking(clientSide), ConnectionHandler.nonBlocking(serverSide));
            case "engine":
                return connect(clientSide, serverSide);
            default:
                throw new IllegalArgumentException("handlers: inline or engine, not " + handlers);
        }
    }

    /** Connects; {@code server} receives what the client sends, {@code clientSide} what the server sends. */
    SmbDirectConnection[] connect(ConnectionHandler clientSide, ConnectionHandler serverSide) throws Exception {
        serverHandler = serverSide;
        SmbDirectConnection c = client.connect(listener.localAddress(), clientSide, Duration.ofSeconds(30));
        SmbDirectConnection s = accepted.poll(30, TimeUnit.SECONDS);
        if (s == null) {
            throw new IllegalStateException("no connection accepted");
        }
        connections.add(c);
        return new SmbDirectConnection[] {c, s};
    }

    @Override
    public void close() {
        for (SmbDirectConnection c : connections) {
            c.close();
        }
        listener.close();
        client.close();
        server.close();
        clientProvider.close();
        serverProvider.close();
    }
}
