package org.smbdirect.protocol.internal;

/**
 * The log of a connection's story. Every class of the engine that speaks of one connection logs
 * under the one name users are told to switch on ({@code docs/embedding.md}), the connection's
 * class name, so that one logger shows a connection's whole life in order; the name is written out
 * so that the rule classes need not refer to the connection for it.
 */
final class ConnectionLog {
    /** The connection's logger: {@code org.smbdirect.protocol.internal.Connection}. */
    static final System.Logger LOG = System.getLogger("org.smbdirect.protocol.internal.Connection");
    /**
     * Every SMB Direct message sent or received is logged at this level, as {@code "<connection>
     * sent|received <message with its fields>"} (a capture can be checked against it); callers
     * test {@code LOG.isLoggable(TRACE)} first, so nothing is built while it is off.
     */
    static final System.Logger.Level TRACE = System.Logger.Level.TRACE;

    private ConnectionLog() {
    }
}
