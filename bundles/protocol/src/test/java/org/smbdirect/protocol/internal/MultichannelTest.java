package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaProvider;
import org.smbdirect.transport.RdmaInterface;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectException;
import org.smbdirect.transport.SmbDirectListener;

/**
 * What SMB3 multichannel needs of the transport: the RDMA interfaces with their transport and link
 * speed, and a connection (a channel) from a chosen interface.
 */
class MultichannelTest {
    private Fixture fx;
    private RdmaProvider fast;
    private RdmaProvider slow;
    private RdmaProvider serverSide;

    @BeforeEach
    void setUp() throws Exception {
        fx = new Fixture();
        fast = fx.provider(Map.of("linkSpeedMbps", 100000));
        slow = fx.provider(Map.of("linkSpeedMbps", 25000, "transport", "iWARP"));
        serverSide = fx.provider();
    }

    @AfterEach
    void tearDown() {
        fx.close();
    }

    @Test
    void interfaces_listEachProviderWithTransportAndLinkSpeed_inOrderOfPreference() {
        SmbDirectTransport t = new SmbDirectTransport(SmbDirectConfig.defaults(), fx.clock, false);
        try {
            assertEquals(List.of(), t.interfaces());
            t.addProvider(fast, 10, 1);
            t.addProvider(slow, 0, 2);
            List<RdmaInterface> i = t.interfaces();
            assertEquals(2, i.size());
            assertEquals("sim/" + fast.name(), i.get(0).provider());
            assertEquals(fast.addresses(), i.get(0).addresses());
            assertEquals("RoCE", i.get(0).transport());
            assertEquals(100_000_000_000L, i.get(0).linkSpeed());
            assertTrue(i.get(0).preferred());
            assertTrue(i.get(0).rdmaRead());
            assertEquals("iWARP", i.get(1).transport());
            assertEquals(25_000_000_000L, i.get(1).linkSpeed());
            assertFalse(i.get(1).preferred());
        } finally {
            t.close();
        }
    }

    /** MS-SMBD 3.1.4.1 from a chosen interface: one channel per interface, each on its provider. */
    @Test
    void connect_fromAChosenAddress_usesThatInterface() throws Exception {
        SmbDirectTransport server = fx.transport(SmbDirectConfig.defaults(), serverSide);
        SmbDirectTransport client = new SmbDirectTransport(SmbDirectConfig.defaults(), fx.clock, false);
        try {
            client.addProvider(fast, 10, 1);
            client.addProvider(slow, 0, 2);
            Recorder at = new Recorder();
            SmbDirectListener l = server.listen(fx.anyAddress(serverSide), at);
            for (RdmaProvider via : new RdmaProvider[] {slow, fast}) {
                InetAddress local = via.addresses().get(0);
                SmbDirectConnection c = Fixture.get(client.connect(l.localAddress(), local, new Recorder())
                        .toCompletableFuture());
                assertEquals(local, c.localAddress().getAddress());
                assertEquals("sim/" + via.name(), c.parameters().provider());
                SmbDirectConnection s = at.connection();
                assertEquals(local, s.remoteAddress().getAddress());
                c.send(ByteBuffer.wrap(new byte[] {7}));
                assertEquals(7, at.message().data[0]);
                c.close();
            }
            ExecutionException e = assertThrows(ExecutionException.class, () -> Fixture.get(client.connect(
                    l.localAddress(), InetAddress.getByName("192.0.2.1"), new Recorder()).toCompletableFuture()));
            assertInstanceOf(SmbDirectException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("192.0.2.1"), e.getCause().getMessage());
        } finally {
            client.close();
        }
    }
}
