package org.smbdirect.rdma.sim.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HexFormat;

import org.junit.jupiter.api.Test;

/** The framing arithmetic: ICRC against a frame captured from real hardware, checksums, padding. */
class RoceFramerTest {

    /**
     * A RoCEv2 congestion notification packet captured on a Mellanox ConnectX-4 Lx, as published
     * in scapy's RoCE regression tests (test/contrib/roce.uts): its last four bytes are the ICRC
     * the adapter computed.
     */
    private static final String CONNECTX4_CNP = "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a00"
            + "12010000" + "12b700280000" + "8100ffff40000118" + "00000000" + "00000000000000000000000000000000"
            + "82fd002a";

    @Test
    void icrc_matchesAFrameComputedByHardware() {
        byte[] f = HexFormat.of().parseHex(CONNECTX4_CNP);
        int end = f.length - 4;
        int expected = (f[end] & 0xFF) | (f[end + 1] & 0xFF) << 8 | (f[end + 2] & 0xFF) << 16 | (f[end + 3] & 0xFF) << 24;
        assertEquals(expected, RoceFramer.icrc(f, end));
    }

    @Test
    void builtFrame_hasConsistentLengthsChecksumPadAndIcrc() {
        RoceFramer r = new RoceFramer();
        r.begin(0x0A000001, 0x0A000002, 0x12, 0x04, true, 0x34, true, 0x123456);
        int at = r.payloadOffset();
        for (int i = 0; i < 5; i++) {
            r.frame[at + i] = (byte) i;
        }
        r.payload(5);
        int len = r.finish();
        byte[] f = r.frame;
        assertEquals(14 + 20 + 8 + 12 + 8 + 4, len, "5 payload bytes padded to 8");
        assertEquals(len - 14, (f[16] & 0xFF) << 8 | (f[17] & 0xFF), "IP total length");
        assertEquals(len - 34, (f[38] & 0xFF) << 8 | (f[39] & 0xFF), "UDP length");
        assertEquals(4791, (f[36] & 0xFF) << 8 | (f[37] & 0xFF));
        assertEquals(0, RoceFramer.ipChecksum(f, 14), "IP header checksum verifies to zero");
        assertEquals(3, (f[43] >> 4) & 3, "BTH pad count");
        assertEquals(0x80, f[43] & 0x80, "solicited event bit");
        int end = len - 4;
        int stored = (f[end] & 0xFF) | (f[end + 1] & 0xFF) << 8 | (f[end + 2] & 0xFF) << 16 | (f[end + 3] & 0xFF) << 24;
        assertEquals(RoceFramer.icrc(f, end), stored);
    }
}
