package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** MS-SMBD 3.1.5.9 and 3.1.5.1 (current text) as arithmetic, from tables of cases. */
class CreditLedgerTest {

    private static CreditLedger ledger(int sendCredits, int receiveCredits, int target, int max) {
        CreditLedger l = new CreditLedger();
        l.initialValues(max, 255);
        l.sendCredits = sendCredits;
        l.receiveCredits = receiveCredits;
        l.receiveCreditTarget = target;
        return l;
    }

    /**
     * 3.1.5.9: how many receives to post. Columns: SendCredits, ReceiveCredits, ReceiveCreditTarget,
     * ReceiveCreditMax, buffers there can be, send path, SendQueue not empty, expected.
     */
    @ParameterizedTest(name = "send {0} recv {1} target {2} max {3} capacity {4} sendPath {5} queued {6} -> {7}")
    @CsvSource({
        // sufficient credits: nothing (SHOULD return 0)
        "5, 10, 10, 255, 32, true, false, 0",
        "5, 12, 10, 255, 32, true, true, 0",
        // below target, send path: up to min(target, max, capacity)
        "5, 4, 10, 255, 32, true, false, 6",
        "5, 4, 100, 255, 32, true, false, 28",
        "5, 4, 100, 20, 32, true, false, 16",
        // receive path: only once half of the limit is used up (idle peers trade no credit messages)
        "5, 6, 10, 255, 32, false, false, 0",
        "5, 5, 10, 255, 32, false, false, 5",
        "5, 16, 32, 255, 32, false, false, 16",
        "5, 17, 32, 255, 32, false, false, 0",
        // at ReceiveCreditMax: nothing more (the SHOULD's bound)
        "5, 20, 100, 20, 32, true, false, 0",
        // MUST: ReceiveCredits zero -> at least one, even when the target says none
        "5, 0, 0, 255, 32, false, false, 1",
        "5, 0, 10, 255, 32, false, false, 10",
        "5, 0, 10, 255, 0, false, false, 1",
        // MUST: SendCredits 1 and a message queued -> at least one, also with enough receives posted
        "1, 10, 10, 255, 32, true, true, 1",
        "1, 40, 10, 255, 64, false, true, 1",
        // ...but not with SendCredits 1 and nothing queued, nor with more send credits
        "1, 10, 10, 255, 32, true, false, 0",
        "2, 10, 10, 255, 32, true, true, 0",
    })
    void manageCreditsPriorToSending_3_1_5_9_receivesToPost(int sendCredits, int receiveCredits, int target, int max,
            int capacity, boolean sendPath, boolean queued, int expected) {
        CreditLedger l = ledger(sendCredits, receiveCredits, target, max);
        assertEquals(expected, l.receivesToPost(sendPath, queued, capacity));
    }

    /** 3.1.5.9's MUST: ReceiveCredits zero, or SendCredits one with a message queued. */
    @ParameterizedTest(name = "send {0} recv {1} queued {2} -> {3}")
    @CsvSource({
        "0, 0, false, true",
        "5, 0, true, true",
        "1, 3, true, true",
        "1, 3, false, false",
        "2, 3, true, false",
        "0, 3, true, false",
    })
    void manageCreditsPriorToSending_3_1_5_9_mustPost(int sendCredits, int receiveCredits, boolean queued,
            boolean expected) {
        assertEquals(expected, ledger(sendCredits, receiveCredits, 10, 255).mustPost(queued));
    }

    /**
     * 3.1.5.1 (current text): no send without a credit, and the last credit only with a grant.
     * Columns: SendCredits, CreditsGranted of the message, may send.
     */
    @ParameterizedTest(name = "send credits {0}, granting {1} -> {2}")
    @CsvSource({
        "0, 0, false",
        "0, 5, false",
        "1, 0, false",
        "1, 1, true",
        "2, 0, true",
        "255, 0, true",
    })
    void sendingUpperLayerMessages_3_1_5_1_lastCreditNeedsAGrant(int sendCredits, int granted, boolean expected) {
        assertEquals(expected, ledger(sendCredits, 10, 10, 255).maySend(granted));
    }

    /** Posting, granting and sending move the counts as 3.1.5.9 and 3.1.5.1 say. */
    @ParameterizedTest(name = "posted {0}, granted {1}")
    @CsvSource({"10, 10", "10, 4", "70000, 65535"})
    void postedThenSent_countsFollow(int posted, int expectedGrant) {
        CreditLedger l = ledger(3, 0, 10, 255);
        l.posted(posted);
        assertEquals(posted, l.receiveCredits);
        int g = Math.min(l.grantable(), expectedGrant);
        assertEquals(expectedGrant, g);
        l.sent(g);
        assertEquals(2, l.sendCredits);
        assertEquals(posted - g, l.creditsToGrant);
        assertEquals(g, l.peerCredits);
        assertEquals(Math.min(posted - g, CreditLedger.MAX_CREDITS), l.grantable());
    }

    /**
     * 3.1.5.8: a message received uses one of the peer's credits, sets ReceiveCreditTarget from its
     * CreditsRequested and adds its CreditsGranted; the checks before it see a peer without credit
     * and an overflow beyond 65535.
     */
    @ParameterizedTest(name = "peer holds {0}, send credits {1}, granted {2}: holds {3}, overflow {4}")
    @CsvSource({
        "1, 0, 0, true, false",
        "0, 0, 0, false, false",
        "3, 65535, 0, true, false",
        "3, 65535, 1, true, true",
        "3, 1, 65534, true, false",
        "3, 2, 65534, true, true",
    })
    void receivingADataTransferMessage_3_1_5_8_credits(int peerCredits, int sendCredits, int granted, boolean holds,
            boolean overflow) {
        CreditLedger l = ledger(sendCredits, 10, 10, 255);
        l.peerCredits = peerCredits;
        assertEquals(holds, l.peerHoldsCredit());
        assertEquals(overflow, l.wouldOverflow(granted));
        if (holds && !overflow) {
            l.received(77, granted);
            assertEquals(peerCredits - 1, l.peerCredits);
            assertEquals(77, l.receiveCreditTarget);
            assertEquals(sendCredits + granted, l.sendCredits);
        }
    }
}
