/**
 * The SMB Direct transport for upper layers: the interface of MS-SMBD sections 3.1.4 and 3.1.7,
 * in Java.
 *
 * <p>Look up the {@link org.smbdirect.transport.SmbDirect} service in the OSGi service registry
 * (or build one with a {@link org.smbdirect.transport.SmbDirectFactory} found through {@link
 * java.util.ServiceLoader}), {@linkplain org.smbdirect.transport.SmbDirect#connect connect} to a
 * peer or {@linkplain org.smbdirect.transport.SmbDirect#listen listen}, then exchange messages of
 * up to the negotiated fragmented size over the resulting {@link
 * org.smbdirect.transport.SmbDirectConnection}, and move bulk data directly between registered
 * buffers with RDMA Read and RDMA Write through {@link
 * org.smbdirect.transport.BufferDescriptorV1 buffer descriptors}.
 *
 * <p>Notifications reach the upper layer through a {@link
 * org.smbdirect.transport.ConnectionHandler}: each reassembled message (3.1.5.8), and the loss of
 * the connection with a reason it can read (3.1.7.1).
 */
@Version("1.5.0")
@Export
package org.smbdirect.transport;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
