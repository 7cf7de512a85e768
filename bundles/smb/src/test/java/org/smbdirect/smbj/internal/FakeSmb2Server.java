package org.smbdirect.smbj.internal;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.SmbDirect;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * A small SMB2 responder on an SMB Direct listener, for the transport's tests: it answers
 * NEGOTIATE (no session: the tests send READ and WRITE on the connection, as smbj's Connection.send
 * allows), and READ and WRITE against one in-memory file, inline or through the RDMA channel as
 * MS-SMB2 3.3.5.12 and 3.3.5.13 have a server do it: it RDMA-reads a WRITE's data from the
 * client's descriptors, RDMA-writes a READ's data into them, and answers an
 * SMB2_CHANNEL_RDMA_V1_INVALIDATE request with Send with Invalidate. Every request it received is
 * kept, as bytes, for the tests to look at. Requests are served on a thread of its own, never on
 * the engine's.
 */
final class FakeSmb2Server implements AutoCloseable {
    static final int SMB2_NEGOTIATE = 0;
    static final int SMB2_READ = 8;
    static final int SMB2_WRITE = 9;
    static final int STATUS_END_OF_FILE = 0xC0000011;

    /** What the server does with the next READ or WRITE. */
    enum Mode {
        ANSWER, DISCONNECT, FAIL_END_OF_FILE
    }

