package org.smbdirect.transport;

/**
 * The operation failed because its connection ended, or ended before it could complete.
 */
public class ConnectionLostException extends SmbDirectException {
    private static final long serialVersionUID = 1L;

    /** Why the connection ended; not serialised. */
    private final transient ConnectionLoss loss;

    /**
     * Creates an exception.
     *
     * @param loss why the connection ended
     */
    public ConnectionLostException(ConnectionLoss loss) {
        super("connection lost: " + loss.message());
        this.loss = loss;
    }

    /**
     * Why the connection ended.
     *
     * @return the loss
     */
    public ConnectionLoss loss() {
        return loss;
    }
}
