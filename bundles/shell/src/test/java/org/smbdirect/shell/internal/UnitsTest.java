package org.smbdirect.shell.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class UnitsTest {

    @Test
    void sizes_withBinarySuffixes() throws Exception {
        assertEquals(4096, Units.parseSize("x", "4096"));
        assertEquals(4096, Units.parseSize("x", "4k"));
        assertEquals(4096, Units.parseSize("x", "4KiB"));
        assertEquals(64L << 20, Units.parseSize("x", "64M"));
        assertEquals(64L << 20, Units.parseSize("x", "64MB"));
        assertEquals(1L << 30, Units.parseSize("x", "1g"));
    }

    @Test
    void notASize_saysWhatIsExpected() {
        UsageException e = assertThrows(UsageException.class, () -> Units.parseSize("--size", "lots"));
        assertEquals("--size: 'lots' is not a size (examples: 4096, 64k, 64M, 1G)", e.getMessage());
        assertThrows(UsageException.class, () -> Units.parseSize("--size", "-4k"));
        assertThrows(UsageException.class, () -> Units.parseSize("--size", "99999999999999999999"));
    }

    @Test
    void bytesAndRates_forPeople() {
        assertEquals("512 B", Units.bytes(512));
        assertEquals("1.5 KiB", Units.bytes(1536));
        assertEquals("64.0 MiB", Units.bytes(64L << 20));
        assertEquals("2.00 GiB", Units.bytes(2L << 30));
        assertEquals("64.0 MiB/s", Units.rate(64L << 20, 1_000_000_000L));
        assertEquals("1.500 s", Units.seconds(1_500_000_000L));
    }
}
