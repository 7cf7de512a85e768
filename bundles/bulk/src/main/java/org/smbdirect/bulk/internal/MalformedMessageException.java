package org.smbdirect.bulk.internal;

/**
 * A control message that breaks the session protocol: malformed, or not expected in the session's
 * state. The session ends its connection with the message as the reason.
 */
final class MalformedMessageException extends Exception {
    private static final long serialVersionUID = 1L;

    MalformedMessageException(String reason) {
        super(reason, null, false, false);
    }
}
