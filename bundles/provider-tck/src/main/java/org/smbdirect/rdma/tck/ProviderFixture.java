package org.smbdirect.rdma.tck;

import java.util.Map;
import java.util.Optional;

import org.smbdirect.rdma.RdmaProvider;

/**
 * What a provider module supplies to the kit: a way to open providers for the two ends of the
 * connections a test makes. Every test opens a fresh {@link ProviderPair} and closes it at the end.
 */
public interface ProviderFixture {

    /**
     * Opens providers with every capability the implementation has.
     *
     * @return a fresh pair; the kit closes it
     * @throws Exception when the providers cannot be opened
     */
    ProviderPair open() throws Exception;

    /**
     * Opens providers configured without one capability, so that the kit can check that they say
     * so and reject what needs it. An implementation that can be configured that way must support
     * every {@link Capability}; a real device that cannot returns empty, and the test is then
     * skipped with {@link #whyNotWithout}.
     *
     * @param capability the capability to leave out
     * @return the pair, or empty when this implementation cannot be configured so
     * @throws Exception when the providers cannot be opened
     */
    Optional<ProviderPair> openWithout(Capability capability) throws Exception;

    /**
     * Why {@link #openWithout} returned empty, for the skip message.
     *
     * @param capability the capability
     * @return a readable reason
     */
    default String whyNotWithout(Capability capability) {
        return "this provider cannot be configured without " + capability;
    }

    /**
     * The OSGi service properties the provider is (or would be) registered with, so that the kit
     * can check that they state its capabilities.
     *
     * @param provider a provider opened by this fixture
     * @return the properties, or empty when the fixture cannot tell
     */
    default Optional<Map<String, Object>> serviceProperties(RdmaProvider provider) {
        return Optional.empty();
    }
}
