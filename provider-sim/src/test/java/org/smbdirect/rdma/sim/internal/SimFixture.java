package org.smbdirect.rdma.sim.internal;

import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.tck.Capability;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderPair;

/**
 * Opens simulated providers for the kit: each pair on a fabric of its own, either two providers
 * (one per side) or one provider for both sides. {@code maxRegionSize} is 16 MiB so that the
 * region-size check runs.
 */
final class SimFixture implements ProviderFixture {
    private static final AtomicInteger FABRICS = new AtomicInteger();
    private final boolean single;
    private final Map<String, Object> overrides;

    SimFixture(boolean single) {
        this(single, Map.of());
    }

    /** A fixture whose providers get these configuration values on top of the kit's. */
    SimFixture(boolean single, Map<String, Object> overrides) {
        this.single = single;
        this.overrides = overrides;
    }

    Map<String, Object> baseConfig() {
        Map<String, Object> c = new HashMap<>();
        c.put("fabric", "tck-" + FABRICS.incrementAndGet());
        c.put("maxRegionSize", 16 << 20);
        c.putAll(overrides);
        return c;
    }

    private ProviderPair open(Map<String, Object> config) throws Exception {
        SimProvider a = SimProvider.open(SimSettings.fromMap(config));
        SimProvider b = single ? a : SimProvider.open(SimSettings.fromMap(config));
        return ProviderPair.of(a, b, new InetSocketAddress(b.address, 0), () -> {
            a.close();
            b.close();
        });
    }

    @Override
    public ProviderPair open() throws Exception {
        return open(baseConfig());
    }

    @Override
    public Optional<ProviderPair> openWithout(Capability capability) throws Exception {
        Map<String, Object> c = baseConfig();
        switch (capability) {
            case RDMA_READ:
                c.put("rdmaRead", false);
                break;
            case REMOTE_INVALIDATE:
                c.put("remoteInvalidate", false);
                break;
            default:
                c.put("inlineLimit", 0);
                break;
        }
        return Optional.of(open(c));
    }

    @Override
    public Optional<Map<String, Object>> serviceProperties(RdmaProvider provider) {
        return Optional.of(((SimProvider) provider).serviceProperties());
    }
}
