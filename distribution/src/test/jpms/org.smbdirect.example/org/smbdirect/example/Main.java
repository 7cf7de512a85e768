package org.smbdirect.example;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.bulk.BulkTransfer;
import org.smbdirect.bulk.BulkTransferFactory;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.RdmaProviderFactory;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectFactory;
import org.smbdirect.transport.SmbDirectListener;

/** Connects two SMB Direct endpoints on the simulated fabric, exchanges a message, moves bulk data. */
public final class Main {
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    public static void main(String[] args) throws Exception {
        for (String osgi : new String[] {"osgi.core", "org.apache.felix.framework", "org.osgi.service.component"}) {
            if (ModuleLayer.boot().findModule(osgi).isPresent()) {
                throw new IllegalStateException(osgi + " is on the module path");
            }
        }
        RdmaProviderFactory sim = ServiceLoader.load(RdmaProviderFactory.class).stream()
                .map(ServiceLoader.Provider::get).filter(f -> f.type().equals("sim")).findFirst()
                .orElseThrow(() -> new IllegalStateException("no simulated RdmaProviderFactory on the module path"));
        System.out.println("provider factory: " + sim.getClass().getName() + " in module " + sim.getClass().getModule().getName());
        List<RdmaProvider> providers = sim.create(Map.of("fabric", "jpms-example"));
        RdmaProvider provider = providers.get(0);
        SmbDirectFactory factory = ServiceLoader.load(SmbDirectFactory.class).findFirst()
                .orElseThrow(() -> new IllegalStateException("no SmbDirectFactory on the module path"));
        System.out.println("transport factory: " + factory.getClass().getName() + " in module "
                + factory.getClass().getModule().getName());
        try (SmbDirect transport = factory.create(providers, SmbDirectConfig.defaults())) {
            message(transport, provider);
            Optional<BulkTransferFactory> bulk = ServiceLoader.load(BulkTransferFactory.class).findFirst();
            if (bulk.isPresent()) {
                bulk(bulk.get().create(transport, BulkConfig.defaults()), provider);
            } else {
                System.out.println("bulk: no BulkTransferFactory implementation on the module path");
            }
        } finally {
            provider.close();
        }
        System.out.println("JPMS example OK");
    }

    private static void message(SmbDirect transport, RdmaProvider provider) throws Exception {
        ConnectionHandler echo = (c, m, t) -> {
            ByteBuffer copy = ByteBuffer.allocate(m.remaining());
            copy.put(m.duplicate()).flip();
            c.send(copy);
        };
        CompletableFuture<String> reply = new CompletableFuture<>();
        ConnectionHandler client = (c, m, t) -> reply.complete(StandardCharsets.UTF_8.decode(m.duplicate()).toString());
        try (SmbDirectListener listener = transport.listen(new InetSocketAddress(provider.addresses().get(0), 0), c -> echo);
                SmbDirectConnection c = transport.connect(listener.localAddress(), client, TIMEOUT)) {
            System.out.println("connected " + c.localAddress() + " -> " + c.remoteAddress() + " over " + c.parameters().provider()
                    + ", MaxSendSize " + c.parameters().maxSendSize() + ", MaxReadWriteSize " + c.parameters().maxReadWriteSize());
            c.sendAndWait(ByteBuffer.wrap("hello over SMB Direct".getBytes(StandardCharsets.UTF_8)), TIMEOUT);
            System.out.println("echo: " + reply.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        }
    }

    private static void bulk(BulkTransfer bulk, RdmaProvider provider) throws Exception {
        int size = 16 << 20;
        ByteBuffer data = ByteBuffer.allocateDirect(size);
        SplittableRandom r = new SplittableRandom(42);
        while (data.remaining() >= 8) {
            data.putLong(r.nextLong());
        }
        data.flip();
        CRC32C sent = new CRC32C();
        sent.update(data.duplicate());
        CRC32C received = new CRC32C();
        CompletableFuture<Long> done = new CompletableFuture<>();
        long[] count = new long[1];
        BulkHandler sink = (s, d) -> {
            synchronized (count) {
                count[0] += d.remaining();
                received.update(d);
                if (count[0] == size) {
                    done.complete(received.getValue());
                }
            }
        };
        BulkHandler none = (s, d) -> {
        };
        try (BulkListener listener = bulk.listen(new InetSocketAddress(provider.addresses().get(0), 0), s -> sink);
                BulkSession session = bulk.connect(listener.localAddress(), none, TIMEOUT)) {
            session.sendAndWait(data, TIMEOUT);
            long crc = done.get(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            System.out.println("bulk: " + size + " bytes, CRC-32C sent " + Long.toHexString(sent.getValue()) + " received "
                    + Long.toHexString(crc) + (crc == sent.getValue() ? " match" : " MISMATCH") + ", by RDMA Read transfers "
                    + session.statistics().readTransfers());
            if (crc != sent.getValue()) {
                throw new IllegalStateException("bulk transfer checksum mismatch");
            }
        }
    }
}
