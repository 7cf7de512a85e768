package org.smbdirect.rdma.sim.internal;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A classic pcap file (microsecond timestamps, link type Ethernet) bounded in size: records that
 * would grow the file beyond the bound are counted and dropped; each frame is cut to the snap
 * length. Frames are built by {@link CaptureSet} with this writer's {@link RoceFramer} under this
 * writer's lock.
 */
final class PcapWriter implements Closeable {
    private static final int LINKTYPE_ETHERNET = 1;

    final Path path;
    final int mtu;
    final RoceFramer framer = new RoceFramer();
    private final long maxBytes;
    private final int snapLength;
    private final FileChannel channel;
    private final ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 18).order(ByteOrder.LITTLE_ENDIAN);
    private final long epochMicros;
    private final long nanoBase;
    private long size;
    private long frames;
    private long dropped;
    private boolean closed;

    PcapWriter(Path path, long maxBytes, int snapLength, int mtu) throws IOException {
        this.path = path.toAbsolutePath();
        this.maxBytes = maxBytes;
        this.snapLength = snapLength;
        this.mtu = mtu;
        Path dir = this.path.getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        channel = FileChannel.open(this.path, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE);
        epochMicros = System.currentTimeMillis() * 1000;
        nanoBase = System.nanoTime();
        buffer.putInt(0xa1b2c3d4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(snapLength)
                .putInt(LINKTYPE_ETHERNET);
        size = 24;
        flush();
    }

    /** Appends the framer's current frame; called with this writer's lock held. */
    void append(int length) {
        if (closed) {
            return;
        }
        int caplen = Math.min(length, snapLength);
        int record = 16 + caplen;
        if (size + record > maxBytes) {
            if (dropped++ == 0) {
                SimLog.warn("capture " + path + " reached its bound of " + maxBytes + " bytes; further frames are dropped");
            }
            return;
        }
        if (buffer.remaining() < record) {
            flush();
        }
        long micros = epochMicros + (System.nanoTime() - nanoBase) / 1000;
        buffer.putInt((int) (micros / 1_000_000)).putInt((int) (micros % 1_000_000)).putInt(caplen).putInt(length)
                .put(framer.frame, 0, caplen);
        size += record;
        frames++;
    }

    synchronized void flush() {
        if (closed) {
            return;
        }
        buffer.flip();
        try {
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        } catch (IOException e) {
            SimLog.error("capture " + path + " failed; capture stops", e);
            closed = true;
        }
        buffer.clear();
    }

    synchronized long frames() {
        return frames;
    }

    synchronized long dropped() {
        return dropped;
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        flush();
        closed = true;
        try {
            channel.close();
        } catch (IOException e) {
            SimLog.error("closing capture " + path + " failed", e);
        }
    }
}
