package org.smbdirect.shell.internal;

/** The command line of a shell command is wrong; the command prints the message and its usage. */
final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
        super(message);
    }
}
