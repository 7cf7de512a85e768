package org.smbdirect.rdma;

import java.util.List;
import java.util.Map;

import org.osgi.annotation.versioning.ProviderType;

/**
 * Creates providers without an OSGi framework: implementations are published for {@link
 * java.util.ServiceLoader} ({@code provides org.smbdirect.rdma.RdmaProviderFactory} in their
 * module descriptor or {@code META-INF/services}). Inside OSGi, use the {@link RdmaProvider}
 * services instead.
 */
@ProviderType
public interface RdmaProviderFactory {

    /**
     * The type of the providers this factory creates, the value of {@link RdmaProvider#PROP_TYPE}.
     *
     * @return for example {@code sim} or {@code verbs}
     */
    String type();

    /**
     * Creates providers from a configuration, with the same keys and defaults as the
     * implementation's OSGi configuration.
     *
     * @param configuration keys and values; an empty map gives the defaults
     * @return the providers, one per adapter found; empty when none is usable
     * @throws RdmaException {@link RdmaStatus#INVALID_PARAMETER} naming a bad key or value
     */
    List<RdmaProvider> create(Map<String, ?> configuration) throws RdmaException;
}
