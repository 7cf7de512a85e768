package org.smbdirect.rdma.sim.internal;

import java.util.Map;

import org.smbdirect.rdma.RdmaProvider;

/**
 * What a simulated provider still holds, for leak checks in tests and soak runs outside OSGi (the
 * package is private to the bundle).
 */
public final class SimDiagnostics {
    private SimDiagnostics() {
    }

    /**
     * Endpoints not yet closed (or still ending); each holds its queues and outstanding requests.
     *
     * @param provider a simulated provider
     * @return the number of live endpoints
     * @throws IllegalArgumentException for a provider of another type
     */
    public static int endpoints(RdmaProvider provider) {
        return sim(provider).endpointCount();
    }

    /**
     * Memory regions still registered.
     *
     * @param provider a simulated provider
     * @return the number of live regions
     * @throws IllegalArgumentException for a provider of another type
     */
    public static int regions(RdmaProvider provider) {
        return sim(provider).regions.size();
    }

    /**
     * The faults injected so far, counted by kind: {@code DISCONNECT}, {@code RECEIVER_NOT_READY},
     * {@code DELAY} (connection faults, decided on the connecting side's provider) and
     * {@code REGISTRATION_FAILURE}.
     *
     * @param provider a simulated provider
     * @return kind to count, kinds never injected absent
     * @throws IllegalArgumentException for a provider of another type
     */
    public static Map<String, Long> faults(RdmaProvider provider) {
        return sim(provider).faults.counts();
    }

    private static SimProvider sim(RdmaProvider provider) {
        if (!(provider instanceof SimProvider)) {
            throw new IllegalArgumentException(provider + " is not a simulated provider");
        }
        return (SimProvider) provider;
    }
}
