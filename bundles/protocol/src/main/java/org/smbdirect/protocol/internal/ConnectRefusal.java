package org.smbdirect.protocol.internal;

import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.TransportType;

/**
 * What a refused connection request tells the upper layer beyond the provider's words: the
 * refusals a real server gives that the wire cannot tell apart. An RDMA connection manager's
 * rejection carries no reason a peer can choose (InfiniBand CM: "consumer defined"; iWARP: the
 * connection refused), so the port and the transport say what is known: Linux 7's ksmbd listens
 * on 445 for InfiniBand and RoCE only and on 5445 for iWARP only (the ports of MS-SMB2 2.1),
 * refusing the other transport on each, and refuses connection requests while more than 10 are
 * pending (its listen backlog, {@code fs/smb/smbdirect/listen.c}).
 */
final class ConnectRefusal {
    private ConnectRefusal() {
    }

    /**
     * The provider's reason with what the refusal can mean.
     *
     * @param status the attempt's status
     * @param reason the provider's words
     * @param transport the local device's transport
     * @param port the port asked for
     */
    static String explain(RdmaStatus status, String reason, TransportType transport, int port) {
        if (status != RdmaStatus.CONNECTION_REFUSED) {
            return reason;
        }
        TransportType other = transport == TransportType.IWARP ? TransportType.ROCE : TransportType.IWARP;
        if (port == other.smbDirectPort()) { // never the transport's own: 445 and 5445 differ
            return reason + "; port " + port + " is SMB Direct's port for " + (other == TransportType.IWARP
                    ? "iWARP" : "InfiniBand and RoCE") + ", and " + transport.displayName() + " uses "
                    + transport.smbDirectPort() + " (MS-SMB2 2.1): Linux ksmbd takes " + transport.displayName() + " on "
                    + transport.smbDirectPort() + " only";
        }
        if (reason.startsWith("nobody listens")) {
            return reason;
        }
        return reason + "; a server refuses a request it cannot take now (Linux 7 ksmbd while more than 10 "
                + "connection requests are pending): try again";
    }
}
