package org.smbdirect.protocol.internal;

import org.smbdirect.transport.SmbDirectConfig;

/**
 * MS-SMBD 3.1.1.1, the abstract data model of one Connection: one record, read and written by the
 * rule classes on the connection's thread only. Three of its elements are structures kept by the
 * class that owns their rules: the credits (SendCredits, ReceiveCredits, SendCreditTarget,
 * ReceiveCreditMax, ReceiveCreditTarget) in {@link #credits}, the FragmentReassemblyBuffer in
 * {@link #reassembly}, and the SendQueue in {@link #sendQueue} (which the upper layer's threads add
 * to as well, under the sender's lock). Connection.Endpoint is the
 * connection's endpoint itself ({@link Connection}).
 */
final class DataModel {

    /** Connection.Role (MS-SMBD 3.1.1.1). */
    enum Role { ACTIVE, PASSIVE, ESTABLISHED }

    /** Connection.KeepaliveRequested (MS-SMBD 3.1.1.1). */
    enum KeepaliveRequested { NONE, PENDING, SENT }

    /** Connection.Protocol: 0 until negotiated, then 0x0100. */
    int protocol;
    /** Connection.Role. */
    Role role;
    /** Connection.MaxSendSize. */
    int maxSendSize;
    /** Connection.MaxReceiveSize. */
    int maxReceiveSize;
    /** Connection.MaxFragmentedSendSize. */
    int maxFragmentedSendSize;
    /** Connection.MaxFragmentedRecvSize. */
    int maxFragmentedRecvSize;
    /** Connection.MaxReadWriteSize. */
    int maxReadWriteSize;
    /** Connection.KeepaliveInterval, in nanoseconds; 0 disables keepalives. */
    long keepaliveInterval;
    /** Connection.KeepaliveRequested. */
    KeepaliveRequested keepaliveRequested;
    /** Connection.SendImmediate. */
    boolean sendImmediate;
    /** Connection.InvalidatedToken: whether present, and its value. */
    boolean invalidatedTokenPresent;
    int invalidatedToken;
    /** The credit elements and their arithmetic (3.1.5.9, 3.1.5.1). */
    final CreditLedger credits = new CreditLedger();
    /** Connection.FragmentReassemblyBuffer and FragmentReassemblyRemaining. */
    final Reassembly reassembly = new Reassembly();
    /** Connection.SendQueue: strict FIFO of upper-layer messages, each sent as one or more fragments. */
    final SendQueue sendQueue = new SendQueue();

    /** The RDMA Read depths in force (section 6): reads served, reads issued. */
    int ird;
    int ord;

    /**
     * Sets the initial values of 3.1.4.1 (ACTIVE) or 3.1.7.2 (PASSIVE) from the configuration
     * (the Windows values of section 7, notes 2 and 7, by default).
     *
     * @param initialRole ACTIVE or PASSIVE
     * @param config the configuration
     */
    void initialValues(Role initialRole, SmbDirectConfig config) {
        role = initialRole;
        credits.initialValues(config.receiveCreditMax(), config.sendCreditTarget());
        maxSendSize = config.maxSendSize();
        maxFragmentedRecvSize = config.maxFragmentedRecvSize();
        maxReceiveSize = config.maxReceiveSize();
        keepaliveInterval = config.keepaliveInterval().toNanos();
        // 3.1.4.1 sets MaxReadWriteSize to 0 until the Negotiate Response; 3.1.7.2 sets the local value.
        maxReadWriteSize = initialRole == Role.ACTIVE ? 0 : config.maxReadWriteSize();
        keepaliveRequested = KeepaliveRequested.NONE;
        protocol = 0;
        // Connection.SendQueue starts empty with the connection; messages the upper layer queued
        // before this point wait in it for the connection to be established.
        reassembly.clear();
        invalidatedTokenPresent = false;
        sendImmediate = false;
    }

    /**
     * Takes Connection.InvalidatedToken for delivery with a message (3.1.5.8), leaving it empty.
     *
     * @return the token, or empty when none is present
     */
    java.util.OptionalInt takeInvalidatedToken() {
        if (!invalidatedTokenPresent) {
            return java.util.OptionalInt.empty();
        }
        invalidatedTokenPresent = false;
        return java.util.OptionalInt.of(invalidatedToken);
    }
}
