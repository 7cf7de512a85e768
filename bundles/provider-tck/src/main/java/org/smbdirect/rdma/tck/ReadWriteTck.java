package org.smbdirect.rdma.tck;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.smbdirect.rdma.Access;
import org.smbdirect.rdma.EndpointState;
import org.smbdirect.rdma.MemoryRegion;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.RequestFlags;
import org.smbdirect.rdma.Sge;

/**
 * RDMA Read and Write: data placement at remote offsets, and enforcement of token, bounds, access
 * rights, deregistration and connection (RFC 5042: a peer reaches only memory registered for
 * remote access on its own connection, within bounds and rights). Also READ_FENCE and ORD.
 */
public abstract class ReadWriteTck extends ProviderTck {
    private static final int TARGET = 4096;

    /** For subclasses. */
    protected ReadWriteTck() {
    }

    /** Why the peer must refuse a remote access. */
    public enum Refusal {
        /** The range runs past the region's end. */
        PAST_END,
        /** The range starts before the region's first byte. */
        BEFORE_START,
        /** The offset is near the top of the 64-bit space (overflow check). */
        HUGE_OFFSET,
        /** A token no region has. */
        UNKNOWN_TOKEN,
        /** The region lacks the access right. */
        MISSING_RIGHT,
        /** The region was deregistered before the access. */
        DEREGISTERED,
        /** The token is valid, but on another connection's endpoint. */
        TOKEN_OF_ANOTHER_CONNECTION
    }

    private void assumeRead() {
        Assumptions.assumeTrue(caps().rdmaRead() && server().capabilities().rdmaRead(),
                "the provider has no RDMA Read; CapabilityTck checks that it says so");
    }

