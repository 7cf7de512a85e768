package org.smbdirect.rdma;

/**
 * The RDMA transport a provider runs on. It decides what crosses the wire outside the queue pair:
 * how connection private data arrives, which side of the IRD/ORD exchange the connection manager
 * reports, and which port SMB Direct uses by default.
 *
 * <p>What the real connection managers do, and the simulated provider mimics:
 * <ul>
 * <li>InfiniBand and RoCE (the IB connection manager, through rdma_cm): private data travels in
 * fixed-size CM messages and arrives zero-padded to that size ({@link #requestPrivateDataSize()}
 * bytes with a connection request, {@link #replyPrivateDataSize()} with an acceptance), so a
 * receiver cannot tell how many bytes the sender gave.</li>
 * <li>iWARP (MPA): private data arrives at exactly the length sent. The IRD/ORD header of MS-SMBD
 * section 6 exists for this transport (MPA version 1 carries no IRD/ORD of its own).</li>
 * </ul>
 */
public enum TransportType {
    /** InfiniBand. */
    INFINIBAND("InfiniBand", 56, 196, 445),
    /** RDMA over Converged Ethernet (RoCE v1 and v2): the InfiniBand transport over Ethernet. */
    ROCE("RoCE", 56, 196, 445),
    /** iWARP (RDMA over TCP, MPA framing). */
    IWARP("iWARP", 0, 0, 5445);

    private final String displayName;
    private final int requestPrivateDataSize;
    private final int replyPrivateDataSize;
    private final int smbDirectPort;

    TransportType(String displayName, int requestPrivateDataSize, int replyPrivateDataSize, int smbDirectPort) {
        this.displayName = displayName;
        this.requestPrivateDataSize = requestPrivateDataSize;
        this.replyPrivateDataSize = replyPrivateDataSize;
        this.smbDirectPort = smbDirectPort;
    }

    /**
     * Whether the connection manager delivers private data at the length it was sent.
     *
     * @return {@code true} for iWARP; {@code false} where it is zero-padded to a fixed size
     */
    public boolean exactPrivateData() {
        return requestPrivateDataSize == 0;
    }

    /**
     * The size a connection request's private data arrives padded to.
     *
     * @return bytes (56 for InfiniBand and RoCE: the CM REQ's 92 bytes less rdma_cm's 36-byte
     *         header), or 0 when delivered at its exact length
     */
    public int requestPrivateDataSize() {
        return requestPrivateDataSize;
    }

    /**
     * The size an acceptance's private data arrives padded to.
     *
     * @return bytes (196 for InfiniBand and RoCE: the CM REP's private data), or 0 when delivered
     *         at its exact length
     */
    public int replyPrivateDataSize() {
        return replyPrivateDataSize;
    }

    /**
     * The port SMB Direct listens on over this transport, as Windows and Linux do: 445 on
     * InfiniBand and RoCE, 5445 on iWARP (where 445 belongs to SMB over TCP on the same
     * addresses).
     *
     * @return the port
     */
    public int smbDirectPort() {
        return smbDirectPort;
    }

    /**
     * The name as administrators write it ({@code InfiniBand}, {@code RoCE}, {@code iWARP}); also
     * the value of the {@link RdmaProvider#PROP_TRANSPORT} service property.
     *
     * @return the display name
     */
    public String displayName() {
        return displayName;
    }

    /**
     * Parses a transport name, ignoring case: {@code InfiniBand} (or {@code IB}), {@code RoCE},
     * {@code iWARP}.
     *
     * @param name the name
     * @return the transport type
     * @throws IllegalArgumentException for any other name, naming the valid ones
     */
    public static TransportType parse(String name) {
        String n = name == null ? "" : name.trim();
        if (n.equalsIgnoreCase("ib")) {
            return INFINIBAND;
        }
        for (TransportType t : values()) {
            if (t.displayName.equalsIgnoreCase(n) || t.name().equalsIgnoreCase(n)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown RDMA transport '" + name + "': use InfiniBand, RoCE or iWARP");
    }

    @Override
    public String toString() {
        return displayName;
    }
}
