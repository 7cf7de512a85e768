package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.smbdirect.smbj.RdmaChannelStatistics;
import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.smbj.SmbjTransport;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.SmbDirectConnection;

import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2FileId;
import com.hierynomus.mssmb2.SMB2PacketFactory;
import com.hierynomus.mssmb2.messages.SMB2Echo;
import com.hierynomus.mssmb2.messages.SMB2ReadRequest;
import com.hierynomus.mssmb2.messages.SMB2ReadResponse;
import com.hierynomus.mssmb2.messages.SMB2WriteRequest;
import com.hierynomus.mssmb2.messages.SMB2WriteResponse;
import com.hierynomus.protocol.transport.PacketFactory;
import com.hierynomus.protocol.transport.PacketHandlers;
import com.hierynomus.protocol.transport.PacketReceiver;
import com.hierynomus.protocol.transport.TransportException;
import com.hierynomus.protocol.transport.TransportLayer;
import com.hierynomus.smb.SMBPacket;
import com.hierynomus.smb.SMBPacketData;
import com.hierynomus.smbj.SmbConfig;
import com.hierynomus.smbj.connection.Connection;
import com.hierynomus.smbj.connection.SMBPacketSerializer;
import com.hierynomus.smbj.io.ArrayByteChunkProvider;

/**
 * smbj over the engine on the simulated fabric, against {@link FakeSmb2Server}: smbj's own READ
 * and WRITE requests, sent as smbj sends them, take the RDMA channel at the threshold and travel
 * inline below it; the server finds the channel fields where MS-SMB2 2.2.19 and 2.2.21 put them
 * and moves the data by RDMA; registrations end with the response; smbj's negotiated sizes follow
 * the SMB Direct connection's.
 */
class RdmaChannelTest {
    private static final int MIB = 1 << 20;
    private static final SMB2FileId FILE = new SMB2FileId(new byte[] {1, 2, 3, 4, 5, 6, 7, 8},
            new byte[] {9, 10, 11, 12, 13, 14, 15, 16});

    private SmbjOverSim sim;
    private FakeSmb2Server server;
    private SmbjTransport smbj;
    private Connection connection;

    private void start(SMB2Dialect dialect, SmbjOptions options, SmbDirectConfig config) throws Exception {
        start(new SmbjOverSim(dialect, options, config));
    }

    /** On a simulated fabric without send with invalidate, as soft-iWARP's verbs provider has none. */
    private void startWithoutRemoteInvalidation() throws Exception {
        start(new SmbjOverSim(SMB2Dialect.SMB_3_0_2, SmbjOptions.defaults(), SmbDirectConfig.defaults(), false));
    }

    private void start(SmbjOverSim s) throws Exception {
        sim = s;
        server = sim.server;
        smbj = sim.smbj;
        connection = sim.connect();
    }

    private void start(SMB2Dialect dialect) throws Exception {
        start(dialect, SmbjOptions.defaults(), SmbDirectConfig.defaults());
    }

    @AfterEach
    void stop() throws Exception {
        if (sim != null) {
            sim.close();
        }
    }

    private SmbDirectConnection direct() {
        return smbj.connectionOf(connection).orElseThrow();
    }

    private int write(byte[] data, long offset) throws Exception {
        SMB2WriteRequest w = new SMB2WriteRequest(connection.getNegotiatedProtocol().getDialect(), FILE, 0, 0,
                new ArrayByteChunkProvider(data, offset), connection.getNegotiatedProtocol().getMaxWriteSize());
        SMB2WriteResponse r = connection.<SMB2WriteResponse>send(w).get(30, TimeUnit.SECONDS);
        assertEquals(0, r.getHeader().getStatusCode(), "WRITE status");
        return r.getBytesWritten();
    }

    private SMB2ReadResponse read(long offset, int length) throws Exception {
        SMB2ReadRequest r = new SMB2ReadRequest(connection.getNegotiatedProtocol().getDialect(), FILE, 0, 0, offset, length);
        return connection.<SMB2ReadResponse>send(r).get(30, TimeUnit.SECONDS);
    }

