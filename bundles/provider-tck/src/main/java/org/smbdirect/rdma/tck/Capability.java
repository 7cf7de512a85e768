package org.smbdirect.rdma.tck;

/**
 * A capability a provider may lack. The kit asks the fixture for providers configured without it
 * ({@link ProviderFixture#openWithout}) and checks that they say so and reject what needs it.
 */
public enum Capability {
    /** RDMA Read: {@code provider.rdmaRead=false}, reads and remote-read registrations are NOT_SUPPORTED. */
    RDMA_READ,
    /** Send-and-invalidate and local invalidate: {@code provider.remoteInvalidate=false}, both NOT_SUPPORTED. */
    REMOTE_INVALIDATE,
    /** Inline data: {@code provider.inlineLimit=0}, inline thresholds and INLINE requests are INVALID_PARAMETER. */
    INLINE
}
