package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.smbdirect.transport.TerminationReason;

/**
 * MS-SMBD 3.1.5.8 as a table: each condition under which a received Data Transfer message ends
 * the connection, and the reason the upper layer reads.
 */
class DataTransferChecksTest {

    /**
     * Columns: message length, CreditsRequested, CreditsGranted, DataOffset, DataLength,
     * RemainingDataLength, FragmentReassemblyRemaining, peer holds a credit, SendCredits,
     * strictReassembly, expected reason (empty: accepted). MaxFragmentedRecvSize is 1 MiB.
     */
    @ParameterizedTest(name = "[{index}] -> {10}")
    @CsvSource({
        // acceptable: a whole message, an empty one, a first and a continuation fragment
        "124, 10, 0, 24, 100, 0, 0, true, 5, false, ",
        "20, 10, 3, 0, 0, 0, 0, true, 5, false, ",
        "1364, 10, 0, 24, 1340, 5000, 0, true, 5, false, ",
        "1364, 10, 0, 24, 1340, 3660, 5000, true, 5, false, ",
        "1024, 10, 0, 24, 1000, 0, 1000, true, 5, false, ",
        // 3.1.5.8's list, in order
        "19, 10, 0, 24, 0, 0, 0, true, 5, false, DATA_TRANSFER_TOO_SHORT",
        "0, 10, 0, 24, 0, 0, 0, true, 5, false, DATA_TRANSFER_TOO_SHORT",
        "124, 0, 0, 24, 100, 0, 0, true, 5, false, DATA_TRANSFER_NO_CREDITS_REQUESTED",
        "124, 10, 0, 20, 100, 0, 0, true, 5, false, DATA_OFFSET_NOT_ALIGNED",
        "124, 10, 0, 25, 99, 0, 0, true, 5, false, DATA_OFFSET_NOT_ALIGNED",
        "124, 10, 0, 24, 101, 0, 0, true, 5, false, DATA_BEYOND_MESSAGE",
        "124, 10, 0, 4294967288, 100, 0, 0, true, 5, false, DATA_BEYOND_MESSAGE",
        "1364, 10, 0, 24, 1340, 1047237, 0, true, 5, false, FRAGMENTED_SIZE_EXCEEDED",
        "1364, 10, 0, 24, 1340, 1047236, 0, true, 5, false, ",
        // beyond the list: credits
        "124, 10, 0, 24, 100, 0, 0, false, 5, false, SEND_WITHOUT_CREDIT",
        "124, 10, 65531, 24, 100, 0, 0, true, 5, false, SEND_CREDITS_OVERFLOW",
        "124, 10, 65530, 24, 100, 0, 0, true, 5, false, ",
        // the final step: a sequence that ends early, and continuations that do not match it
        "524, 10, 0, 24, 500, 0, 1000, true, 5, false, REASSEMBLY_INCOMPLETE",
        "1224, 10, 0, 24, 1200, 0, 1000, true, 5, false, REASSEMBLY_OVERRUN",
        "524, 10, 0, 24, 500, 600, 1000, true, 5, false, REASSEMBLY_OVERRUN",
        "524, 10, 0, 24, 500, 400, 1000, true, 5, false, REASSEMBLY_OVERRUN",
        // the leniency: an empty message inside a sequence is credits and keepalive...
        "20, 10, 7, 0, 0, 0, 1000, true, 5, false, ",
        // ...unless strictReassembly, which reads it as the sequence ending early
        "20, 10, 7, 0, 0, 0, 1000, true, 5, true, REASSEMBLY_INCOMPLETE",
        // ...and it is still subject to the credit checks
        "20, 10, 65531, 0, 0, 0, 1000, true, 5, false, SEND_CREDITS_OVERFLOW",
        "20, 10, 0, 0, 0, 0, 1000, false, 5, false, SEND_WITHOUT_CREDIT",
    })
    void receivingADataTransferMessage_3_1_5_8_table(int length, long requested, long granted, long dataOffset,
            long dataLength, long remaining, long reassemblyRemaining, boolean peerHolds, long sendCredits,
            boolean strict, String expected) {
        DataTransferChecks.Received r = new DataTransferChecks.Received();
        r.length = length;
        r.creditsRequested = requested;
        r.creditsGranted = granted;
        r.dataOffset = dataOffset;
        r.dataLength = dataLength;
        r.remainingDataLength = remaining;
        r.maxFragmentedRecvSize = 1 << 20;
        r.reassemblyRemaining = reassemblyRemaining;
        r.peerHoldsCredit = peerHolds;
        r.sendCredits = sendCredits;
        r.strictReassembly = strict;
        TerminationReason reason = DataTransferChecks.check(r);
        if (expected == null) {
            assertNull(reason, r.toString());
        } else {
            assertEquals(TerminationReason.valueOf(expected), reason, r.toString());
        }
    }

    /** Every reason the table gives is one of 3.1.5.8's, and every Data Transfer reason has a row. */
    @Test
    void everyDataTransferReasonHasARow() {
        Set<TerminationReason> rows = Arrays.stream(DataTransferChecks.Rule.values()).map(r -> r.reason)
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(TerminationReason.class)));
        for (TerminationReason r : rows) {
            assertEquals("3.1.5.8", r.section(), r.name());
        }
        Set<TerminationReason> sectionReasons = Arrays.stream(TerminationReason.values())
                .filter(r -> "3.1.5.8".equals(r.section()))
                .collect(Collectors.toCollection(() -> EnumSet.noneOf(TerminationReason.class)));
        // The provider, not this table, ends the connection when a peer invalidates an unknown token.
        sectionReasons.remove(TerminationReason.INVALID_TOKEN_INVALIDATED);
        assertEquals(sectionReasons, rows);
    }
}
