package org.smbdirect.smbj.internal;

import javax.crypto.SecretKey;

import com.hierynomus.mssmb2.SMB2Packet;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.SessionTable;
import com.hierynomus.smbj.session.Session;

/**
 * smbj's sessions on one connection, for their signing keys: the RDMA channel signs the requests
 * it builds in place of smbj's (MS-SMB2 3.2.4.1.1), and responses are verified here with the key
 * of their session (3.2.5.1.3).
 */
final class SmbjSessions {
    private final Connection smbj;
    /** smbj's session table (see {@link SmbjInternals#sessionTable}), once needed. */
    private volatile SessionTable sessions;

    /**
     * @param smbj smbj's connection, or {@code null} under another receiver than smbj's (which
     *        then asks for no session)
     */
    SmbjSessions(Connection smbj) {
        this.smbj = smbj;
    }

    /** smbj's session of that id, or {@code null} when it has none (yet, or any more). */
    Session session(long sessionId) {
        SessionTable table = sessions;
        if (table == null) {
            // looked up reflectively once (smbj never replaces it), not for every message
            table = SmbjInternals.sessionTable(smbj);
            sessions = table;
        }
        return table.find(sessionId);
    }

    /** The key that signs {@code inner}, a request of smbj's. */
    SecretKey signingKey(SMB2Packet inner) throws TransportException {
        Session session = session(inner.getHeader().getSessionId());
        SecretKey key = session == null ? null : session.getSigningKey(inner.getHeader(), true);
        if (key == null) {
            throw new TransportException("no signing key for session " + inner.getHeader().getSessionId());
        }
        return key;
    }
}
