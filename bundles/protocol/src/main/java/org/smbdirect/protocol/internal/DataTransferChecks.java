package org.smbdirect.protocol.internal;

import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.transport.TerminationReason;

/**
 * MS-SMBD 3.1.5.8 as a table: each condition under which the receiver of a Data Transfer message
 * MUST terminate the connection, with the reason the upper layer reads, in the order they are
 * checked; the first that holds ends the connection. Pure.
 *
 * <p>Beyond 3.1.5.8's own list: a peer must not send without a send credit, SendCredits must stay
 * countable (at most 65535), and a continuation fragment must carry exactly what the sequence
 * announced, else the reassembly buffer could outgrow MaxFragmentedRecvSize. And one leniency: a
 * message with DataLength 0 and RemainingDataLength 0 inside a fragmented sequence would, read
 * literally, end the sequence early; Linux peers before 2026 send such messages between the
 * fragments of a large message to grant credits, so unless {@code strictReassembly} is set it is
 * taken as credits and keepalive and the sequence goes on.
 */
final class DataTransferChecks {

    /** One received Data Transfer message and the connection state the checks read. */
    static final class Received {
        /** The message's length as received. */
        int length;
        long creditsRequested;
        long creditsGranted;
        /** DataOffset, DataLength and RemainingDataLength, unsigned. */
        long dataOffset;
        long dataLength;
        long remainingDataLength;
        /** Connection.MaxFragmentedRecvSize. */
        long maxFragmentedRecvSize;
        /** Connection.FragmentReassemblyRemaining. */
        long reassemblyRemaining;
        boolean peerHoldsCredit;
        /** Connection.SendCredits. */
        long sendCredits;
        boolean strictReassembly;

        /** Whether this is a first or only fragment (no sequence in progress). */
        boolean insideSequence() {
            return reassemblyRemaining > 0;
        }

        /**
         * The leniency: an empty message inside a sequence, taken as credits and keepalive.
         *
         * @return {@code true} when this message is such a one and strictness is off
         */
        boolean creditsOnlyInsideSequence() {
            return insideSequence() && dataLength == 0 && remainingDataLength == 0 && !strictReassembly;
        }

        @Override
        public String toString() {
            return "length " + length + ", CreditsRequested " + creditsRequested + ", CreditsGranted " + creditsGranted
                    + ", DataOffset " + dataOffset + ", DataLength " + dataLength + ", RemainingDataLength "
                    + remainingDataLength + ", MaxFragmentedRecvSize " + maxFragmentedRecvSize
                    + ", FragmentReassemblyRemaining " + reassemblyRemaining + ", peer holds a credit "
                    + peerHoldsCredit + ", SendCredits " + sendCredits;
        }
    }

    /**
     * The table, in the order of checking: each row the reason and, in {@link #violatedBy}, its
     * condition. Only the first row may look at a message shorter than 20 bytes.
     */
    enum Rule {
        TOO_SHORT(TerminationReason.DATA_TRANSFER_TOO_SHORT),
        NO_CREDITS_REQUESTED(TerminationReason.DATA_TRANSFER_NO_CREDITS_REQUESTED),
        OFFSET_NOT_ALIGNED(TerminationReason.DATA_OFFSET_NOT_ALIGNED),
        DATA_BEYOND_MESSAGE(TerminationReason.DATA_BEYOND_MESSAGE),
        FRAGMENTED_SIZE_EXCEEDED(TerminationReason.FRAGMENTED_SIZE_EXCEEDED),
        SEND_WITHOUT_CREDIT(TerminationReason.SEND_WITHOUT_CREDIT),
        /** 3.1.5.8's final step: the last fragment arrived before the announced data was complete. */
        REASSEMBLY_INCOMPLETE(TerminationReason.REASSEMBLY_INCOMPLETE),
        REASSEMBLY_OVERRUN(TerminationReason.REASSEMBLY_OVERRUN),
        SEND_CREDITS_OVERFLOW(TerminationReason.SEND_CREDITS_OVERFLOW);

        private static final Rule[] ROWS = values();
        final TerminationReason reason;

        Rule(TerminationReason reason) {
            this.reason = reason;
        }

        /** The row's condition (a switch rather than a function per row: it runs for every message). */
        boolean violatedBy(Received r) {
            switch (this) {
                case TOO_SHORT:
                    return r.length < Wire.DATA_TRANSFER_HEADER_SIZE;
                case NO_CREDITS_REQUESTED:
                    return r.creditsRequested == 0;
                case OFFSET_NOT_ALIGNED:
                    return (r.dataOffset & 7) != 0;
                case DATA_BEYOND_MESSAGE:
                    return r.dataOffset + r.dataLength > r.length;
                case FRAGMENTED_SIZE_EXCEEDED:
                    return r.dataLength + r.remainingDataLength > r.maxFragmentedRecvSize;
                case SEND_WITHOUT_CREDIT:
                    return !r.peerHoldsCredit;
                case REASSEMBLY_INCOMPLETE:
                    return r.insideSequence() && !r.creditsOnlyInsideSequence() && r.remainingDataLength == 0
                            && r.dataLength < r.reassemblyRemaining;
                case REASSEMBLY_OVERRUN:
                    return r.insideSequence() && !r.creditsOnlyInsideSequence()
                            && (r.dataLength > r.reassemblyRemaining
                                    || r.remainingDataLength != r.reassemblyRemaining - r.dataLength);
                case SEND_CREDITS_OVERFLOW:
                    return r.sendCredits + r.creditsGranted > CreditLedger.MAX_CREDITS;
                default:
                    throw new AssertionError(this);
            }
        }
    }

    private DataTransferChecks() {
    }

    /**
     * MS-SMBD 3.1.5.8: the reason to terminate on this message, if any.
     *
     * @param r the message and the connection state
     * @return the first violated rule's reason, or {@code null} when the message is acceptable
     */
    static TerminationReason check(Received r) {
        for (Rule rule : Rule.ROWS) {
            if (rule.violatedBy(r)) {
                return rule.reason;
            }
        }
        return null;
    }
}
