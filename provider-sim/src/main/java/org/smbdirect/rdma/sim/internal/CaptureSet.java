package org.smbdirect.rdma.sim.internal;

import java.util.Arrays;

import org.smbdirect.rdma.RequestFlags;

/**
 * What one connection writes to the capture files of the providers it involves (one file when
 * both endpoints are on the same provider). It turns RC operations into the packets an InfiniBand
 * reliable connection carries, cut at the path MTU:
 * <ul>
 * <li>connection set-up: CM ConnectRequest (with the IP CM header and the private data),
 * ConnectReply, ReadyToUse; a refusal is ConnectRequest and ConnectReject; tear-down is
 * DisconnectRequest and DisconnectReply (management datagrams to QP1);</li>
 * <li>a send: SEND ONLY, or SEND FIRST/MIDDLE/LAST (the _WITH_INVALIDATE forms with an IETH for
 * send-and-invalidate; the solicited-event bit for SOLICIT_EVENT), then the responder's
 * ACKNOWLEDGE (or a NAK);</li>
 * <li>an RDMA Write: RDMA WRITE ONLY or FIRST/MIDDLE/LAST with an RETH, then ACKNOWLEDGE or NAK;</li>
 * <li>an RDMA Read: RDMA READ Request (RETH), then RDMA READ Response ONLY or FIRST/MIDDLE/LAST
 * (AETH on the first and last), or a NAK.</li>
 * </ul>
 * Flushed requests and local invalidates put nothing on the wire and produce no frames.
 */
final class CaptureSet {
    static final int SYNDROME_ACK = 0x1F;             // ACK, credit count "invalid" (not used)
    static final int SYNDROME_RNR = 0x20 | 0x0E;     // RNR NAK with a timer code
    static final int SYNDROME_INVALID_REQUEST = 0x61;
    static final int SYNDROME_REMOTE_ACCESS = 0x62;
    static final int SYNDROME_REMOTE_OPERATION = 0x63;
    static final int REJ_TIMEOUT = 4;
    static final int REJ_INVALID_SERVICE_ID = 8;
    static final int REJ_CONSUMER = 28;

    // RC opcodes (IBA 9.2, table 38)
    private static final int SEND_FIRST = 0x00;
    private static final int SEND_MIDDLE = 0x01;
    private static final int SEND_LAST = 0x02;
    private static final int SEND_ONLY = 0x04;
    private static final int WRITE_FIRST = 0x06;
    private static final int WRITE_MIDDLE = 0x07;
    private static final int WRITE_LAST = 0x08;
    private static final int WRITE_ONLY = 0x0A;
    private static final int READ_REQUEST = 0x0C;
    private static final int READ_RESPONSE_FIRST = 0x0D;
    private static final int READ_RESPONSE_MIDDLE = 0x0E;
    private static final int READ_RESPONSE_LAST = 0x0F;
    private static final int READ_RESPONSE_ONLY = 0x10;
    private static final int ACKNOWLEDGE = 0x11;
    private static final int SEND_LAST_INVALIDATE = 0x16;
    private static final int SEND_ONLY_INVALIDATE = 0x17;
    private static final int UD_SEND_ONLY = 0x64;

    private static final int RETH = 1;
    private static final int AETH = 2;
    private static final int IETH = 4;

    // CM attribute IDs (IBA 12.6)
    private static final int CM_REQ = 0x0010;
    private static final int CM_REJ = 0x0012;
    private static final int CM_REP = 0x0013;
    private static final int CM_RTU = 0x0014;
    private static final int CM_DREQ = 0x0015;
    private static final int CM_DREP = 0x0016;
    private static final int GSI_QKEY = 0x80010000;

    /** The providers whose capture files see this connection (the second is null when the same). */
    private final SimProvider first;
    private final SimProvider second;
    private byte[] mad;
    private int udPsn;
    private long transactionId;