    /**
     * An RDMA Write places the bytes at the remote offset, touches nothing else, and consumes no
     * receive.
     *
     * @throws Exception on failure
     */
    @Test
    public void write_placesBytesAtRemoteOffset_consumesNoReceive() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(TARGET, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion in = l.server().register(64, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion src = l.client().register(256, 0);
        fill(src, 4);
        l.client().endpoint().postWrite("w", new Sge[] {Sge.of(src, 10, 100)}, 1, target.remoteOffset() + 1000,
                target.token(), 0);
        Completion w = l.client().sendCq().next();
        assertEquals(OperationType.WRITE, w.type());
        assertEquals(RdmaStatus.SUCCESS, w.status());
        assertEquals(100, w.bytes());
        l.client().send("s", src, 0, 24, 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        Completion r = l.server().recvCq().next();
        assertEquals("r", r.context());
        assertEquals(24, r.bytes(), "the write consumed no receive: the receive got the send");
        assertBytes(bytes(src, 10, 100), bytes(target, 1000, 100), "written bytes");
        assertBytes(new byte[1000], bytes(target, 0, 1000), "bytes before the range");
        assertBytes(new byte[TARGET - 1100], bytes(target, 1100, TARGET - 1100), "bytes after the range");
    }

    /**
     * An RDMA Read fetches the remote bytes into the local elements, in order.
     *
     * @throws Exception on failure
     */
    @Test
    public void read_fetchesRemoteBytes_intoLocalElements() throws Exception {
        assumeRead();
        int k = Math.min(2, caps().maxSge());
        Link l = link(new LinkSpec().options(b -> b.maxSendSge(k)));
        MemoryRegion source = l.server().register(TARGET, Access.REMOTE_READ);
        fill(source, 8);
        MemoryRegion dst = l.client().register(512, Access.LOCAL_WRITE);
        Sge[] sgl = k == 2 ? new Sge[] {Sge.of(dst, 0, 50), Sge.of(dst, 300, 70)} : new Sge[] {Sge.of(dst, 0, 120)};
        l.client().endpoint().postRead("rd", sgl, k, source.remoteOffset() + 2000, source.token(), 0);
        Completion c = l.client().sendCq().next();
        assertEquals(OperationType.READ, c.type());
        assertEquals(RdmaStatus.SUCCESS, c.status());
        assertEquals(120, c.bytes());
        byte[] expected = bytes(source, 2000, 120);
        byte[] got = new byte[120];
        if (k == 2) {
            System.arraycopy(bytes(dst, 0, 50), 0, got, 0, 50);
            System.arraycopy(bytes(dst, 300, 70), 0, got, 50, 70);
        } else {
            got = bytes(dst, 0, 120);
        }
        assertBytes(expected, got, "read bytes");
    }

    /**
     * An RDMA Write the peer must refuse completes REMOTE_ACCESS_ERROR, ends the connection, and
     * changes no byte of the peer's memory.
     *
     * @param refusal why the peer refuses
     * @throws Exception on failure
     */
    @ParameterizedTest
    @EnumSource(Refusal.class)
    public void write_refused_remoteAccessError_endsConnection_memoryUntouched(Refusal refusal) throws Exception {
        refused(refusal, false);
    }

    /**
     * An RDMA Read the peer must refuse completes REMOTE_ACCESS_ERROR, ends the connection, and
     * places no byte locally.
     *
     * @param refusal why the peer refuses
     * @throws Exception on failure
     */
    @ParameterizedTest
    @EnumSource(Refusal.class)
    public void read_refused_remoteAccessError_endsConnection_nothingPlaced(Refusal refusal) throws Exception {
        assumeRead();
        refused(refusal, true);
    }

    private void refused(Refusal refusal, boolean read) throws Exception {
        int right = read ? Access.REMOTE_READ : Access.LOCAL_WRITE | Access.REMOTE_WRITE;
        Link l = link();
        Link other = refusal == Refusal.TOKEN_OF_ANOTHER_CONNECTION ? link() : null;
        MemoryRegion target = (other != null ? other.server() : l.server()).register(TARGET, right);
        if (read) {
            fill(target, 9);
        }
        byte[] before = bytes(target, 0, TARGET);
        long offset = target.remoteOffset() + 16;
        int token = target.token();
        int len = 64;
        switch (refusal) {
            case PAST_END:
                offset = target.remoteOffset() + TARGET - 32;
                break;
            case BEFORE_START:
                offset = target.remoteOffset() - 1;
                break;
            case HUGE_OFFSET:
                offset = Long.MAX_VALUE - 16;
                break;
            case UNKNOWN_TOKEN:
                token = target.token() ^ 0x5A5A5A5A;
                break;
            case MISSING_RIGHT:
                int wrong = read ? Access.LOCAL_WRITE | Access.REMOTE_WRITE
                        : (server().capabilities().rdmaRead() ? Access.REMOTE_READ : 0);
                MemoryRegion noRight = l.server().register(TARGET, wrong);
                if (read) {
                    fill(noRight, 9);
                }
                target = noRight;
                before = bytes(target, 0, TARGET);
                offset = target.remoteOffset() + 16;
                token = target.token();
                break;
            case DEREGISTERED:
                l.server().endpoint().deregister(target);
                break;
            default:
                break;
        }
        MemoryRegion local = l.client().register(len, Access.LOCAL_WRITE);
        if (!read) {
            fill(local, 10);
        }
        Sge[] sgl = {Sge.of(local, 0, len)};
        if (read) {
            l.client().endpoint().postRead("op", sgl, 1, offset, token, 0);
        } else {
            l.client().endpoint().postWrite("op", sgl, 1, offset, token, 0);
        }
        Completion c = l.client().sendCq().next();
        assertEquals("op", c.context());
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, c.status(), refusal + " must be refused");
        assertEquals(EventRecorder.Kind.ERROR, l.client().events().awaitTerminal().kind());
        l.server().events().awaitTerminal();
        assertEquals(EndpointState.DISCONNECTED, l.client().endpoint().state());
        if (read) {
            assertBytes(new byte[len], bytes(local, 0, len), "nothing placed by a refused read");
        } else {
            assertBytes(before, bytes(target, 0, TARGET), "target memory untouched by a refused write");
        }
        if (other != null) {
            assertEquals(List.of(EventRecorder.Kind.ESTABLISHED), other.client().events().kinds(),
                    "the other connection is unaffected");
            assertRoundTrip(other);
        }
    }

    /**
     * READ_FENCE: a request posted after an RDMA Read with the fence sees the read's data.
     *
     * @throws Exception on failure
     */
    @Test
    public void readFence_laterSendCarriesTheReadData() throws Exception {
        assumeRead();
        Link l = link();
        MemoryRegion source = l.server().register(256, Access.REMOTE_READ);
        fill(source, 12);
        MemoryRegion in = l.server().register(256, Access.LOCAL_WRITE);
        l.server().postReceive("r", in);
        MemoryRegion staging = l.client().register(256, Access.LOCAL_WRITE);
        // DEFER lets the provider hand both requests over together, so the fence is what orders them
        l.client().endpoint().postRead("rd", new Sge[] {Sge.of(staging)}, 1, source.remoteOffset(), source.token(),
                RequestFlags.DEFER);
        l.client().send("fenced", staging, 0, 256, RequestFlags.READ_FENCE);
        List<Completion> c = l.client().sendCq().poll(2);
        assertEquals("rd", c.get(0).context());
        assertEquals("fenced", c.get(1).context());
        assertEquals(RdmaStatus.SUCCESS, c.get(1).status());
        assertEquals(256, l.server().recvCq().next().bytes());
        assertBytes(bytes(source, 0, 256), bytes(in, 0, 256), "the fenced send carries the bytes read");
    }

    /**
     * READ_FENCE: an RDMA Write posted after an RDMA Read with the fence writes the read's data.
     *
     * @throws Exception on failure
     */
    @Test
    public void readFence_laterWriteCarriesTheReadData() throws Exception {
        assumeRead();
        Link l = link();
        MemoryRegion source = l.server().register(128, Access.REMOTE_READ);
        fill(source, 13);
        MemoryRegion sink = l.server().register(128, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion staging = l.client().register(128, Access.LOCAL_WRITE);
        Sge[] all = {Sge.of(staging)};
        l.client().endpoint().postRead("rd", all, 1, source.remoteOffset(), source.token(), RequestFlags.DEFER);
        l.client().endpoint().postWrite("wr", all, 1, sink.remoteOffset(), sink.token(), RequestFlags.READ_FENCE);
        List<Completion> c = l.client().sendCq().poll(2);
        assertEquals(RdmaStatus.SUCCESS, c.get(1).status());
        assertBytes(bytes(source, 0, 128), bytes(sink, 0, 128), "the fenced write carries the bytes read");
    }

    /**
     * More RDMA Reads than the ORD wait instead of failing; all complete, in order, with their data.
     *
     * @throws Exception on failure
     */
    @Test
    public void readsBeyondOrd_wait_allCompleteInOrder() throws Exception {
        assumeRead();
        Link l = link(new LinkSpec().connectDepths(1, 1).acceptDepths(1, 1)
                .options(b -> b.sendQueueDepth(16)));
        assertEquals(1, l.client().endpoint().ord());
        MemoryRegion source = l.server().register(TARGET, Access.REMOTE_READ);
        fill(source, 14);
        MemoryRegion dst = l.client().register(TARGET, Access.LOCAL_WRITE);
        int n = 8;
        for (int i = 0; i < n; i++) {
            l.client().endpoint().postRead("rd" + i, new Sge[] {Sge.of(dst, i * 512, 512)}, 1,
                    source.remoteOffset() + (n - 1 - i) * 512L, source.token(), 0);
        }
        List<Completion> c = l.client().sendCq().poll(n);
        for (int i = 0; i < n; i++) {
            assertEquals("rd" + i, c.get(i).context());
            assertEquals(RdmaStatus.SUCCESS, c.get(i).status());
            assertBytes(bytes(source, (n - 1 - i) * 512, 512), bytes(dst, i * 512, 512), "read " + i);
        }
    }

    /**
     * An endpoint whose ORD is 0 cannot start an RDMA Read: INVALID_STATE at the call.
     *
     * @throws Exception on failure
     */
    @Test
    public void read_withOrdZero_invalidState() throws Exception {
        assumeRead();
        Link l = link(new LinkSpec().acceptDepths(Math.min(1, server().capabilities().maxIrd()), 0));
        assertEquals(0, l.server().endpoint().ord());
        MemoryRegion source = l.client().register(64, Access.REMOTE_READ);
        MemoryRegion dst = l.server().register(64, Access.LOCAL_WRITE);
        assertFails(RdmaStatus.INVALID_STATE, () -> l.server().endpoint().postRead("r", new Sge[] {Sge.of(dst)}, 1,
                source.remoteOffset(), source.token(), 0));
        assertEquals(EndpointState.CONNECTED, l.server().endpoint().state());
        assertRoundTrip(l);
    }

    /**
     * A write source needs no access rights (local read is always granted); a read target needs
     * LOCAL_WRITE.
     *
     * @throws Exception on failure
     */
    @Test
    public void localRights_writeSourceNeedsNone_readTargetNeedsLocalWrite() throws Exception {
        Link l = link();
        MemoryRegion target = l.server().register(64, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
        MemoryRegion src = l.client().register(64, 0);
        fill(src, 15);
        l.client().endpoint().postWrite("w", new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(), 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        assertBytes(bytes(src, 0, 64), bytes(target, 0, 64), "written");
        if (caps().rdmaRead()) {
            assertFails(RdmaStatus.LOCAL_PROTECTION_ERROR, () -> l.client().endpoint().postRead("r",
                    new Sge[] {Sge.of(src)}, 1, target.remoteOffset(), target.token(), 0));
        }
        assertEquals(EndpointState.CONNECTED, l.client().endpoint().state());
    }

    /**
     * A region registered with DEFER, whose token the peer learns from a send posted after it, is
     * usable by the peer's RDMA Write as any other: the bytes land, and the send that carried the
     * token arrived intact.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_deferred_tokenSentAfterwards_peerWritesIntoIt() throws Exception {
        Link l = link();
        MemoryRegion in = l.client().register(64, Access.LOCAL_WRITE);
        l.client().postReceive("r", in);
        MemoryRegion target = l.server().endpoint().register(java.nio.ByteBuffer.allocateDirect(TARGET),
                Access.LOCAL_WRITE | Access.REMOTE_WRITE, RequestFlags.DEFER);
        MemoryRegion token = l.server().register(16, 0);
        token.buffer().putInt(0, target.token()).putLong(4, target.remoteOffset());
        l.server().send("token", token, 0, 12, 0);
        assertEquals(RdmaStatus.SUCCESS, l.server().sendCq().next().status());
        assertEquals(RdmaStatus.SUCCESS, l.client().recvCq().next().status());
        int peerToken = in.buffer().getInt(0);
        long peerOffset = in.buffer().getLong(4);
        assertEquals(target.token(), peerToken);
        MemoryRegion src = l.client().register(256, 0);
        fill(src, 21);
        l.client().endpoint().postWrite("w", new Sge[] {Sge.of(src)}, 1, peerOffset + 100, peerToken, 0);
        assertEquals(RdmaStatus.SUCCESS, l.client().sendCq().next().status());
        assertBytes(bytes(src, 0, 256), bytes(target, 100, 256), "written through the deferred registration");
        assertEquals(EndpointState.CONNECTED, l.server().endpoint().state());
    }

    /**
     * A region registered with DEFER and deregistered before any request was posted leaves the
     * connection whole: messages still flow both ways.
     *
     * @throws Exception on failure
     */
    @Test
    public void register_deferred_deregisteredBeforeAnyRequest_connectionCarriesOn() throws Exception {
        Link l = link();
        MemoryRegion r = l.server().endpoint().register(java.nio.ByteBuffer.allocateDirect(TARGET),
                Access.LOCAL_WRITE | Access.REMOTE_WRITE, RequestFlags.DEFER);
        l.server().endpoint().deregister(r);
        assertFalse(r.isValid());
        assertRoundTrip(l);
        assertEquals(EndpointState.CONNECTED, l.server().endpoint().state());
    }
}
