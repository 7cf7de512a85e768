package org.smbdirect.smbj.internal;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.SessionTable;

/**
 * The one part of smbj the transport reaches that smbj does not make public: a connection's
 * session table, to find the session of a message and so its signing key (Session.getSigningKey
 * is public). The transport needs the key to sign the RDMA-channel READ and WRITE requests it
 * builds in place of smbj's inline ones, and to tell a response with a bad signature apart. smbj
 * is embedded at one version (see the bundle's instructions) and the tests run against it.
 */
final class SmbjInternals {
    private static final Method SESSION_TABLE;
    private static final RuntimeException UNAVAILABLE;

    static {
        Method m = null;
        RuntimeException failure = null;
        try {
            m = Connection.class.getDeclaredMethod("getSessionTable");
            m.setAccessible(true);
        } catch (NoSuchMethodException | RuntimeException e) {
            failure = new IllegalStateException("this smbj has no Connection.getSessionTable(): the SMB Direct "
                    + "transport supports the smbj it embeds only", e);
        }
        SESSION_TABLE = m;
        UNAVAILABLE = failure;
    }

    private SmbjInternals() {
    }

    /** Fails when the embedded smbj is not the one this class was written for. */
    static void check() {
        if (UNAVAILABLE != null) {
            throw UNAVAILABLE;
        }
    }

    /**
     * The connection's session table: smbj sets it in the connection's constructor, before the
     * transport layer is made, and never replaces it, so a caller may keep it.
     */
    static SessionTable sessionTable(Connection connection) {
        check();
        try {
            return (SessionTable) SESSION_TABLE.invoke(connection);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException(e.getCause());
        }
    }
}