    private CaptureSet(SimProvider first, SimProvider second) {
        this.first = first;
        this.second = second;
    }

    /**
     * The capture of a connection between two providers. Each frame goes to the capture files the
     * providers have at that moment, so turning capture on or off applies to running connections;
     * sequence numbers advance either way.
     */
    static CaptureSet create(SimProvider a, SimProvider b) {
        return new CaptureSet(a, b == null || b == a ? null : b);
    }

    private PcapWriter writer1() {
        return first.capture();
    }

    private PcapWriter writer2() {
        return second == null ? null : second.capture();
    }

    /** The path MTU: the smallest of the capturing providers', 4096 when none captures. */
    private int mtu() {
        PcapWriter w1 = writer1();
        PcapWriter w2 = writer2();
        int m = 4096;
        if (w1 != null) {
            m = Math.min(m, w1.mtu);
        }
        if (w2 != null) {
            m = Math.min(m, w2.mtu);
        }
        return m;
    }

    /** Whether any capture file sees this connection now. */
    private boolean capturing() {
        return writer1() != null || writer2() != null;
    }

    private static int packets(int len, int mtu) {
        return len == 0 ? 1 : (len + mtu - 1) / mtu;
    }

    // ================================================================ RC data path

    void send(SimEndpoint x, SimEndpoint y, SendQueue q, int s, boolean solicited, boolean invalidate) {
        int len = q.length[s];
        int mtu = mtu();
        int n = packets(len, mtu);
        if (!capturing()) {
            x.psn = (x.psn + n) & 0xFFFFFF;
            return;
        }
        byte[] inline = (q.flags[s] & RequestFlags.INLINE) != 0 ? q.inline[s] : null;
        for (int i = 0; i < n; i++) {
            boolean last = i == n - 1;
            int opcode = n == 1 ? (invalidate ? SEND_ONLY_INVALIDATE : SEND_ONLY)
                    : i == 0 ? SEND_FIRST : !last ? SEND_MIDDLE : invalidate ? SEND_LAST_INVALIDATE : SEND_LAST;
            int off = i * mtu;
            rc(x, y, opcode, last && solicited, last, x.psn, last && invalidate ? IETH : 0, 0, q.remoteToken[s], 0, 0,
                    q, s, inline, null, 0, off, Math.min(mtu, len - off));
            x.psn = (x.psn + 1) & 0xFFFFFF;
        }
    }

    void write(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        int mtu = mtu();
        int n = packets(len, mtu);
        if (!capturing()) {
            x.psn = (x.psn + n) & 0xFFFFFF;
            return;
        }
        byte[] inline = (q.flags[s] & RequestFlags.INLINE) != 0 ? q.inline[s] : null;
        for (int i = 0; i < n; i++) {
            boolean last = i == n - 1;
            int opcode = n == 1 ? WRITE_ONLY : i == 0 ? WRITE_FIRST : !last ? WRITE_MIDDLE : WRITE_LAST;
            int off = i * mtu;
            rc(x, y, opcode, false, last, x.psn, i == 0 ? RETH : 0, q.remoteOffset[s], q.remoteToken[s], len, 0,
                    q, s, inline, null, 0, off, Math.min(mtu, len - off));
            x.psn = (x.psn + 1) & 0xFFFFFF;
        }
    }

    void readRequest(SimEndpoint x, SimEndpoint y, SendQueue q, int s) {
        int len = q.length[s];
        q.psn[s] = x.psn;
        rc(x, y, READ_REQUEST, false, true, x.psn, RETH, q.remoteOffset[s], q.remoteToken[s], len, 0,
                null, 0, null, null, 0, 0, 0);
        // a read request consumes one PSN per response packet
        x.psn = (x.psn + packets(len, mtu())) & 0xFFFFFF;
    }

