/**
 * SMB3 file access over SMB Direct for Java: smbj, the Java SMB2/3 client, with a transport that
 * carries its SMB2 messages over an {@link org.smbdirect.transport.SmbDirect} connection and moves
 * the data of large READ and WRITE requests through the RDMA channel (MS-SMB2 2.2.19, 2.2.21).
 *
 * <p>Get an {@link org.smbdirect.smbj.SmbjTransport} from the OSGi service registry, or make one
 * with {@link org.smbdirect.smbj.SmbjTransport#create}, and give it to smbj as its transport layer
 * factory ({@link org.smbdirect.smbj.SmbjTransport#configBuilder()}); then use smbj as usual
 * ({@code SMBClient}, {@code Session}, {@code DiskShare}, {@code File}). Reads and writes of at
 * least {@link org.smbdirect.smbj.SmbjOptions#rdmaThreshold()} bytes go through the RDMA channel
 * without any change to the calling code. This bundle (module) exports smbj's own packages at
 * smbj's version.
 */
@Version("1.3.0")
@Export
package org.smbdirect.smbj;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
