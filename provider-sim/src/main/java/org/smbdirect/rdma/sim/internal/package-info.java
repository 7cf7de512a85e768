/**
 * The simulated RDMA provider: a fabric of actors on a small fixed pool of threads, with the
 * reliable-connection semantics of verbs and the NDK, seeded fault injection and RoCEv2 packet
 * capture. Private to the bundle; reached through the {@code RdmaProvider} service (OSGi) or
 * {@link org.smbdirect.rdma.sim.internal.SimProviderFactory} ({@link java.util.ServiceLoader}).
 */
package org.smbdirect.rdma.sim.internal;