    /** The responder {@code y} returns the data of a read to {@code x}. */
    void readResponse(SimEndpoint y, SimEndpoint x, SimRegion src, int srcOffset, int len, int firstPsn) {
        int mtu = mtu();
        int n = packets(len, mtu);
        y.msn = (y.msn + 1) & 0xFFFFFF;
        if (!capturing()) {
            return;
        }
        for (int i = 0; i < n; i++) {
            boolean last = i == n - 1;
            int opcode = n == 1 ? READ_RESPONSE_ONLY : i == 0 ? READ_RESPONSE_FIRST : !last ? READ_RESPONSE_MIDDLE
                    : READ_RESPONSE_LAST;
            int off = i * mtu;
            rc(y, x, opcode, false, false, (firstPsn + i) & 0xFFFFFF, opcode == READ_RESPONSE_MIDDLE ? 0 : AETH, 0, 0, 0,
                    SYNDROME_ACK, null, 0, null, src, srcOffset, off, Math.min(mtu, len - off));
        }
    }

    /** The responder {@code y} acknowledges {@code x}'s last request. */
    void ack(SimEndpoint y, SimEndpoint x) {
        y.msn = (y.msn + 1) & 0xFFFFFF;
        rc(y, x, ACKNOWLEDGE, false, false, (x.psn - 1) & 0xFFFFFF, AETH, 0, 0, 0, SYNDROME_ACK,
                null, 0, null, null, 0, 0, 0);
    }

    /** The responder {@code y} refuses {@code x}'s last request. */
    void nak(SimEndpoint y, SimEndpoint x, int syndrome) {
        rc(y, x, ACKNOWLEDGE, false, false, (x.psn - 1) & 0xFFFFFF, AETH, 0, 0, 0, syndrome,
                null, 0, null, null, 0, 0, 0);
    }

    private void rc(SimEndpoint from, SimEndpoint to, int opcode, boolean se, boolean ackRequest, int psn, int headers,
            long va, int key, int dmaLength, int syndrome, SendQueue q, int s, byte[] inline, SimRegion region,
            int regionOffset, int messageOffset, int n) {
        PcapWriter w1 = writer1();
        PcapWriter w2 = writer2();
        if (w1 != null) {
            rcFrame(w1, from, to, opcode, se, ackRequest, psn, headers, va, key, dmaLength, syndrome, q, s, inline, region,
                    regionOffset, messageOffset, n);
        }
        if (w2 != null) {
            rcFrame(w2, from, to, opcode, se, ackRequest, psn, headers, va, key, dmaLength, syndrome, q, s, inline, region,
                    regionOffset, messageOffset, n);
        }
    }

    private static void rcFrame(PcapWriter w, SimEndpoint from, SimEndpoint to, int opcode, boolean se,
            boolean ackRequest, int psn, int headers, long va, int key, int dmaLength, int syndrome, SendQueue q, int s,
            byte[] inline, SimRegion region, int regionOffset, int messageOffset, int n) {
        synchronized (w) {
            RoceFramer f = w.framer;
            f.begin(from.provider.ipv4, to.provider.ipv4, from.qpn, opcode, se, to.qpn, ackRequest, psn);
            if ((headers & RETH) != 0) {
                f.reth(va, key, dmaLength);
            }
            if ((headers & AETH) != 0) {
                f.aeth(syndrome, from.msn);
            }
            if ((headers & IETH) != 0) {
                f.ieth(key);
            }
            if (n > 0) {
                int at = f.payloadOffset();
                if (q != null) {
                    Copy.extract(q.sgeRegion, q.sgeOffset, q.sgeLength, s * q.maxSge, q.sgeCount[s], inline,
                            messageOffset, f.frame, at, n);
                } else {
                    region.mem.get(regionOffset + messageOffset, f.frame, at, n);
                }
                f.payload(n);
            }
            w.append(f.finish());
        }
    }

    // ================================================================ connection management