    final List<byte[]> requests = new CopyOnWriteArrayList<>();
    final Map<Long, Byte> file = new ConcurrentHashMap<>();
    volatile byte[] content = new byte[0];
    volatile Mode mode = Mode.ANSWER;
    volatile int dialect = 0x0302;
    volatile int maxSize = 8 << 20;
    /** Changes each READ and WRITE response before it is sent (a faulty or hostile server), when set. */
    volatile java.util.function.UnaryOperator<ByteBuffer> mangle;
    /**
     * Sends READ and WRITE responses two at a time, compounded into one message (MS-SMB2
     * 3.3.4.1.3: a server may compound responses to requests that were not), without invalidating.
     */
    volatile boolean compound;
    /** The response waiting for a second to be compounded with; worker thread only. */
    private ByteBuffer held;
    private final SmbDirectListener listener;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> new Thread(r, "fake-smb2-server"));

    FakeSmb2Server(SmbDirect transport, InetSocketAddress address) throws Exception {
        listener = transport.listen(address, connection -> new Handler());
    }

    InetSocketAddress address() {
        return listener.localAddress();
    }

    @Override
    public void close() throws Exception {
        listener.close();
        worker.shutdownNow();
        worker.awaitTermination(10, TimeUnit.SECONDS);
    }

    private final class Handler implements ConnectionHandler {
        @Override
        public void onMessage(SmbDirectConnection c, ByteBuffer message, java.util.OptionalInt invalidated) {
            byte[] m = new byte[message.remaining()];
            message.get(m);
            worker.execute(() -> serve(c, m));
        }
    }

    private void serve(SmbDirectConnection c, byte[] m) {
        try {
            requests.add(m);
            ByteBuffer in = ByteBuffer.wrap(m).order(ByteOrder.LITTLE_ENDIAN);
            int command = in.getShort(12);
            long messageId = in.getLong(24);
            if (command == SMB2_NEGOTIATE) {
                c.sendAndWait(negotiateResponse(messageId), java.time.Duration.ofSeconds(10));
                return;
            }
            if (mode == Mode.DISCONNECT) {
                c.close();
                return;
            }
            if (mode == Mode.FAIL_END_OF_FILE) {
                c.sendAndWait(errorResponse(command, messageId, STATUS_END_OF_FILE), java.time.Duration.ofSeconds(10));
                return;
            }
            int channel = in.getInt(command == SMB2_READ ? 100 : 96);
            int infoOffset = in.getShort(command == SMB2_READ ? 108 : 104) & 0xffff;
            int infoLength = in.getShort(command == SMB2_READ ? 110 : 106) & 0xffff;
            List<BufferDescriptorV1> descriptors = channel == 0 ? List.of()
                    : BufferDescriptorV1.decodeAll(in.duplicate().position(infoOffset), infoLength / BufferDescriptorV1.SIZE);
            long offset = in.getLong(72);
            ByteBuffer response;
            if (command == SMB2_WRITE) {
                byte[] data;
                if (channel == 0) {
                    int length = in.getInt(68);
                    int dataOffset = in.getShort(66) & 0xffff;
                    data = java.util.Arrays.copyOfRange(m, dataOffset, dataOffset + length);
                } else {
                    // MS-SMB2 3.3.5.13: the data is RemainingBytes long, read from the descriptors
                    ByteBuffer into = ByteBuffer.allocateDirect(in.getInt(100));
                    c.rdmaRead(into, descriptors, 0).toCompletableFuture().get(30, TimeUnit.SECONDS);
                    data = new byte[into.remaining()];
                    into.get(data);
                }
                store(offset, data);
                response = writeResponse(messageId, data.length);
            } else {
                int length = in.getInt(68);
                byte[] data = load(offset, length);
                if (data.length < in.getInt(96) || data.length == 0 && length != 0) {
                    // MS-SMB2 3.3.5.12: fewer bytes than MinimumCount, or none at all (at the end of the file)
                    ByteBuffer eof = errorResponse(command, messageId, STATUS_END_OF_FILE);
                    java.util.function.UnaryOperator<ByteBuffer> m1 = mangle;
                    eof = m1 == null ? eof : m1.apply(eof);
                    if (channel == 2) {
                        // as ksmbd: the registration named with SMB2_CHANNEL_RDMA_V1_INVALIDATE is
                        // invalidated with the answer, whatever its status
                        c.sendAndInvalidate(eof, descriptors.get(0).token()).toCompletableFuture().get(30, TimeUnit.SECONDS);
                    } else {
                        c.sendAndWait(eof, java.time.Duration.ofSeconds(10));
                    }
                    return;
                }
                if (channel == 0) {
                    response = readResponse(messageId, data, 0);
                } else {
                    c.rdmaWrite(ByteBuffer.allocateDirect(data.length).put(data).flip(), descriptors, 0)
                            .toCompletableFuture().get(30, TimeUnit.SECONDS);
                    response = readResponse(messageId, new byte[0], data.length);
                }
            }
            java.util.function.UnaryOperator<ByteBuffer> m2 = mangle;
            if (m2 != null) {
                response = m2.apply(response);
            }
            if (compound) {
                if (held == null) {
                    held = response;
                } else {
                    c.sendAndWait(compounded(held, response), java.time.Duration.ofSeconds(10));
                    held = null;
                }
                return;
            }
            if (channel == 2) {
                c.sendAndInvalidate(response, descriptors.get(0).token()).toCompletableFuture().get(30, TimeUnit.SECONDS);
            } else {
                c.sendAndWait(response, java.time.Duration.ofSeconds(10));
            }
        } catch (Exception e) {
            throw new IllegalStateException("the fake server failed", e);
        }
    }

    private synchronized void store(long offset, byte[] data) {
        byte[] now = content;
        if (now.length < offset + data.length) {
            now = java.util.Arrays.copyOf(now, (int) offset + data.length);
        }
        System.arraycopy(data, 0, now, (int) offset, data.length);
        content = now;
    }

    private synchronized byte[] load(long offset, int length) {
        byte[] now = content;
        int n = (int) Math.max(0, Math.min(length, now.length - offset));
        return n == 0 ? new byte[0] : java.util.Arrays.copyOfRange(now, (int) offset, (int) offset + n);
    }

    /** MS-SMB2 2.2.1.2, a response header granting plenty of credits. */
    private static ByteBuffer header(int size, int command, long messageId, int status) {
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) 1).putInt(status)
                .putShort((short) command).putShort((short) 256).putInt(1).putInt(0).putLong(messageId);
        b.position(64);
        return b;
    }

    /** MS-SMB2 2.2.4: the dialect, LARGE_MTU, and the same limit for transact, read and write. */
    private ByteBuffer negotiateResponse(long messageId) {
        ByteBuffer b = header(64 + 65 + 7, SMB2_NEGOTIATE, messageId, 0);
        b.putShort((short) 65).putShort((short) 1).putShort((short) dialect).putShort((short) 0);
        b.put(new byte[16]).putInt(0x4).putInt(maxSize).putInt(maxSize).putInt(maxSize);
        b.putLong(133_000_000_000_000_000L).putLong(0).putShort((short) 128).putShort((short) 0).putInt(0);
        return b.position(0);
    }

    /** MS-SMB2 3.3.4.1.3: the first response padded to 8 bytes, its NextCommand pointing at the second. */
    private static ByteBuffer compounded(ByteBuffer first, ByteBuffer second) {
        int padded = (first.remaining() + 7) & ~7;
        ByteBuffer b = ByteBuffer.allocate(padded + second.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        b.put(first.duplicate()).position(padded);
        b.put(second.duplicate());
        return b.putInt(20, padded).position(0);
    }

    /** MS-SMB2 2.2.22. */
    private static ByteBuffer writeResponse(long messageId, int count) {
        ByteBuffer b = header(64 + 16, SMB2_WRITE, messageId, 0);
        b.putShort((short) 17).putShort((short) 0).putInt(count).putInt(0).putInt(0);
        return b.position(0);
    }

    /** MS-SMB2 2.2.20: inline data, or none and DataRemaining what moved by RDMA. */
    private static ByteBuffer readResponse(long messageId, byte[] data, int remaining) {
        ByteBuffer b = header(64 + 16 + Math.max(1, data.length), SMB2_READ, messageId, 0);
        b.putShort((short) 17).put((byte) 80).put((byte) 0).putInt(data.length).putInt(remaining).putInt(0).put(data);
        return b.position(0);
    }

    /** MS-SMB2 2.2.2. */
    static ByteBuffer errorResponse(int command, long messageId, int status) {
        ByteBuffer b = header(64 + 9, command, messageId, status);
        b.putShort((short) 9).put((byte) 0).put((byte) 0).putInt(0).put((byte) 0);
        return b.position(0);
    }
}
