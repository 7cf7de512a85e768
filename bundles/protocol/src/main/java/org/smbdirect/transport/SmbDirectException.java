package org.smbdirect.transport;

import java.io.IOException;

/**
 * An SMB Direct operation failed: the connection is lost, could not be established, or the RDMA
 * provider refused the request. Misuse by the caller is reported with the standard unchecked
 * exceptions instead ({@link IllegalArgumentException}, {@link IllegalStateException}).
 */
public class SmbDirectException extends IOException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception.
     *
     * @param message what failed
     */
    public SmbDirectException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a cause.
     *
     * @param message what failed
     * @param cause the underlying failure
     */
    public SmbDirectException(String message, Throwable cause) {
        super(message, cause);
    }
}
