package org.smbdirect.transport;

/**
 * When the IRD/ORD Negotiate Header of MS-SMBD section 6 travels in the RDMA connection's private
 * data.
 *
 * <p>Section 6 exists for transports whose connection set-up carries no IRD and ORD of its own
 * (iWARP with MPA version 1). InfiniBand and RoCE carry them in the connection manager's messages
 * and zero-pad private data to a fixed size, so a header there can neither be expected nor told
 * from padding. Windows and Linux send it only on iWARP, and Linux reads it only when the private
 * data is exactly 8 bytes long.
 */
public enum IrdOrdHeaderPolicy {
    /**
     * Send the header on iWARP, and read and answer one there; elsewhere use the connection
     * manager's IRD and ORD. The default, as Windows and Linux behave.
     */
    AUTO,
    /**
     * Send, read and answer the header on every transport (for peers that expect it on InfiniBand
     * or RoCE too). Zero padding after the 8 bytes is ignored.
     */
    ALWAYS,
    /** Never send the header and ignore any private data: the connection manager's values decide. */
    NEVER;

    /**
     * Parses a policy name, ignoring case; {@code true} and {@code false} (the boolean this setting
     * used to be) mean {@link #AUTO} and {@link #NEVER}.
     *
     * @param value the name
     * @return the policy
     * @throws IllegalArgumentException for any other value, naming the valid ones
     */
    public static IrdOrdHeaderPolicy parse(String value) {
        String v = value == null ? "" : value.trim();
        if (v.equalsIgnoreCase("true")) {
            return AUTO;
        }
        if (v.equalsIgnoreCase("false")) {
            return NEVER;
        }
        for (IrdOrdHeaderPolicy p : values()) {
            if (p.name().equalsIgnoreCase(v)) {
                return p;
            }
        }
        throw new IllegalArgumentException("irdOrdHeader must be AUTO, ALWAYS or NEVER, was '" + value + "'");
    }
}
