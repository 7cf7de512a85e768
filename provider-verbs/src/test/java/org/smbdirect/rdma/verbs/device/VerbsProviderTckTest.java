package org.smbdirect.rdma.verbs.device;

import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.rdma.tck.Capability;
import org.smbdirect.rdma.tck.ProviderFixture;
import org.smbdirect.rdma.tck.ProviderPair;
import org.smbdirect.rdma.tck.RdmaProviderTck;
import org.smbdirect.rdma.verbs.internal.VerbsProvider;

/**
 * The whole provider conformance kit ({@code bundles/provider-tck}) against the verbs provider on
 * the device: one provider for both ends, connections over the device's address. Capabilities are
 * left out through the provider's configuration ({@code rdmaRead}, {@code remoteInvalidate},
 * {@code inlineLimit}), so nothing is skipped for a missing feature; what verbs cannot do as the kit
 * expects is reported skipped by {@link KnownDeviations}.
 */
class VerbsProviderTckTest extends RdmaProviderTck {

    /** What verbs cannot do as the kit expects; see {@link KnownDeviations}. */
    @RegisterExtension
    static final KnownDeviations DEVIATIONS = deviations();

    static KnownDeviations deviations() {
        // the device the kit runs on: Soft-RoCE in the guest, or the host's device
        String device = System.getenv("RDMA_VM_DEVICE");
        boolean rxe = device == null || device.startsWith("rxe");
        boolean iwarp = device != null && (device.startsWith("iw") || device.startsWith("cxgb") || device.startsWith("siw"));
        return new KnownDeviations(rxe, iwarp);
    }

    /** Opens providers from the ServiceLoader factory, as a plain-Java user does. */
    static final class VerbsFixture implements ProviderFixture {
        private final Map<String, ?> base;

        VerbsFixture() {
            this(Map.of());
        }

        /** With {@code base} added to every provider's configuration. */
        VerbsFixture(Map<String, ?> base) {
            this.base = base;
        }

        @Override
        public ProviderPair open() throws Exception {
            return pair(Map.of());
        }

        @Override
        public Optional<ProviderPair> openWithout(Capability capability) throws Exception {
            switch (capability) {
                case RDMA_READ:
                    return Optional.of(pair(Map.of("rdmaRead", false)));
                case REMOTE_INVALIDATE:
                    return Optional.of(pair(Map.of("remoteInvalidate", false)));
                default:
                    return Optional.of(pair(Map.of("inlineLimit", 0)));
            }
        }

        private ProviderPair pair(Map<String, ?> configuration) throws Exception {
            Map<String, Object> c = new HashMap<>(base);
            c.putAll(configuration);
            Fixture f = new Fixture(c);
            RdmaProvider p = f.provider;
            return ProviderPair.of(p, p, new InetSocketAddress(f.address, 0), p::close);
        }

        @Override
        public Optional<Map<String, Object>> serviceProperties(RdmaProvider provider) {
            return provider instanceof VerbsProvider ? Optional.of(((VerbsProvider) provider).serviceProperties())
                    : Optional.empty();
        }
    }

    private final ProviderFixture fixture = new VerbsFixture();

    @Override
    protected ProviderFixture fixture() {
        return fixture;
    }
}
