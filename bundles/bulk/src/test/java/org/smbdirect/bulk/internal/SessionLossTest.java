package org.smbdirect.bulk.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;

import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.smbdirect.bulk.BulkConfig;
import org.smbdirect.bulk.internal.BulkFixture.Pair;
import org.smbdirect.bulk.internal.ControlMessage.Type;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.ConnectionLostException;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/** The connection ends in the middle of transfers: pending sends fail, registrations are released. */
class SessionLossTest {
    @AutoClose
    private final BulkFixture fx = new BulkFixture();

    /**
     * The receiver disconnects while three transfers move (their memory registered for its RDMA
     * Read), more wait, and an inline send waits behind them.
     */
    @Test
    void peerDisconnects_everyPendingSendFails_registrationsReleased() throws Exception {
        try (RawBulkPeer peer = RawBulkPeer.listening(fx, BulkFixture.side(), BulkFixture.side().bulk(
                BulkConfig.builder().inlineThreshold(100).maxInFlight(3).build()))) {
            Session s = peer.session;
            List<CompletionStage<Void>> sends = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                sends.add(s.send(BulkFixture.data(10_000, i, i % 2 == 0)));
            }
            sends.add(s.send(ByteBuffer.allocate(1)));
            for (int i = 0; i < 3; i++) {
                peer.expect(Type.READ_REQUEST);
            }
            assertEquals(3, s.connection().statistics().registrationsLive());
            peer.raw.provider.close(); // the peer's adapter goes away
            ConnectionLoss loss = peer.received.loss();
            for (CompletionStage<Void> f : sends) {
                ConnectionLostException e = assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(f));
                assertSame(loss, e.loss());
            }
            assertEquals(TerminationReason.PEER_DISCONNECTED, loss.reason());
            assertEquals(0, s.connection().statistics().registrationsLive());
            assertEquals(0, s.statistics().transfersInFlight());
            assertFalse(s.connection().isOpen());
            assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(s.send(ByteBuffer.allocate(1))));
            assertTrue(peer.bulk.bulk.sessions().isEmpty());
        }
    }

    /**
     * Bulk to bulk, the connection reset by the fabric while the receiver is reading (READ) or the
     * sender is writing into the receiver's registered buffer (WRITE): 64 KiB RDMA operations, the
     * 30th operation of the connection resets it; a second transfer waits its turn.
     */
    @ParameterizedTest(name = "rdmaRead={0}")
    @ValueSource(booleans = {true, false})
    void resetDuringRdma_bothSidesFailAndRelease(boolean rdmaRead) throws Exception {
        SmbDirectConfig small = SmbDirectConfig.builder().maxReadWriteSize(64 * 1024).build();
        BulkFixture.Side server = BulkFixture.side().sim("rdmaRead", rdmaRead).smb(small);
        // The connection's operations are counted on the connecting side's provider.
        BulkFixture.Side client = BulkFixture.side().sim("rdmaRead", rdmaRead).smb(small)
                .sim("faults.disconnectAfterOperations", 30).bulk(BulkConfig.builder().maxInFlight(1).build());
        Pair p = fx.pair(server, client);
        CompletionStage<Void> big = p.client.send(BulkFixture.data(4 * BulkFixture.MIB, 1, true));
        CompletionStage<Void> after = p.client.send(BulkFixture.data(BulkFixture.MIB, 2, true)); // waits its turn
        assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(big));
        assertInstanceOf(ConnectionLostException.class, BulkFixture.failure(after));
        ConnectionLoss atClient = p.atClient.loss();
        ConnectionLoss atServer = p.atServer.loss();
        assertTrue(atClient.detail().contains("injected fault"), atClient.message() + " / server: " + atServer.message() + " / " + atServer.reason());
        assertTrue(atServer.reason() == TerminationReason.TRANSPORT_ERROR
                || atServer.reason() == TerminationReason.PEER_DISCONNECTED, atServer.message());
        long moved = rdmaRead ? p.server.connection().statistics().rdmaReads()
                : p.client.connection().statistics().rdmaWrites();
        assertTrue(moved > 0 && moved < 64, "the reset came in the middle of the transfer: " + moved + " operations");
        assertTrue(p.atServer.data.isEmpty(), "nothing delivered");
        p.assertNothingRegistered();
    }
}
