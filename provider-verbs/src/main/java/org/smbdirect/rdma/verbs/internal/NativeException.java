package org.smbdirect.rdma.verbs.internal;

import java.io.IOException;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A failed verbs or rdma_cm call, thrown by the native library with the call's name and errno.
 */
public final class NativeException extends IOException {
    private static final long serialVersionUID = 1L;

    private static final int EPERM = 1;
    private static final int ENOENT = 2;
    private static final int EAGAIN = 11;
    private static final int ENOMEM = 12;
    private static final int EFAULT = 14;
    private static final int EBUSY = 16;
    private static final int ENODEV = 19;
    private static final int EINVAL = 22;
    private static final int ENOSPC = 28;
    private static final int EOPNOTSUPP = 95;
    private static final int EADDRINUSE = 98;
    private static final int EADDRNOTAVAIL = 99;
    private static final int ENETUNREACH = 101;
    private static final int ECONNRESET = 104;
    private static final int ENOBUFS = 105;
    private static final int ENOTCONN = 107;
    private static final int ETIMEDOUT = 110;
    private static final int ECONNREFUSED = 111;
    private static final int EHOSTUNREACH = 113;
    private static final int ENOSYS = 38;

    /** The verbs or rdma_cm function that failed. */
    private final String call;
    /** The errno it reported. */
    private final int errno;
    /** Of a post of several work requests: how many were posted before the one refused. */
    private final int posted;

    /**
     * A failure of a call.
     *
     * @param call the function that failed
     * @param errno its errno
     * @param text strerror(errno)
     */
    public NativeException(String call, int errno, String text) {
        this(call, errno, text, 0);
    }

    /**
     * Called by the native library.
     *
     * @param call the function that failed
     * @param errno its errno
     * @param text strerror(errno), and for a post which request was refused
     * @param posted of a post of several work requests, how many were posted (they complete as
     *        usual); 0 otherwise
     */
    public NativeException(String call, int errno, String text, int posted) {
        super(call + " failed: " + text + " (errno " + errno + ")");
        this.call = call;
        this.errno = errno;
        this.posted = posted;
    }

    /**
     * Of a failed post of several work requests ({@link VerbsNative#postSend}): how many of them,
     * from the first, were posted and will complete; the others were not posted.
     *
     * @return the number posted, 0 for other calls
     */
    public int posted() {
        return posted;
    }

    /**
     * The function that failed.
     *
     * @return its name, for example {@code ibv_post_send}
     */
    public String call() {
        return call;
    }

    /**
     * The errno.
     *
     * @return the error number
     */
    public int errno() {
        return errno;
    }

    /**
     * Tells whether the failure means "no RDMA here": no kernel support, no device.
     *
     * @return {@code true} for ENOSYS, ENODEV and ENOENT
     */
    public boolean meansNoDevice() {
        return errno == ENOSYS || errno == ENODEV || errno == ENOENT;
    }

    /**
     * The API status that describes this failure best; {@link RdmaStatus#DEVICE_ERROR} when no more
     * precise one fits.
     *
     * @return the status
     */
    public RdmaStatus status() {
        switch (errno) {
            case ENOMEM:
            case ENOBUFS:
            case ENOSPC:
            case EAGAIN:
                return RdmaStatus.INSUFFICIENT_RESOURCES;
            case EINVAL:
            case EFAULT:
                return RdmaStatus.INVALID_PARAMETER;
            case EADDRINUSE:
                return RdmaStatus.ADDRESS_IN_USE;
            case EADDRNOTAVAIL:
            case ENETUNREACH:
            case EHOSTUNREACH:
                return RdmaStatus.UNREACHABLE;
            case ECONNREFUSED:
                return RdmaStatus.CONNECTION_REFUSED;
            case ECONNRESET:
                return RdmaStatus.CONNECTION_RESET;
            case ENOTCONN:
                return RdmaStatus.NOT_CONNECTED;
            case ETIMEDOUT:
                return RdmaStatus.TIMEOUT;
            case EOPNOTSUPP:
                return RdmaStatus.NOT_SUPPORTED;
            case EPERM:
            case EBUSY:
                return RdmaStatus.INVALID_STATE;
            default:
                return RdmaStatus.DEVICE_ERROR;
        }
    }

    /**
     * Converts to the API's exception, keeping this one as the cause.
     *
     * @param what what was being done, for the message
     * @return the exception to throw
     */
    public RdmaException toRdmaException(String what) {
        return new RdmaException(status(), what + ": " + getMessage(), this);
    }
}
