package org.smbdirect.bulk;

import java.nio.ByteBuffer;

import org.osgi.annotation.versioning.ConsumerType;
import org.smbdirect.transport.ConnectionLoss;

/**
 * Receives a session's data. Calls for one session are made one at a time, in the order the peer
 * sent the data, on an engine thread; a handler must not block.
 */
@ConsumerType
public interface BulkHandler {

    /**
     * One complete send of the peer, however it travelled.
     *
     * @param session the session
     * @param data the bytes from position to limit; the buffer is the handler's to keep
     */
    void onData(BulkSession session, ByteBuffer data);

    /**
     * The session ended; sends still pending have failed.
     *
     * @param session the session
     * @param loss why the underlying connection ended
     */
    default void onClosed(BulkSession session, ConnectionLoss loss) {
    }
}
