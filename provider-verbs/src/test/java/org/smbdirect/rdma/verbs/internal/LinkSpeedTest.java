package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The link speed a verbs provider reports, from its port's active speed and width. */
class LinkSpeedTest {

    /** Columns: IBV_SPEED_*, IBV_WIDTH_*, bits per second. */
    @ParameterizedTest(name = "speed {0}, width {1} -> {2}")
    @CsvSource({
        "1, 1, 2500000000",
        "1, 2, 10000000000",
        "4, 2, 40000000000",
        "16, 2, 56000000000",
        "32, 2, 100000000000",
        "64, 2, 200000000000",
        "128, 2, 400000000000",
        "32, 1, 25000000000",
        "32, 16, 50000000000",
        "2, 8, 60000000000",
        "0, 2, 0",
        "32, 0, 0",
        "3, 1, 0",
    })
    void linkSpeed_lanesTimesLaneRate(long speed, long width, long expected) {
        assertEquals(expected, VerbsProvider.linkSpeed(speed, width));
    }
}
