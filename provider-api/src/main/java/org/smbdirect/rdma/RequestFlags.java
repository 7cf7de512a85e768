package org.smbdirect.rdma;

/**
 * Flags of a posted work request, combined as a bit mask (the NDK_OP_FLAG values).
 *
 * <p>Receives take no flags. Unknown bits are rejected with {@link RdmaStatus#INVALID_PARAMETER}.
 */
public final class RequestFlags {
    /** No flags. */
    public static final int NONE = 0;
    /**
     * No completion is queued when the request succeeds; a failure is still reported by a
     * completion. The request's queue slot is released when it finishes either way.
     */
    public static final int SILENT_SUCCESS = 0x1;
    /**
     * The request starts only after every RDMA Read posted earlier on the same endpoint has
     * completed.
     */
    public static final int READ_FENCE = 0x2;
    /**
     * Valid on sends: the receive that this send completes at the peer is <em>solicited</em> and
     * satisfies a {@link ArmType#SOLICITED} arm of the peer's receive completion queue. Set it on
     * the last send of a group of related sends.
     */
    public static final int SOLICIT_EVENT = 0x4;
    /**
     * Valid on sends and RDMA Writes: the data is copied when the request is posted, so the
     * caller may reuse the memory as soon as the post returns. The scatter/gather elements need
     * no registered region, the endpoint's scatter/gather limit does not apply, and the total
     * length must not exceed the endpoint's inline threshold ({@link
     * EndpointOptions#inlineThreshold()}), else {@link RdmaStatus#INVALID_PARAMETER}.
     */
    public static final int INLINE = 0x8;
    /**
     * The provider may hold the request back until a later request without this flag is posted
     * on the same endpoint, then hand all of them over together. Completions are unaffected. On a
     * registration ({@link Endpoint#register(java.nio.ByteBuffer, int, int)}): the provider may
     * hand the registration over with the next request posted.
     */
    public static final int DEFER = 0x10;

    /** Every defined bit. */
    public static final int ALL = SILENT_SUCCESS | READ_FENCE | SOLICIT_EVENT | INLINE | DEFER;

    private RequestFlags() {
    }

    /**
     * Renders a mask for messages, for example {@code INLINE|SOLICIT_EVENT}.
     *
     * @param flags a flag mask
     * @return the names of the bits set, {@code NONE} for zero, unknown bits in hex
     */
    public static String toString(int flags) {
        if (flags == 0) {
            return "NONE";
        }
        StringBuilder s = new StringBuilder();
        String[] names = {"SILENT_SUCCESS", "READ_FENCE", "SOLICIT_EVENT", "INLINE", "DEFER"};
        for (int i = 0; i < names.length; i++) {
            if ((flags & (1 << i)) != 0) {
                if (s.length() > 0) {
                    s.append('|');
                }
                s.append(names[i]);
            }
        }
        int unknown = flags & ~ALL;
        if (unknown != 0) {
            if (s.length() > 0) {
                s.append('|');
            }
            s.append("0x").append(Integer.toHexString(unknown));
        }
        return s.toString();
    }
}