    private ByteBuffer lastRequest() {
        List<byte[]> all = server.requests;
        return ByteBuffer.wrap(all.get(all.size() - 1)).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void writeAndRead_atThreshold_throughRdmaChannelWithRemoteInvalidation_smb302() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(4096, 1);
        assertEquals(4096, write(data, 0));
        ByteBuffer w = lastRequest();
        // MS-SMB2 2.2.21: Length and DataOffset 0, Channel RDMA_V1_INVALIDATE, RemainingBytes the data
        assertEquals(0, w.getShort(66), "DataOffset");
        assertEquals(0, w.getInt(68), "Length");
        assertEquals(2, w.getInt(96), "Channel");
        assertEquals(4096, w.getInt(100), "RemainingBytes");
        assertEquals(112, w.getShort(104), "WriteChannelInfoOffset");
        assertEquals(16, w.getShort(106), "WriteChannelInfoLength");
        assertEquals(112 + 16, w.capacity(), "nothing inline");
        assertArrayEquals(data, server.content, "the server RDMA-read the data");

        SMB2ReadResponse r = read(0, 4096);
        ByteBuffer q = lastRequest();
        // MS-SMB2 2.2.19: Channel, ReadChannelInfoOffset/Length, the descriptor as Buffer
        assertEquals(4096, q.getInt(68), "Length");
        assertEquals(2, q.getInt(100), "Channel");
        assertEquals(112, q.getShort(108), "ReadChannelInfoOffset");
        assertEquals(16, q.getShort(110), "ReadChannelInfoLength");
        assertEquals(4096, q.getInt(112 + 12), "the descriptor's length");
        assertArrayEquals(data, r.getData(), "smbj got what the server RDMA-wrote");
        assertEquals(4096, r.getDataLength());

        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(1, s.rdmaWrites());
        assertEquals(1, s.rdmaReads());
        assertEquals(4096, s.rdmaWriteBytes());
        assertEquals(4096, s.rdmaReadBytes());
        assertEquals(2, s.remoteInvalidations(), "the server invalidated both with its response");
        assertEquals(0, s.localInvalidations());
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
    }

