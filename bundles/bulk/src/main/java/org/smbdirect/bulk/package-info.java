/**
 * A reusable bulk-transfer upper layer over SMB Direct: the session protocol a Windows Sockets
 * Direct switch uses over a SAN connection. Small sends travel inside control messages; large
 * sends put their first part inline, and the rest moves by RDMA Read by the receiver from memory
 * the sender registered, or, where the receiver's provider cannot RDMA Read, by RDMA Write by the
 * sender into memory the receiver registered. A control message reports each transfer complete.
 *
 * <p>Obtain a {@link org.smbdirect.bulk.BulkTransfer} from the OSGi service registry (or from a
 * {@link org.smbdirect.bulk.BulkTransferFactory} through {@link java.util.ServiceLoader}), then
 * {@linkplain org.smbdirect.bulk.BulkTransfer#connect connect} or
 * {@linkplain org.smbdirect.bulk.BulkTransfer#listen listen}; both ends of a session speak this
 * protocol.
 */
@Version("1.0.0")
@Export
package org.smbdirect.bulk;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