    void cmRequest(SimConnection c) {
        if (writer1() == null && writer2() == null) {
            return;
        }
        SimEndpoint a = c.active;
        int dstIp = ipv4(c.target.getAddress().getAddress());
        byte[] m = cmHeader(CM_REQ, ++transactionId);
        int d = 24;
        put32(m, d, a.commId);
        put64(m, d + 8, 0x0000000001060000L | c.target.getPort()); // IBTA A11 IP CM service ID, TCP port space
        put64(m, d + 16, guid(a.provider.ipv4));
        put32(m, d + 28, 0);                                    // local Q_Key (RC)
        put32(m, d + 32, a.qpn << 8 | (c.requestIrd & 0xFF));   // local QPN, responder resources
        put32(m, d + 36, c.requestOrd & 0xFF);                  // local EECN, initiator depth
        put32(m, d + 40, 20 << 3 | 1);                          // remote CM response timeout, RC, end-to-end flow control
        put32(m, d + 44, a.psn << 8 | 20 << 3 | 7);             // starting PSN, local CM response timeout, retry count
        put16(m, d + 48, 0xFFFF);                               // P_Key
        m[d + 50] = (byte) (mtuCode() << 4 | 7);                // path MTU, RNR retry count
        m[d + 51] = (byte) (15 << 4);                           // max CM retries
        put16(m, d + 52, 0xFFFF);                               // primary local/remote LID (RoCE: permissive)
        put16(m, d + 54, 0xFFFF);
        gid(m, d + 56, a.provider.ipv4);
        gid(m, d + 72, dstIp);
        m[d + 93] = 64;                                         // hop limit
        m[d + 94] = 1 << 3;                                     // subnet local
        m[d + 95] = (byte) (18 << 3);                           // local ACK timeout
        // private data: IP CM header (IBTA A11.6), then the consumer's private data (at most 56 bytes)
        int p = d + 140;
        m[p] = 0x00;
        m[p + 1] = 0x40;
        put16(m, p + 2, a.localAddress.getPort());
        put32(m, p + 16, a.provider.ipv4);
        put32(m, p + 32, dstIp);
        System.arraycopy(c.requestPrivateData, 0, m, p + 36, Math.min(56, c.requestPrivateData.length));
        mad(a.provider.ipv4, dstIp, a.qpn);
    }

    void cmReply(SimConnection c) {
        if (writer1() == null && writer2() == null) {
            return;
        }
        SimEndpoint a = c.active;
        SimEndpoint p = c.passive;
        SimConnectionRequest r = c.request;
        byte[] m = cmHeader(CM_REP, transactionId);
        int d = 24;
        put32(m, d, p.commId);
        put32(m, d + 4, a.commId);
        put32(m, d + 12, p.qpn << 8);
        put32(m, d + 20, p.psn << 8);
        m[d + 24] = (byte) r.acceptIrd;
        m[d + 25] = (byte) r.acceptOrd;
        m[d + 26] = (byte) (15 << 3 | 1);                       // target ACK delay, end-to-end flow control
        m[d + 27] = (byte) (7 << 5);                            // RNR retry count
        put64(m, d + 28, guid(p.provider.ipv4));
        System.arraycopy(r.acceptPrivateData, 0, m, d + 36, Math.min(196, r.acceptPrivateData.length));
        mad(p.provider.ipv4, a.provider.ipv4, p.qpn);
    }

    void cmReadyToUse(SimConnection c) {
        if (writer1() == null && writer2() == null) {
            return;
        }
        byte[] m = cmHeader(CM_RTU, ++transactionId);
        put32(m, 24, c.active.commId);
        put32(m, 28, c.passive.commId);
        mad(c.active.provider.ipv4, c.passive.provider.ipv4, c.active.qpn);
    }