    @Test
    void belowThreshold_travelsInline() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(4095, 2);
        assertEquals(4095, write(data, 0));
        ByteBuffer w = lastRequest();
        assertEquals(0, w.getInt(96), "Channel NONE");
        assertEquals(4095, w.getInt(68), "Length");
        assertEquals(112, w.getShort(66), "DataOffset");
        SMB2ReadResponse r = read(0, 4095);
        assertEquals(0, lastRequest().getInt(100), "READ Channel NONE");
        assertArrayEquals(data, r.getData());
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(0, s.rdmaWrites() + s.rdmaReads());
        assertEquals(1, s.inlineWrites());
        assertEquals(1, s.inlineReads());
        assertEquals(4095, s.inlineWriteBytes());
    }

    @Test
    void smb30_usesRdmaV1_andInvalidatesLocally() throws Exception {
        start(SMB2Dialect.SMB_3_0);
        byte[] data = random(MIB + 1, 3);
        int written = 0;
        while (written < data.length) {
            written += write(java.util.Arrays.copyOfRange(data, written, data.length), written);
            assertEquals(1, lastRequest().getInt(96), "SMB 3.0 has only SMB2_CHANNEL_RDMA_V1");
        }
        assertArrayEquals(data, server.content);
        byte[] back = new byte[data.length];
        int got = 0;
        while (got < back.length) {
            byte[] part = read(got, back.length - got).getData();
            System.arraycopy(part, 0, back, got, part.length);
            got += part.length;
        }
        assertArrayEquals(data, back);
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(0, s.remoteInvalidations());
        assertEquals(s.rdmaReads() + s.rdmaWrites(), s.localInvalidations(), "each registration invalidated here");
        assertEquals(0, direct().statistics().registrationsLive());
    }

    @Test
    void negotiatedSizes_followTheSmbDirectConnection() throws Exception {
        start(SMB2Dialect.SMB_3_0_2, SmbjOptions.defaults(), SmbDirectConfig.builder().maxReadWriteSize(2 * MIB).build());
        var p = direct().parameters();
        var n = connection.getNegotiatedProtocol();
        assertEquals(2 * MIB, p.maxReadWriteSize());
        assertEquals(2 * MIB, n.getMaxReadSize(), "READ through the channel: MaxReadWriteSize, not the server's 8 MiB");
        assertEquals(2 * MIB, n.getMaxWriteSize());
        assertTrue(n.getMaxTransactSize() <= Math.min(p.maxFragmentedSendSize(), p.maxFragmentedRecvSize()) - 256,
                "transact fits one message each way: " + n.getMaxTransactSize());
    }

    @Test
    void withoutRdmaChannel_sizesAreInline_andLargeWritesFitOneMessage() throws Exception {
        start(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().rdmaChannel(false).build(), SmbDirectConfig.defaults());
        var p = direct().parameters();
        int max = connection.getNegotiatedProtocol().getMaxWriteSize();
        assertTrue(max + 112 <= p.maxFragmentedSendSize(), max + " bytes of WRITE data fit MaxFragmentedSendSize");
        assertTrue(connection.getNegotiatedProtocol().getMaxReadSize() + 80 <= p.maxFragmentedRecvSize());
        assertEquals(0, max % 65536, "whole credits: smbj sends whole 64 KiB chunks per credit");
        // as smbj's File.write does: requests of up to MaxWriteSize from one chunk provider
        byte[] data = random(2 * max + 1, 4);
        ArrayByteChunkProvider chunks = new ArrayByteChunkProvider(data, 0);
        while (chunks.isAvailable()) {
            SMB2WriteRequest w = new SMB2WriteRequest(SMB2Dialect.SMB_3_0_2, FILE, 0, 0, chunks, max);
            assertEquals(0, connection.<SMB2WriteResponse>send(w).get(30, TimeUnit.SECONDS).getHeader().getStatusCode());
            assertEquals(0, lastRequest().getInt(96), "inline");
        }
        assertArrayEquals(data, server.content, "every byte arrived, once, in order");
        assertArrayEquals(java.util.Arrays.copyOf(data, max), read(0, max).getData());
        assertTrue(direct().statistics().fragmentsSent() > direct().statistics().messagesSent(), "fragmented");
        assertEquals(0, smbj.statistics().rdmaWrites() + smbj.statistics().rdmaReads());
    }

    @Test
    void inlineRequestTooLargeForOneMessage_isRefusedClearly() throws Exception {
        start(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().rdmaChannel(false).build(), SmbDirectConfig.defaults());
        int tooLarge = direct().parameters().maxFragmentedSendSize();
        SMB2WriteRequest w = new SMB2WriteRequest(SMB2Dialect.SMB_3_0_2, FILE, 0, 0,
                new ArrayByteChunkProvider(new byte[tooLarge], 0), tooLarge);
        TransportException e = assertThrows(TransportException.class, () -> connection.send(w));
        assertTrue(e.getMessage().contains("SMB Direct carries at most"), e.getMessage());
        assertEquals(1, server.requests.size(), "nothing but NEGOTIATE reached the server");
    }

    @Test
    void errorResponse_endsTheRegistration() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        server.mode = FakeSmb2Server.Mode.FAIL_END_OF_FILE;
        SMB2ReadResponse r = read(0, 64 * 1024);
        assertEquals(FakeSmb2Server.STATUS_END_OF_FILE & 0xffffffffL, r.getHeader().getStatusCode());
        assertEquals(2, lastRequest().getInt(100), "it went through the channel");
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
        assertEquals(1, smbj.statistics().localInvalidations(), "an error response invalidates nothing remotely");
    }

    /**
     * MS-SMB2 3.2.5.1.9: two READ responses compounded into one message, neither invalidating:
     * each READ gets its own data, and both registrations end (locally).
     */
    @Test
    void compoundedReadResponses_eachReadGetsItsData() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(128 * 1024, 9);
        server.content = data;
        server.compound = true;
        SMB2Dialect d = connection.getNegotiatedProtocol().getDialect();
        java.util.concurrent.Future<SMB2ReadResponse> first = connection.send(new SMB2ReadRequest(d, FILE, 0, 0, 0, 65536));
        java.util.concurrent.Future<SMB2ReadResponse> second = connection.send(
                new SMB2ReadRequest(d, FILE, 0, 0, 65536, 65536));
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 0, 65536), first.get(30, TimeUnit.SECONDS).getData());
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 65536, 131072), second.get(30, TimeUnit.SECONDS).getData());
        assertEquals(2, smbj.statistics().rdmaReads(), "both through the channel");
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
        assertEquals(2, smbj.statistics().localInvalidations(), "the server invalidated neither");
    }

    /**
     * The two parts of a split READ compounded into one message: the transport cannot merge them
     * inside a chain, so the READ fails saying so and the connection ends, leaving nothing
     * registered, where smbj would otherwise have been handed the parts as they are.
     */
    @Test
    void compoundedPartsOfASplitRead_failClearly_andLeaveNothingRegistered() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        server.content = random(8 * MIB, 10);
        server.compound = true;
        SmbDirectConnection c = direct();
        ExecutionException e = assertThrows(ExecutionException.class, () -> read(0, 8 * MIB));
        assertTrue(String.valueOf(e.getCause()).contains("cannot be merged"), String.valueOf(e.getCause()));
        assertFalse(connection.isConnected());
        SmbjOverSim.waitUntil(() -> !c.isOpen(), "the SMB Direct connection ends");
        assertEquals(0, c.statistics().registrationsLive(), "no registration left");
    }

    @Test
    void serverGoneMidRequest_failsTheRequest_andLeavesNothingRegistered() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        SmbDirectConnection c = direct();
        server.mode = FakeSmb2Server.Mode.DISCONNECT;
        ExecutionException e = assertThrows(ExecutionException.class, () -> read(0, MIB));
        assertTrue(String.valueOf(e.getCause()).contains("was lost"), String.valueOf(e.getCause()));
        assertFalse(c.isOpen());
        assertEquals(0, c.statistics().registrationsLive());
        assertNotEquals(0, smbj.statistics().rdmaReads());
    }
    /** The READ requests the server got, after the first {@code from}. */
    private List<ByteBuffer> readsSince(int from) {
        return since(from, FakeSmb2Server.SMB2_READ);
    }

    /** The requests of that command the server got, after the first {@code from}. */
    private List<ByteBuffer> since(int from, int command) {
        List<ByteBuffer> found = new java.util.ArrayList<>();
        for (byte[] m : server.requests.subList(from, server.requests.size())) {
            ByteBuffer b = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
            if (b.getShort(12) == command) {
                found.add(b);
            }
        }
        return found;
    }

    /**
     * smbj may send its next request before it hears of a loss (the next WRITE of a file, as ksmbd
     * stops on iWARP): that send fails saying the connection was lost, and why, as a request in
     * flight does.
     */
    @Test
    void sendAfterTheServerDisconnected_failsSayingTheConnectionWasLost() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        TransportLayer<SMBPacket<?, ?>> layer = bareTransportLayer(errors);
        server.mode = FakeSmb2Server.Mode.DISCONNECT;
        layer.write(new SMB2Echo(SMB2Dialect.SMB_3_0_2)); // the server closes at this request
        SmbjOverSim.waitUntil(() -> !layer.isConnected(), "the transport sees the server's disconnect");
        TransportException e = assertThrows(TransportException.class, () -> layer.write(new SMB2Echo(SMB2Dialect.SMB_3_0_2)));
        assertTrue(e.getMessage().startsWith("the SMB Direct connection to " + server.address() + " was lost: "
                + "the peer disconnected"), e.getMessage());
        assertTrue(e.getMessage().endsWith("was not sent"), e.getMessage());
        assertEquals(1, errors.size(), "the receiver heard of the loss once: " + errors);
    }

    @Test
    void sendAfterDisconnect_failsSayingTheConnectionIsClosed() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        TransportLayer<SMBPacket<?, ?>> layer = bareTransportLayer(errors);
        layer.disconnect();
        TransportException e = assertThrows(TransportException.class, () -> layer.write(new SMB2Echo(SMB2Dialect.SMB_3_0_2)));
        assertTrue(e.getMessage().startsWith("the SMB Direct connection is closed: cannot send"), e.getMessage());
        assertEquals(List.of(), errors, "a disconnect asked for is no error");
    }

    /** The transport without smbj's {@code Connection} on top, connected to the server: errors go to {@code errors}. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private TransportLayer<SMBPacket<?, ?>> bareTransportLayer(List<Throwable> errors) throws Exception {
        PacketHandlers<SMBPacketData<?>, SMBPacket<?, ?>> handlers = new PacketHandlers<>(new SMBPacketSerializer(),
                new PacketReceiver<SMBPacketData<?>>() {
                    @Override
                    public void handle(SMBPacketData<?> packet) {
                    }

                    @Override
                    public void handleError(Throwable t) {
                        errors.add(t);
                    }
                }, (PacketFactory) new SMB2PacketFactory());
        TransportLayer<SMBPacket<?, ?>> layer = smbj.createTransportLayer(handlers, SmbConfig.createDefaultConfig());
        layer.connect(server.address());
        return layer;
    }

    @Test
    void largeRead_travelsAsTwoReadsInFlight_smbjGetsOneResponse() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(8 * MIB, 5);
        server.content = data;
        int before = server.requests.size();
        SMB2ReadResponse r = read(0, 8 * MIB);
        assertEquals(0, r.getHeader().getStatusCode());
        assertArrayEquals(data, r.getData(), "smbj got all the data, in order");
        List<ByteBuffer> reads = readsSince(before);
        assertEquals(2, reads.size(), "two READs on the wire");
        long first = reads.get(0).getLong(24);
        // MS-SMB2 3.2.4.1.5: the second part takes the message ids after the first part's charge
        assertEquals(first + 64, reads.get(1).getLong(24), "MessageId of the second part");
        assertEquals(r.getHeader().getMessageId(), first, "smbj's response carries its own message id");
        for (int i = 0; i < 2; i++) {
            ByteBuffer q = reads.get(i);
            assertEquals(64, q.getShort(6), "CreditCharge of part " + i);
            assertEquals(4 * MIB, q.getInt(68), "Length of part " + i);
            assertEquals(4L * MIB * i, q.getLong(72), "Offset of part " + i);
            assertEquals(2, q.getInt(100), "Channel of part " + i);
            assertEquals(4 * MIB, q.getInt(112 + 12), "the descriptor of part " + i);
        }
        assertNotEquals(reads.get(0).getInt(112 + 8), reads.get(1).getInt(112 + 8), "a registration of each part's own");
        assertEquals(512, r.getHeader().getCreditResponse(), "both parts' credits");
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(2, s.rdmaReads());
        assertEquals(1, s.splitReads());
        assertEquals(8 * MIB, s.rdmaReadBytes());
        assertEquals(2, s.remoteInvalidations(), "each part's registration invalidated by its response");
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
        // smbj goes on with the message ids after the whole charge
        byte[] small = random(4096, 6);
        write(small, 0);
        assertEquals(first + 128, lastRequest().getLong(24), "smbj's next message id");
    }

    @Test
    void largeRead_nearTheEnd_smbjGetsWhatThereIs_orEndOfFile() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(5 * MIB + 3, 7);
        server.content = data;
        SMB2ReadResponse r = read(0, 8 * MIB);
        assertArrayEquals(data, r.getData(), "the first part's 4 MiB and the second's 1 MiB + 3");
        SMB2ReadResponse third = read(2 * MIB, 8 * MIB);
        assertArrayEquals(java.util.Arrays.copyOfRange(data, 2 * MIB, data.length), third.getData(),
                "the second part beyond the end: END_OF_FILE, the first part's data");
        SMB2ReadResponse past = read(6 * MIB, 8 * MIB);
        assertEquals(FakeSmb2Server.STATUS_END_OF_FILE & 0xffffffffL, past.getHeader().getStatusCode(),
                "both beyond the end: END_OF_FILE, as one READ would get");
        assertEquals(3, smbj.statistics().splitReads());
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
    }

    @Test
    void largeRead_readPartsOne_staysOneRequest() throws Exception {
        start(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().readParts(1).build(), SmbDirectConfig.defaults());
        byte[] data = random(8 * MIB, 8);
        server.content = data;
        int before = server.requests.size();
        assertArrayEquals(data, read(0, 8 * MIB).getData());
        assertEquals(1, readsSince(before).size());
        assertEquals(8 * MIB, readsSince(before).get(0).getInt(68));
        assertEquals(0, smbj.statistics().splitReads());
    }

    @Test
    void largeRead_serverGoneMidway_failsTheRequest_andLeavesNothingRegistered() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        server.content = random(8 * MIB, 9);
        serverGoneMidway(() -> read(0, 8 * MIB));
    }

    /**
     * A split request whose server goes away: the loss reaches smbj through the request's future,
     * or, when the sending thread itself takes it while it sends the second part, as smbj's send
     * failing with the part not sent; either way saying the connection was lost, and nothing stays
     * registered.
     */
    private void serverGoneMidway(org.junit.jupiter.api.function.Executable transfer) throws Exception {
        SmbDirectConnection c = direct();
        server.mode = FakeSmb2Server.Mode.DISCONNECT;
        Exception e = assertThrows(Exception.class, transfer);
        assertTrue(e instanceof ExecutionException || e instanceof TransportException, String.valueOf(e));
        Throwable why = e instanceof ExecutionException ? e.getCause() : e;
        assertTrue(String.valueOf(why).contains("was lost"), String.valueOf(why));
        assertFalse(c.isOpen());
        assertEquals(0, c.statistics().registrationsLive());
    }

    @Test
    void largeWrite_inTwoWritesInFlight_oneResponseForSmbj_smb302() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(8 * MIB, 11);
        int before = server.requests.size();
        assertEquals(8 * MIB, write(data, 3 * MIB), "smbj's Count: both parts");
        byte[] stored = java.util.Arrays.copyOfRange(server.content, 3 * MIB, server.content.length);
        assertArrayEquals(data, stored, "the server RDMA-read every byte, each part's at its offset");
        List<ByteBuffer> writes = since(before, FakeSmb2Server.SMB2_WRITE);
        assertEquals(2, writes.size(), "two WRITEs on the wire");
        long first = writes.get(0).getLong(24);
        // MS-SMB2 3.2.4.1.5: the second part takes the message ids after the first part's charge
        assertEquals(first + 64, writes.get(1).getLong(24), "MessageId of the second part");
        for (int i = 0; i < 2; i++) {
            ByteBuffer w = writes.get(i);
            // MS-SMB2 2.2.21: no data inline, RemainingBytes and the descriptor the part's
            assertEquals(64, w.getShort(6), "CreditCharge of part " + i);
            assertEquals(0, w.getInt(68), "Length of part " + i);
            assertEquals(3L * MIB + 4L * MIB * i, w.getLong(72), "Offset of part " + i);
            assertEquals(2, w.getInt(96), "Channel of part " + i);
            assertEquals(4 * MIB, w.getInt(100), "RemainingBytes of part " + i);
            assertEquals(4 * MIB, w.getInt(112 + 12), "the descriptor of part " + i);
        }
        assertNotEquals(writes.get(0).getInt(112 + 8), writes.get(1).getInt(112 + 8), "a registration of each part's own");
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(2, s.rdmaWrites());
        assertEquals(1, s.splitWrites());
        assertEquals(8 * MIB, s.rdmaWriteBytes());
        assertEquals(2, s.remoteInvalidations(), "each part's registration invalidated by its response");
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
        write(random(4096, 12), 0);
        assertEquals(first + 128, lastRequest().getLong(24), "smbj's next message id");
    }

    @Test
    void largeWrite_writePartsOne_staysOneRequest() throws Exception {
        start(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().writeParts(1).build(), SmbDirectConfig.defaults());
        int before = server.requests.size();
        byte[] data = random(8 * MIB, 13);
        assertEquals(8 * MIB, write(data, 0));
        assertArrayEquals(data, server.content);
        assertEquals(1, since(before, FakeSmb2Server.SMB2_WRITE).size());
        assertEquals(8 * MIB, since(before, FakeSmb2Server.SMB2_WRITE).get(0).getInt(100), "RemainingBytes");
        assertEquals(0, smbj.statistics().splitWrites());
    }

    @Test
    void largeWrite_secondPartFails_smbjGetsTheFailure_andNothingStaysRegistered() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        int diskFull = 0xC000007F;
        int before = server.requests.size();
        // the server serves requests in order: the second WRITE it answers is the second part
        java.util.concurrent.atomic.AtomicInteger answered = new java.util.concurrent.atomic.AtomicInteger();
        server.mangle = r -> answered.incrementAndGet() == 2
                ? FakeSmb2Server.errorResponse(FakeSmb2Server.SMB2_WRITE, r.getLong(24), diskFull) : r;
        SMB2WriteRequest w = new SMB2WriteRequest(connection.getNegotiatedProtocol().getDialect(), FILE, 0, 0,
                new ArrayByteChunkProvider(random(8 * MIB, 14), 0), connection.getNegotiatedProtocol().getMaxWriteSize());
        SMB2WriteResponse r = connection.<SMB2WriteResponse>send(w).get(30, TimeUnit.SECONDS);
        assertEquals(diskFull & 0xffffffffL, r.getHeader().getStatusCode(), "the second part's status");
        assertEquals(2, since(before, FakeSmb2Server.SMB2_WRITE).size());
        assertEquals(0, direct().statistics().registrationsLive(), "no registration left");
        assertTrue(direct().isOpen(), "a failed WRITE leaves the connection as it is");
    }

    @Test
    void largeWrite_serverGoneMidway_failsTheRequest_andLeavesNothingRegistered() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        serverGoneMidway(() -> write(random(8 * MIB, 15), 0));
    }

    /**
     * A provider that cannot send with invalidate (soft-iWARP's verbs provider: no memory windows,
     * each registration a memory region of its own): a READ's registration is made ahead, once the
     * READ before it is sent, and a request's registration ends after smbj has its response.
     */
    @Test
    void reads_withoutRemoteInvalidation_registeredAhead_endedAfterTheHandOver() throws Exception {
        startWithoutRemoteInvalidation();
        SmbDirectConnection c = direct();
        byte[] data = random(MIB, 16);
        assertEquals(MIB, write(data, 0));
        int before = server.requests.size();
        for (int i = 0; i < 5; i++) {
            assertArrayEquals(java.util.Arrays.copyOfRange(data, i * 4096, (i + 1) * 4096), read(i * 4096, 4096).getData(),
                    "READ " + i);
            // the READ's own registration ends, and the next READ's is made, after smbj has the response
            int n = i;
            SmbjOverSim.waitUntil(() -> smbj.statistics().localInvalidations() == 2 + n
                    && c.statistics().registrationsLive() == 2, "after READ " + n + ", its registration ended here and "
                    + "one made ahead for the next READ, besides the next WRITE's (" + c.statistics().registrationsLive()
                    + " live)");
            assertEquals(2, smbj.registeredAhead(connection), "one for the next READ, one for the next WRITE");
        }
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(5, s.rdmaReads());
        // the first READ registered its own; each of the four after it took the one made ahead
        assertEquals(4, s.readsRegisteredAhead());
        List<ByteBuffer> reads = readsSince(before);
        for (int i = 1; i < reads.size(); i++) {
            assertNotEquals(reads.get(i - 1).getInt(112 + 8), reads.get(i).getInt(112 + 8),
                    "READ " + i + " names a registration of its own (MS-SMBD 3.1.4.3)");
        }
        assertEquals(6, s.localInvalidations(), "the WRITE's and the five READs' ended here");

        // a READ of another length registers its own, and the one ahead for 4 KiB ends
        assertArrayEquals(java.util.Arrays.copyOf(data, 8192), read(0, 8192).getData());
        assertEquals(4, smbj.statistics().readsRegisteredAhead());
        SmbjOverSim.waitUntil(() -> smbj.statistics().localInvalidations() == 7 && c.statistics().registrationsLive() == 2,
                "the 8 KiB READ's registration ended, one made ahead for 8 KiB (" + c.statistics().registrationsLive()
                        + " live)");
        connection.close();
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 0,
                "nothing registered after the close (" + c.statistics().registrationsLive() + " live)");
    }

    /**
     * Without remote invalidation, a WRITE's registration is made ahead too, once the WRITE before
     * it is sent, and smbj's data goes straight into its buffer: each WRITE names a region of its
     * own, and the server reads each WRITE's own data. A WRITE of another length registers its own
     * and ends the one made ahead.
     */
    @Test
    void writes_withoutRemoteInvalidation_registeredAhead_eachWithItsOwnData() throws Exception {
        startWithoutRemoteInvalidation();
        SmbDirectConnection c = direct();
        int before = server.requests.size();
        byte[][] data = new byte[3][];
        for (int i = 0; i < 3; i++) {
            data[i] = random(MIB, 30 + i);
            assertEquals(MIB, write(data[i], (long) i * MIB), "WRITE " + i);
        }
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(data[i], java.util.Arrays.copyOfRange(server.content, i * MIB, (i + 1) * MIB),
                    "the server RDMA-read WRITE " + i + "'s own data");
        }
        assertEquals(2, smbj.statistics().writesRegisteredAhead(), "the two WRITEs after the first");
        List<ByteBuffer> writes = since(before, FakeSmb2Server.SMB2_WRITE);
        for (int i = 1; i < writes.size(); i++) {
            assertNotEquals(writes.get(i - 1).getInt(112 + 8), writes.get(i).getInt(112 + 8),
                    "WRITE " + i + " names a registration of its own (MS-SMBD 3.1.4.3)");
        }
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 1,
                "the WRITEs' registrations ended, one made ahead (" + c.statistics().registrationsLive() + " live)");
        assertEquals(1, smbj.registeredAhead(connection));

        // a WRITE of another length registers its own, the one made ahead for 1 MiB ends, and one is
        // made for 100,000 bytes, which the next WRITE of that length takes
        byte[] small = random(100_000, 33);
        assertEquals(small.length, write(small, 0));
        assertArrayEquals(small, java.util.Arrays.copyOf(server.content, small.length));
        assertEquals(2, smbj.statistics().writesRegisteredAhead());
        int tokenOfTheSmallOne = lastRequest().getInt(112 + 8);
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 1 && smbj.statistics().localInvalidations() == 4,
                "the 1 MiB registration made ahead and the 100,000-byte WRITE's ended, one made ahead for 100,000 bytes ("
                        + c.statistics().registrationsLive() + " live)");
        byte[] again = random(100_000, 34);
        assertEquals(again.length, write(again, 0));
        assertArrayEquals(again, java.util.Arrays.copyOf(server.content, again.length));
        assertEquals(3, smbj.statistics().writesRegisteredAhead());
        assertNotEquals(tokenOfTheSmallOne, lastRequest().getInt(112 + 8));
        assertEquals(1, smbj.registeredAhead(connection));
    }

    /**
     * Without remote invalidation, a WRITE and a READ sent in parts take registrations made ahead
     * for each part, and the last part's registration ends after smbj has the merged response:
     * once the second of each is done, nothing is registered but what is made ahead for the next.
     */
    @Test
    void splitRequests_withoutRemoteInvalidation_registeredAheadPerPart() throws Exception {
        startWithoutRemoteInvalidation();
        SmbDirectConnection c = direct();
        int before = server.requests.size();
        byte[] first = random(8 * MIB, 34);
        byte[] second = random(8 * MIB, 35);
        assertEquals(8 * MIB, write(first, 0));
        assertEquals(8 * MIB, write(second, 8 * MIB));
        assertArrayEquals(second, java.util.Arrays.copyOfRange(server.content, 8 * MIB, 16 * MIB));
        assertArrayEquals(first, java.util.Arrays.copyOf(server.content, 8 * MIB));
        assertArrayEquals(first, read(0, 8 * MIB).getData());
        assertArrayEquals(second, read(8 * MIB, 8 * MIB).getData());
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(2, s.splitWrites());
        assertEquals(2, s.splitReads());
        assertEquals(1, s.writesRegisteredAhead(), "the second WRITE's two parts");
        assertEquals(1, s.readsRegisteredAhead(), "the second READ's two parts");
        List<ByteBuffer> writes = since(before, FakeSmb2Server.SMB2_WRITE);
        assertEquals(4, writes.size(), "two WRITEs of two parts each");
        java.util.Set<Integer> tokens = new java.util.HashSet<>();
        for (ByteBuffer w : writes) {
            tokens.add(w.getInt(112 + 8));
        }
        assertEquals(4, tokens.size(), "each part of each WRITE names a registration of its own");
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 4, "the last parts' registrations ended, "
                + "two made ahead for each kind (" + c.statistics().registrationsLive() + " live)");
        assertEquals(4, smbj.registeredAhead(connection));
        connection.close();
        SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 0,
                "nothing registered after the close (" + c.statistics().registrationsLive() + " live)");
    }

    /**
     * {@code registerAhead(false)}: without remote invalidation, each READ and WRITE registers its
     * own buffer on its path and nothing stays registered between requests (the memory the option
     * saves), while the registrations still end after smbj has the responses.
     */
    @Test
    void registerAheadOff_withoutRemoteInvalidation_nothingRegisteredBetweenRequests() throws Exception {
        start(new SmbjOverSim(SMB2Dialect.SMB_3_0_2, SmbjOptions.builder().registerAhead(false).build(),
                SmbDirectConfig.defaults(), false));
        SmbDirectConnection c = direct();
        byte[] data = random(8 * MIB, 36);
        for (int i = 0; i < 2; i++) {
            assertEquals(8 * MIB, write(data, 0), "WRITE " + i);
            assertArrayEquals(data, read(0, 8 * MIB).getData(), "READ " + i);
            assertEquals(MIB, write(java.util.Arrays.copyOf(data, MIB), 0));
            assertArrayEquals(java.util.Arrays.copyOf(data, 4096), read(0, 4096).getData());
            SmbjOverSim.waitUntil(() -> c.statistics().registrationsLive() == 0,
                    "nothing registered between requests (" + c.statistics().registrationsLive() + " live)");
        }
        RdmaChannelStatistics s = smbj.statistics();
        assertEquals(0, s.readsRegisteredAhead());
        assertEquals(0, s.writesRegisteredAhead());
        assertEquals(0, smbj.registeredAhead(connection));
        assertEquals(2, s.splitWrites());
        assertEquals(2, s.splitReads());
    }

    /**
     * Without remote invalidation, a faulty READ response (DataRemaining beyond the buffer) ends the
     * transport as anywhere else, and takes the READ's registration and the one made ahead with it.
     */
    @Test
    void faultyRead_withoutRemoteInvalidation_endsTheTransport_nothingLeftRegistered() throws Exception {
        startWithoutRemoteInvalidation();
        SmbDirectConnection c = direct();
        write(random(8192, 18), 0);
        read(0, 4096);
        server.mangle = r -> r.getShort(12) == FakeSmb2Server.SMB2_READ ? r.putInt(72, 4097) : r;
        ExecutionException e = assertThrows(ExecutionException.class, () -> read(0, 4096));
        assertTrue(String.valueOf(e.getCause()).contains("RDMA-wrote 4097 bytes into a buffer of 4096"),
                String.valueOf(e.getCause()));
        SmbjOverSim.waitUntil(() -> !c.isOpen() && c.statistics().registrationsLive() == 0,
                "the connection closed with nothing registered (" + c.statistics().registrationsLive() + " live)");
    }

    @Test
    void reads_withRemoteInvalidation_noneRegisteredAhead_nothingLeftWhenTheResponseArrives() throws Exception {
        start(SMB2Dialect.SMB_3_0_2);
        byte[] data = random(64 * 1024, 17);
        write(data, 0);
        for (int i = 0; i < 3; i++) {
            assertArrayEquals(java.util.Arrays.copyOf(data, 4096), read(0, 4096).getData());
            assertEquals(0, direct().statistics().registrationsLive(), "READ " + i + ": nothing registered once smbj has it");
        }
        assertEquals(0, smbj.statistics().readsRegisteredAhead());
    }
}
