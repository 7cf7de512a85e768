/**
 * The RDMA provider API: what the SMB Direct protocol engine needs from an RDMA
 * implementation, shaped after verbs and the Windows NDK so that both map onto it.
 *
 * <h2>Object model</h2>
 * <ul>
 * <li>{@link org.smbdirect.rdma.RdmaProvider} is the entry point, one per RDMA adapter,
 * published as an OSGi service with the properties named in that interface. It creates
 * completion queues and endpoints and listens for connection requests.</li>
 * <li>{@link org.smbdirect.rdma.Endpoint} is one reliable connection (a queue pair with its
 * own protection domain). It offers the three provider services:
 * <ul>
 * <li><em>connection</em>: connect with private data, IRD/ORD, disconnect, connection
 * events through {@link org.smbdirect.rdma.ConnectionListener};</li>
 * <li><em>registration</em>: register, deregister and locally invalidate memory, giving a
 * {@link org.smbdirect.rdma.MemoryRegion} with a token and an offset;</li>
 * <li><em>RDMA</em>: post receive, send, send-and-invalidate, RDMA Read and RDMA Write work
 * requests, each completing on a {@link org.smbdirect.rdma.CompletionQueue}.</li>
 * </ul></li>
 * <li>{@link org.smbdirect.rdma.RdmaListener} accepts incoming
 * {@link org.smbdirect.rdma.ConnectionRequest}s.</li>
 * </ul>
 *
 * <h2>Errors</h2>
 * Every completion carries an {@link org.smbdirect.rdma.RdmaStatus}. A request that cannot
 * even be posted fails at once with a checked {@link org.smbdirect.rdma.RdmaException}
 * carrying a status; nothing is then queued and the endpoint is unchanged.
 *
 * <h2>Threads</h2>
 * Completion notifications and connection events run on provider threads, never inside a
 * call the consumer made. They must not block. Endpoint and provider methods are thread-safe;
 * calls on one completion queue are serialised by the consumer (see {@link
 * org.smbdirect.rdma.CompletionQueue}).
 */
@Version("1.2.0")
@Export
package org.smbdirect.rdma;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
