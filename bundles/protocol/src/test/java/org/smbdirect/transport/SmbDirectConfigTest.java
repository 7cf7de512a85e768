package org.smbdirect.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

class SmbDirectConfigTest {

    /** MS-SMBD section 7, notes 1-7: the Windows defaults. */
    @Test
    void defaults_areWindowsProductBehaviour() {
        SmbDirectConfig c = SmbDirectConfig.defaults();
        assertEquals(255, c.receiveCreditMax());
        assertEquals(255, c.sendCreditTarget());
        assertEquals(1364, c.maxSendSize());
        assertEquals(8192, c.maxReceiveSize());
        assertEquals(1048576, c.maxFragmentedRecvSize());
        assertEquals(8388608, c.maxReadWriteSize());
        assertEquals(Duration.ofSeconds(120), c.keepaliveInterval());
        assertEquals(Duration.ofSeconds(5), c.keepaliveResponseTimeout());
        assertEquals(Duration.ofSeconds(120), c.activeNegotiationTimeout());
        assertEquals(Duration.ofSeconds(5), c.passiveNegotiationTimeout());
        assertEquals(8136, c.preferredSendSizeLimit());
    }

    @Test
    void outOfRange_namesFieldAndRange() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SmbDirectConfig.builder().maxReceiveSize(127));
        assertEquals("maxReceiveSize must be between 128 and 16777216 (inclusive), was 127", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> SmbDirectConfig.builder().maxFragmentedRecvSize(131071));
        assertTrue(e.getMessage().startsWith("maxFragmentedRecvSize must be between 131072"));
        assertThrows(IllegalArgumentException.class, () -> SmbDirectConfig.builder().receiveCreditMax(0));
        assertThrows(IllegalArgumentException.class, () -> SmbDirectConfig.builder().receiveCreditMax(65536));
        assertThrows(IllegalArgumentException.class, () -> SmbDirectConfig.builder().preferredSendSizeLimit(127));
        assertEquals(0, SmbDirectConfig.builder().preferredSendSizeLimit(0).build().preferredSendSizeLimit());
    }

    @Test
    void inclusiveLimits_areAccepted() {
        SmbDirectConfig c = SmbDirectConfig.builder().maxReceiveSize(128).maxFragmentedRecvSize(131072)
                .receiveCreditMax(65535).build();
        assertEquals(128, c.maxReceiveSize());
        assertEquals(131072, c.maxFragmentedRecvSize());
    }

    @Test
    void toBuilder_roundTrips() {
        SmbDirectConfig c = SmbDirectConfig.builder().maxSendSize(4096).irdOrdHeader(IrdOrdHeaderPolicy.NEVER)
                .rnrRetryCount(3).strictReassembly(true).engineThreads(3).build();
        assertEquals(c, c.toBuilder().build());
        assertEquals(4096, c.toMap().get(SmbDirectConfig.MAX_SEND_SIZE));
        assertEquals("NEVER", c.toMap().get(SmbDirectConfig.IRD_ORD_HEADER));
        assertEquals(3, c.toMap().get(SmbDirectConfig.RNR_RETRY_COUNT));
    }

    /** The Windows and Linux behaviour is the default: header on iWARP only, RNR retry 7, lenient reassembly. */
    @Test
    void defaults_interoperateWithWindowsAndLinux() {
        SmbDirectConfig d = SmbDirectConfig.defaults();
        assertEquals(IrdOrdHeaderPolicy.AUTO, d.irdOrdHeader());
        assertEquals(7, d.rnrRetryCount());
        assertEquals(false, d.strictReassembly());
    }

    @Test
    void rnrRetryCount_outOfRange_rejectedWithName() {
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> SmbDirectConfig.builder().rnrRetryCount(8));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains(SmbDirectConfig.RNR_RETRY_COUNT),
                e.getMessage());
    }

    @Test
    void irdOrdHeaderPolicy_parsesNamesAndTheOldBoolean() {
        assertEquals(IrdOrdHeaderPolicy.ALWAYS, IrdOrdHeaderPolicy.parse("always"));
        assertEquals(IrdOrdHeaderPolicy.AUTO, IrdOrdHeaderPolicy.parse("true"));
        assertEquals(IrdOrdHeaderPolicy.NEVER, IrdOrdHeaderPolicy.parse("false"));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> IrdOrdHeaderPolicy.parse("sometimes"));
    }
}