    /** The passive side (or, with no listener, its CM) rejects the request. */
    void cmReject(SimConnection c, SimEndpoint passive, int reason, byte[] privateData) {
        if (writer1() == null && writer2() == null) {
            return;
        }
        byte[] m = cmHeader(CM_REJ, transactionId);
        put32(m, 24, passive == null ? 0 : passive.commId);
        put32(m, 28, c.active.commId);
        m[32] = 0;                                              // the REQ was rejected
        put16(m, 34, reason);
        if (privateData != null) {
            System.arraycopy(privateData, 0, m, 24 + 84, Math.min(148, privateData.length));
        }
        mad(ipv4(c.target.getAddress().getAddress()), c.active.provider.ipv4, passive == null ? 1 : passive.qpn);
        flush();
    }

    void cmDisconnect(SimEndpoint from, SimEndpoint to) {
        if (writer1() == null && writer2() == null) {
            return;
        }
        byte[] m = cmHeader(CM_DREQ, ++transactionId);
        put32(m, 24, from.commId);
        put32(m, 28, to.commId);
        put32(m, 32, to.qpn << 8);
        mad(from.provider.ipv4, to.provider.ipv4, from.qpn);
        m = cmHeader(CM_DREP, transactionId);
        put32(m, 24, to.commId);
        put32(m, 28, from.commId);
        mad(to.provider.ipv4, from.provider.ipv4, to.qpn);
        flush();
    }

    void flush() {
        PcapWriter w1 = writer1();
        PcapWriter w2 = writer2();
        if (w1 != null) {
            w1.flush();
        }
        if (w2 != null) {
            w2.flush();
        }
    }

    private byte[] cmHeader(int attribute, long tid) {
        if (mad == null) {
            mad = new byte[256];
        }
        byte[] m = mad;
        Arrays.fill(m, (byte) 0);
        m[0] = 1;    // base version
        m[1] = 0x07; // management class: communication management
        m[2] = 2;    // class version
        m[3] = 0x03; // method: Send
        put64(m, 8, tid);
        put16(m, 16, attribute);
        return m;
    }

    private void mad(int srcIp, int dstIp, int srcQpn) {
        int psn = udPsn++ & 0xFFFFFF;
        PcapWriter w1 = writer1();
        PcapWriter w2 = writer2();
        if (w1 != null) {
            madFrame(w1, srcIp, dstIp, srcQpn, psn);
        }
        if (w2 != null) {
            madFrame(w2, srcIp, dstIp, srcQpn, psn);
        }
    }

    private void madFrame(PcapWriter w, int srcIp, int dstIp, int srcQpn, int psn) {
        synchronized (w) {
            RoceFramer f = w.framer;
            f.begin(srcIp, dstIp, srcQpn, UD_SEND_ONLY, false, 1, false, psn);
            f.deth(GSI_QKEY, 1);
            System.arraycopy(mad, 0, f.frame, f.payloadOffset(), 256);
            f.payload(256);
            w.append(f.finish());
        }
    }

    private int mtuCode() {
        return Integer.numberOfTrailingZeros(mtu()) - 7; // 256 -> 1 ... 4096 -> 5
    }

    private static long guid(int ip) {
        return 0x0200000000000000L | (ip & 0xFFFFFFFFL);
    }

    private static void gid(byte[] m, int off, int ip) {
        m[off + 10] = -1;
        m[off + 11] = -1;
        put32(m, off + 12, ip);
    }

    static int ipv4(byte[] a) {
        return (a[0] & 0xFF) << 24 | (a[1] & 0xFF) << 16 | (a[2] & 0xFF) << 8 | (a[3] & 0xFF);
    }

    private static void put16(byte[] m, int off, int v) {
        m[off] = (byte) (v >>> 8);
        m[off + 1] = (byte) v;
    }

    private static void put32(byte[] m, int off, int v) {
        m[off] = (byte) (v >>> 24);
        m[off + 1] = (byte) (v >>> 16);
        m[off + 2] = (byte) (v >>> 8);
        m[off + 3] = (byte) v;
    }

    private static void put64(byte[] m, int off, long v) {
        put32(m, off, (int) (v >>> 32));
        put32(m, off + 4, (int) v);
    }
}
