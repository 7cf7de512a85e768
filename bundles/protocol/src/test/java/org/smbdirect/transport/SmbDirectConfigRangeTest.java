package org.smbdirect.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.function.BiConsumer;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every field of the transport's configuration refuses a value just outside its range, naming the
 * field and the range, and accepts both ends of the range.
 */
class SmbDirectConfigRangeTest {

    static Stream<Arguments> fields() {
        return Stream.of(
                field(SmbDirectConfig.RECEIVE_CREDIT_MAX, 1, 65535, SmbDirectConfig.Builder::receiveCreditMax),
                field(SmbDirectConfig.SEND_CREDIT_TARGET, 1, 65535, SmbDirectConfig.Builder::sendCreditTarget),
                field(SmbDirectConfig.MAX_SEND_SIZE, 128, 1 << 24, SmbDirectConfig.Builder::maxSendSize),
                field(SmbDirectConfig.MAX_RECEIVE_SIZE, 128, 1 << 24, SmbDirectConfig.Builder::maxReceiveSize),
                field(SmbDirectConfig.MAX_FRAGMENTED_RECV_SIZE, 131072, 1 << 28,
                        SmbDirectConfig.Builder::maxFragmentedRecvSize),
                field(SmbDirectConfig.MAX_READ_WRITE_SIZE, 0, 1 << 30, SmbDirectConfig.Builder::maxReadWriteSize),
                field(SmbDirectConfig.KEEPALIVE_INTERVAL, 0, 86400, SmbDirectConfig.Builder::keepaliveIntervalSeconds),
                field(SmbDirectConfig.KEEPALIVE_RESPONSE_TIMEOUT, 1, 3600,
                        SmbDirectConfig.Builder::keepaliveResponseTimeoutSeconds),
                field(SmbDirectConfig.ACTIVE_NEGOTIATION_TIMEOUT, 1, 3600,
                        SmbDirectConfig.Builder::activeNegotiationTimeoutSeconds),
                field(SmbDirectConfig.PASSIVE_NEGOTIATION_TIMEOUT, 1, 3600,
                        SmbDirectConfig.Builder::passiveNegotiationTimeoutSeconds),
                field(SmbDirectConfig.PREFERRED_SEND_SIZE_LIMIT, 128, 1 << 24,
                        SmbDirectConfig.Builder::preferredSendSizeLimit),
                field(SmbDirectConfig.IRD, 1, 255, SmbDirectConfig.Builder::ird),
                field(SmbDirectConfig.ORD, 1, 255, SmbDirectConfig.Builder::ord),
                field(SmbDirectConfig.SEND_BUFFERS, 1, 1024, SmbDirectConfig.Builder::sendBuffers),
                field(SmbDirectConfig.MAX_PENDING_SENDS, 1, 1 << 20, SmbDirectConfig.Builder::maxPendingSends),
                field(SmbDirectConfig.ENGINE_THREADS, 0, 256, SmbDirectConfig.Builder::engineThreads),
                field(SmbDirectConfig.ENGINE_SPIN_MICROSECONDS, 0, 100000,
                        SmbDirectConfig.Builder::engineSpinMicroseconds),
                field(SmbDirectConfig.RDMA_REGISTRATION_CACHE_BYTES, 0, 1073741824, SmbDirectConfig.Builder::rdmaRegistrationCacheBytes),
                field(SmbDirectConfig.RECEIVE_BUFFER_BUDGET, 0, 1 << 20, SmbDirectConfig.Builder::receiveBufferBudget));
    }

    private static Arguments field(String name, int min, int max, BiConsumer<SmbDirectConfig.Builder, Integer> set) {
        return Arguments.of(name, min, max, set);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("fields")
    void outOfRange_isRefusedNamingFieldAndRange(String name, int min, int max,
            BiConsumer<SmbDirectConfig.Builder, Integer> set) {
        String range = name + " must be between " + min + " and " + max + " (inclusive), was ";
        if (!name.equals(SmbDirectConfig.PREFERRED_SEND_SIZE_LIMIT)) { // 0 is valid there: no limit
            IllegalArgumentException below = assertThrows(IllegalArgumentException.class,
                    () -> set.accept(SmbDirectConfig.builder(), min - 1));
            assertEquals(range + (min - 1), below.getMessage());
        }
        IllegalArgumentException above = assertThrows(IllegalArgumentException.class,
                () -> set.accept(SmbDirectConfig.builder(), max + 1));
        assertEquals(range + (max + 1), above.getMessage());
        SmbDirectConfig.Builder b = SmbDirectConfig.builder();
        set.accept(b, min);
        set.accept(b, max);
        assertEquals(max, b.build().toMap().get(name));
    }

    /** PreferredSendSizeLimit also takes 0 (no limit), and refuses 1 to 127. */
    @Test
    void preferredSendSizeLimit_zeroOrAtLeast128() {
        assertEquals(0, SmbDirectConfig.builder().preferredSendSizeLimit(0).build().preferredSendSizeLimit());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SmbDirectConfig.builder().preferredSendSizeLimit(127));
        assertEquals("preferredSendSizeLimit must be between 128 and 16777216 (inclusive), was 127", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SmbDirectConfig.builder().preferredSendSizeLimit(-1));
    }
}
