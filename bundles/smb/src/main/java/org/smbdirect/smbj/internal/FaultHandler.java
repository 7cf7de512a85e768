package org.smbdirect.smbj.internal;

/** Where a message from the server that the transport cannot go on after is reported. */
interface FaultHandler {

    /**
     * The transport stops at the message: the connection ends, and smbj fails its waiting
     * requests with {@code e}.
     *
     * @param e what was wrong with the message
     */
    void fault(Exception e);
}
