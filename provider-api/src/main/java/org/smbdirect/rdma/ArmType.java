package org.smbdirect.rdma;

/**
 * The condition under which an armed {@link CompletionQueue} notifies its consumer
 * (NDK_CQ_NOTIFY_*).
 */
public enum ArmType {
    /** Notify when any completion is queued. */
    ANY,
    /** Notify when a completion with an error status ({@link RdmaStatus#isError()}) is queued. */
    ERRORS,
    /**
     * Notify when a receive completes for a send posted with {@link RequestFlags#SOLICIT_EVENT},
     * or when a completion with an error status is queued.
     */
    SOLICITED;

    /**
     * The arm type that results when a queue already armed with this type is armed again with
     * {@code second} before the first arm was satisfied. This is the NDKPI arm-combination table
     * (rows: this, the first arm; columns: the second):
     *
     * <table>
     * <caption>Arm combination</caption>
     * <tr><th>first \ second</th><th>ANY</th><th>ERRORS</th><th>SOLICITED</th></tr>
     * <tr><td>ANY</td><td>ANY</td><td>ANY</td><td>ANY</td></tr>
     * <tr><td>ERRORS</td><td>ANY</td><td>ERRORS</td><td>SOLICITED</td></tr>
     * <tr><td>SOLICITED</td><td>ANY</td><td>SOLICITED</td><td>SOLICITED</td></tr>
     * </table>
     *
     * @param second the type of the second arm
     * @return the combined type, the wider of the two conditions
     */
    public ArmType combine(ArmType second) {
        if (this == ANY || second == ANY) {
            return ANY;
        }
        if (this == SOLICITED || second == SOLICITED) {
            return SOLICITED;
        }
        return ERRORS;
    }

    /**
     * Tells whether a completion satisfies an arm of this type.
     *
     * @param status the completion's status
     * @param solicited whether the completion is a receive for a solicited send
     * @return {@code true} when a queue armed with this type must notify for that completion
     */
    public boolean isSatisfiedBy(RdmaStatus status, boolean solicited) {
        switch (this) {
            case ANY:
                return true;
            case ERRORS:
                return status.isError();
            default:
                return solicited || status.isError();
        }
    }
}
