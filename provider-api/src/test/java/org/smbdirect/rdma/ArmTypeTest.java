package org.smbdirect.rdma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class ArmTypeTest {

    /** NDKPI completion requirements: the arm-combination table, row = first arm, column = second. */
    @ParameterizedTest(name = "{0} then {1} -> {2}")
    @CsvSource({
        "ANY, ANY, ANY", "ANY, ERRORS, ANY", "ANY, SOLICITED, ANY",
        "ERRORS, ANY, ANY", "ERRORS, ERRORS, ERRORS", "ERRORS, SOLICITED, SOLICITED",
        "SOLICITED, ANY, ANY", "SOLICITED, ERRORS, SOLICITED", "SOLICITED, SOLICITED, SOLICITED"})
    void combine_followsNdkTable(ArmType first, ArmType second, ArmType expected) {
        assertEquals(expected, first.combine(second));
    }

    @Test
    void satisfiedBy_any_takesEverything() {
        assertTrue(ArmType.ANY.isSatisfiedBy(RdmaStatus.SUCCESS, false));
        assertTrue(ArmType.ANY.isSatisfiedBy(RdmaStatus.FLUSHED, false));
    }

    @Test
    void satisfiedBy_errors_onlyErrors() {
        assertFalse(ArmType.ERRORS.isSatisfiedBy(RdmaStatus.SUCCESS, true));
        assertTrue(ArmType.ERRORS.isSatisfiedBy(RdmaStatus.FLUSHED, false));
        assertTrue(ArmType.ERRORS.isSatisfiedBy(RdmaStatus.REMOTE_ACCESS_ERROR, false));
    }

    @Test
    void satisfiedBy_solicited_solicitedOrErrors() {
        assertFalse(ArmType.SOLICITED.isSatisfiedBy(RdmaStatus.SUCCESS, false));
        assertTrue(ArmType.SOLICITED.isSatisfiedBy(RdmaStatus.SUCCESS, true));
        assertTrue(ArmType.SOLICITED.isSatisfiedBy(RdmaStatus.CONNECTION_RESET, false));
    }
}
