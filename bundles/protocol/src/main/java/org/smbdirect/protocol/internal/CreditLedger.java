package org.smbdirect.protocol.internal;

/**
 * The credit elements of MS-SMBD 3.1.1.1 and the arithmetic of 3.1.5.9 (Managing Credits Prior to
 * Sending), 3.1.5.1 (current text: the last send credit) and 3.1.5.8 (credits received). Pure
 * arithmetic: posting receives and sending messages are the caller's; this class says how many
 * and whether. Confined to the connection's thread.
 *
 * <p>Two counts beyond the specification's: {@link #creditsToGrant}, receives posted but not yet
 * granted in a CreditsGranted field (3.1.5.9 returns the number newly posted, and the receive path
 * posts too, so without it credits posted while receiving would never reach the peer), and
 * {@link #peerCredits}, the credits the peer still holds by this side's count (granted minus
 * messages received), which tells a peer sending without a credit.
 */
final class CreditLedger {
    /** The largest value of a 16-bit credit field, and of Connection.SendCredits. */
    static final int MAX_CREDITS = 65535;

    /** Connection.SendCredits. */
    int sendCredits;
    /** Connection.ReceiveCredits: receives posted and not yet completed. */
    int receiveCredits;
    /** Connection.SendCreditTarget. */
    int sendCreditTarget;
    /** Connection.ReceiveCreditMax. */
    int receiveCreditMax;
    /** Connection.ReceiveCreditTarget. */
    int receiveCreditTarget;
    /** Receives posted but not yet granted to the peer. */
    int creditsToGrant;
    /** Send credits the peer holds by this side's count. */
    int peerCredits;

    /** The initial values of 3.1.4.1 and 3.1.7.2: SendCredits and ReceiveCredits 0. */
    void initialValues(int receiveCreditMax, int sendCreditTarget) {
        this.receiveCreditMax = receiveCreditMax;
        this.sendCreditTarget = sendCreditTarget;
        sendCredits = 0;
        receiveCredits = 0;
        receiveCreditTarget = 0;
        creditsToGrant = 0;
        peerCredits = 0;
    }

    /**
     * MS-SMBD 3.1.5.9, first rule: whether at least one receive MUST be posted (ReceiveCredits is
     * zero, or SendCredits is one and the SendQueue is not empty).
     *
     * @param sendQueueNotEmpty whether Connection.SendQueue holds a message
     * @return {@code true} when a receive must be posted
     */
    boolean mustPost(boolean sendQueueNotEmpty) {
        return receiveCredits == 0 || (sendCredits == 1 && sendQueueNotEmpty);
    }

    /**
     * MS-SMBD 3.1.5.9: how many receives to post now.
     *
     * <p>Sufficient credits (ReceiveCredits nonzero and at least ReceiveCreditTarget): none, unless
     * one must be posted. Otherwise, while ReceiveCredits is below both ReceiveCreditTarget and
     * ReceiveCreditMax, up to the smaller of the two and of {@code capacity}; on the receive path
     * ({@code sendPath} false), where new credits cost a message of their own, only once half of
     * that limit is used up, so that two idle peers do not trade credit messages forever. A
     * required post is at least one.
     *
     * @param sendPath whether a message is being built (the credits then travel for free)
     * @param sendQueueNotEmpty whether Connection.SendQueue holds a message
     * @param capacity the receives there can be at most now (buffers, within the receive depth)
     * @return how many to post; the caller posts what it can and reports it to {@link #posted}
     */
    int receivesToPost(boolean sendPath, boolean sendQueueNotEmpty, int capacity) {
        boolean must = mustPost(sendQueueNotEmpty);
        if (!must && receiveCredits >= receiveCreditTarget) {
            return 0; // sufficient credits are already present
        }
        int want = 0;
        int limit = Math.min(Math.min(receiveCreditTarget, receiveCreditMax), capacity);
        if (receiveCreditTarget > receiveCredits && receiveCredits < receiveCreditMax
                && (sendPath || receiveCredits <= limit / 2)) {
            want = Math.max(0, limit - receiveCredits);
        }
        return must ? Math.max(want, 1) : want;
    }

    /**
     * Receives were posted: ReceiveCredits grows by as many (3.1.5.9), and they wait to be granted.
     *
     * @param n how many
     */
    void posted(int n) {
        receiveCredits += n;
        creditsToGrant += n;
    }

    /** A posted receive completed: one ReceiveCredit is used (3.1.5.8). */
    void receiveCompleted() {
        receiveCredits--;
    }

    /**
     * The CreditsGranted of the next message: every receive posted and not yet granted, as much
     * as the 16-bit field holds.
     *
     * @return the credits to grant
     */
    int grantable() {
        return Math.min(creditsToGrant, MAX_CREDITS);
    }

    /**
     * MS-SMBD 3.1.5.1 (current text): whether a message granting {@code granted} credits may be
     * sent now. Not without a send credit, and the last send credit is never spent without
     * granting one, which is what keeps both peers from waiting on each other.
     *
     * @param granted the message's CreditsGranted
     * @return {@code true} to send it
     */
    boolean maySend(int granted) {
        return sendCredits > 0 && !(sendCredits == 1 && granted == 0);
    }

    /**
     * A Data Transfer message went out (3.1.5.1): SendCredits decremented, the credits it granted
     * now held by the peer.
     *
     * @param granted its CreditsGranted
     */
    void sent(int granted) {
        sendCredits--;
        granted(granted);
    }

    /**
     * Credits were granted to the peer (in a Negotiate Response, 3.1.5.3, or a Data Transfer
     * message).
     *
     * @param granted how many
     */
    void granted(int granted) {
        creditsToGrant -= granted;
        peerCredits += granted;
    }

    /**
     * Whether the peer may send a message now: it holds a credit by this side's count (3.1.5.8:
     * a message beyond the credits granted has no receive to land in).
     *
     * @return {@code true} when it holds one
     */
    boolean peerHoldsCredit() {
        return peerCredits > 0;
    }

    /**
     * Whether {@code creditsGranted} more send credits would exceed what Connection.SendCredits
     * may hold.
     *
     * @param creditsGranted a received CreditsGranted
     * @return {@code true} on overflow
     */
    boolean wouldOverflow(int creditsGranted) {
        return (long) sendCredits + creditsGranted > MAX_CREDITS;
    }

    /**
     * MS-SMBD 3.1.5.8: a valid Data Transfer message arrived: it used one of the peer's credits,
     * ReceiveCreditTarget follows its CreditsRequested and SendCredits grows by its CreditsGranted.
     *
     * @param creditsRequested its CreditsRequested
     * @param creditsGranted its CreditsGranted
     */
    void received(int creditsRequested, int creditsGranted) {
        peerCredits--;
        receiveCreditTarget = creditsRequested;
        sendCredits += creditsGranted;
    }

    @Override
    public String toString() {
        return "SendCredits=" + sendCredits + " ReceiveCredits=" + receiveCredits + " ReceiveCreditTarget="
                + receiveCreditTarget + " ReceiveCreditMax=" + receiveCreditMax + " SendCreditTarget=" + sendCreditTarget
                + " toGrant=" + creditsToGrant + " peerCredits=" + peerCredits;
    }
}
