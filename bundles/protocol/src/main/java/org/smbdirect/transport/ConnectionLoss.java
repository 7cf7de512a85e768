package org.smbdirect.transport;

import java.util.Objects;

/**
 * The reason a connection ended, as the upper layer receives it (MS-SMBD 3.1.7.1). An immutable
 * value.
 */
public final class ConnectionLoss {
    private final TerminationReason reason;
    private final String detail;

    /**
     * Creates a value.
     *
     * @param reason the cause
     * @param detail the specifics: the offending field values, the provider status, and so on
     */
    public ConnectionLoss(TerminationReason reason, String detail) {
        this.reason = Objects.requireNonNull(reason, "reason");
        this.detail = detail == null ? "" : detail;
    }

    /**
     * The cause.
     *
     * @return the reason
     */
    public TerminationReason reason() {
        return reason;
    }

    /**
     * The specifics.
     *
     * @return the detail, possibly empty
     */
    public String detail() {
        return detail;
    }

    /**
     * A readable sentence: description, section and detail.
     *
     * @return for example {@code "DataOffset not 8-byte aligned (MS-SMBD 3.1.5.8): DataOffset=20"}
     */
    public String message() {
        StringBuilder s = new StringBuilder(reason.description());
        if (reason.section() != null) {
            s.append(" (MS-SMBD ").append(reason.section()).append(')');
        }
        if (!detail.isEmpty()) {
            s.append(": ").append(detail);
        }
        return s.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConnectionLoss && ((ConnectionLoss) o).reason == reason
                && ((ConnectionLoss) o).detail.equals(detail);
    }

    @Override
    public int hashCode() {
        return reason.hashCode() * 31 + detail.hashCode();
    }

    @Override
    public String toString() {
        return reason + ": " + message();
    }
}
