package org.smbdirect.bulk;

import org.smbdirect.transport.SmbDirectException;

/**
 * A send failed because memory could not be registered or allocated (the WSAENOBUFS of the
 * sockets-direct session protocol). Nothing the send registered remains registered; the session
 * stays usable.
 */
public class NoBuffersException extends SmbDirectException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception.
     *
     * @param message what could not be obtained
     */
    public NoBuffersException(String message) {
        super(message);
    }

    /**
     * Creates an exception with a cause.
     *
     * @param message what could not be obtained
     * @param cause the underlying failure
     */
    public NoBuffersException(String message, Throwable cause) {
        super(message, cause);
    }
}
