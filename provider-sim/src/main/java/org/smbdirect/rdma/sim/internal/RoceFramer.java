package org.smbdirect.rdma.sim.internal;

import java.util.zip.CRC32;

/**
 * Builds RoCEv2 frames: Ethernet II / IPv4 / UDP (destination port 4791) / InfiniBand BTH, the
 * extended transport headers an opcode needs, payload, pad to a 4-byte multiple, and the invariant
 * CRC (IBA annex A17: CRC-32 over 8 bytes of ones standing for the masked LRH, then the IP header
 * with TOS, TTL and checksum set to ones, the UDP header with its checksum set to ones, the BTH with
 * its reserved byte set to ones, and the rest of the packet; stored least significant byte first).
 * One builder is used under its writer's lock; building allocates nothing.
 */
final class RoceFramer {
    static final int ROCE_V2_PORT = 4791;
    /** Headers (14 + 20 + 8 + 12 + 16 + 4) plus a 4096-byte MTU, pad and ICRC, with room to spare. */
    static final int MAX_FRAME = 4352;
    private static final int ETH = 14;
    private static final int IP = ETH;
    private static final int UDP = IP + 20;
    private static final int BTH = UDP + 8;
    private static final byte[] ONES = {-1, -1, -1, -1, -1, -1, -1, -1};

    final byte[] frame = new byte[MAX_FRAME];
    private final byte[] masked = new byte[40];
    private final CRC32 crc = new CRC32();
    private int ipId;
    private int pos;
    private int payloadStart;

    /** Starts a frame: addresses, then the BTH. */
    void begin(int srcIp, int dstIp, int srcQpn, int opcode, boolean solicited, int destQp, boolean ackRequest, int psn) {
        mac(0, dstIp);
        mac(6, srcIp);
        frame[12] = 0x08;
        frame[13] = 0x00;
        frame[IP] = 0x45;
        frame[IP + 1] = 0;
        put16(IP + 4, ipId++);
        put16(IP + 6, 0x4000); // don't fragment
        frame[IP + 8] = 64;
        frame[IP + 9] = 17;
        put32(IP + 12, srcIp);
        put32(IP + 16, dstIp);
        put16(UDP, 0xC000 | (srcQpn & 0x3FFF)); // RoCEv2 source port: entropy per queue pair
        put16(UDP + 2, ROCE_V2_PORT);
        put16(UDP + 6, 0); // no UDP checksum (allowed for RoCEv2 over IPv4)
        frame[BTH] = (byte) opcode;
        frame[BTH + 1] = (byte) (solicited ? 0x80 : 0);
        put16(BTH + 2, 0xFFFF); // default partition key
        frame[BTH + 4] = 0;
        put24(BTH + 5, destQp);
        put32(BTH + 8, (ackRequest ? 0x80000000 : 0) | (psn & 0xFFFFFF));
        pos = BTH + 12;
        payloadStart = -1;
    }

    /** RDMA extended transport header: virtual address, remote key, DMA length. */
    void reth(long va, int rkey, int length) {
        put32(pos, (int) (va >>> 32));
        put32(pos + 4, (int) va);
        put32(pos + 8, rkey);
        put32(pos + 12, length);
        pos += 16;
    }

    /** ACK extended transport header: syndrome and message sequence number. */
    void aeth(int syndrome, int msn) {
        frame[pos] = (byte) syndrome;
        put24(pos + 1, msn);
        pos += 4;
    }

    /** Invalidate extended transport header: the remote key to invalidate. */
    void ieth(int rkey) {
        put32(pos, rkey);
        pos += 4;
    }

    /** Datagram extended transport header: Q_Key and source queue pair. */
    void deth(int qkey, int srcQp) {
        put32(pos, qkey);
        frame[pos + 4] = 0;
        put24(pos + 5, srcQp);
        pos += 8;
    }

    /** Where the payload goes; the caller copies it there and calls {@link #payload(int)}. */
    int payloadOffset() {
        return pos;
    }

    void payload(int n) {
        payloadStart = pos;
        pos += n;
    }

    /** Pads, fills lengths and checksums, appends the ICRC; returns the frame's length. */
    int finish() {
        int payloadLen = payloadStart < 0 ? 0 : pos - payloadStart;
        int pad = -payloadLen & 3;
        for (int i = 0; i < pad; i++) {
            frame[pos++] = 0;
        }
        frame[BTH + 1] = (byte) ((frame[BTH + 1] & 0xCF) | (pad << 4));
        int end = pos + 4;
        put16(IP + 2, end - IP);
        put16(UDP + 4, end - UDP);
        put16(IP + 10, 0);
        put16(IP + 10, ipChecksum(frame, IP));
        put32le(pos, icrc(frame, masked, crc, pos));
        pos = end;
        return end;
    }

    /**
     * The ICRC of an Ethernet/IPv4/UDP RoCEv2 frame whose IB packet ends (before the ICRC) at
     * {@code end}.
     */
    static int icrc(byte[] frame, int end) {
        return icrc(frame, new byte[40], new CRC32(), end);
    }

    private static int icrc(byte[] f, byte[] scratch, CRC32 crc, int end) {
        crc.reset();
        crc.update(ONES, 0, 8);
        System.arraycopy(f, IP, scratch, 0, 40);
        scratch[1] = -1;            // IP type of service
        scratch[8] = -1;            // IP time to live
        scratch[10] = -1;           // IP header checksum
        scratch[11] = -1;
        scratch[20 + 6] = -1;       // UDP checksum
        scratch[20 + 7] = -1;
        scratch[28 + 4] = -1;       // BTH reserved byte (resv8a)
        crc.update(scratch, 0, 40);
        crc.update(f, BTH + 12, end - (BTH + 12));
        return (int) crc.getValue();
    }

    static int ipChecksum(byte[] f, int off) {
        int sum = 0;
        for (int i = 0; i < 20; i += 2) {
            sum += ((f[off + i] & 0xFF) << 8) | (f[off + i + 1] & 0xFF);
        }
        while ((sum >>> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >>> 16);
        }
        return ~sum & 0xFFFF;
    }

    private void mac(int off, int ip) {
        frame[off] = 0x02; // locally administered, derived from the IP address
        frame[off + 1] = 0x00;
        put32(off + 2, ip);
    }

    private void put16(int off, int v) {
        frame[off] = (byte) (v >>> 8);
        frame[off + 1] = (byte) v;
    }

    private void put24(int off, int v) {
        frame[off] = (byte) (v >>> 16);
        frame[off + 1] = (byte) (v >>> 8);
        frame[off + 2] = (byte) v;
    }

    private void put32(int off, int v) {
        frame[off] = (byte) (v >>> 24);
        frame[off + 1] = (byte) (v >>> 16);
        frame[off + 2] = (byte) (v >>> 8);
        frame[off + 3] = (byte) v;
    }

    private void put32le(int off, int v) {
        frame[off] = (byte) v;
        frame[off + 1] = (byte) (v >>> 8);
        frame[off + 2] = (byte) (v >>> 16);
        frame[off + 3] = (byte) (v >>> 24);
    }
}
