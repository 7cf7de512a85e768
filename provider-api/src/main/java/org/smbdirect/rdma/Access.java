package org.smbdirect.rdma;

/**
 * Access rights of a {@link MemoryRegion}, combined as a bit mask.
 *
 * <p>Local read access is always granted. {@link #REMOTE_WRITE} requires {@link #LOCAL_WRITE}
 * as in verbs: a registration asking for remote write without local write is rejected with
 * {@link RdmaStatus#INVALID_PARAMETER}.
 */
public final class Access {
    /** The local provider may write into the region: needed by receives and RDMA Read targets. */
    public static final int LOCAL_WRITE = 0x1;
    /** The peer may RDMA Read from the region. */
    public static final int REMOTE_READ = 0x2;
    /** The peer may RDMA Write into the region. Requires {@link #LOCAL_WRITE}. */
    public static final int REMOTE_WRITE = 0x4;

    /** Every defined bit. */
    public static final int ALL = LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE;

    private Access() {
    }

    /**
     * Tells whether a mask grants any remote access.
     *
     * @param access an access mask
     * @return {@code true} when {@link #REMOTE_READ} or {@link #REMOTE_WRITE} is set
     */
    public static boolean isRemote(int access) {
        return (access & (REMOTE_READ | REMOTE_WRITE)) != 0;
    }

    /**
     * Renders a mask for messages, for example {@code LOCAL_WRITE|REMOTE_READ}.
     *
     * @param access an access mask
     * @return the names of the bits set, {@code NONE} for zero, unknown bits in hex
     */
    public static String toString(int access) {
        if (access == 0) {
            return "NONE";
        }
        StringBuilder s = new StringBuilder();
        append(s, access, LOCAL_WRITE, "LOCAL_WRITE");
        append(s, access, REMOTE_READ, "REMOTE_READ");
        append(s, access, REMOTE_WRITE, "REMOTE_WRITE");
        int unknown = access & ~ALL;
        if (unknown != 0) {
            if (s.length() > 0) {
                s.append('|');
            }
            s.append("0x").append(Integer.toHexString(unknown));
        }
        return s.toString();
    }

    private static void append(StringBuilder s, int mask, int bit, String name) {
        if ((mask & bit) != 0) {
            if (s.length() > 0) {
                s.append('|');
            }
            s.append(name);
        }
    }
}
