package org.smbdirect.shell.internal;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.smbdirect.bulk.BulkHandler;
import org.smbdirect.bulk.BulkListener;
import org.smbdirect.bulk.BulkSession;
import org.smbdirect.transport.ConnectionHandler;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConnection;
import org.smbdirect.transport.SmbDirectListener;

/**
 * The listeners, connections and bulk sessions made from the shell, by number. Connections end
 * themselves (the peer goes away, the provider stops); their entries go with them. Each entry
 * remembers what arrived (count, bytes, CRC-32C, the last few short messages) and prints a notice
 * on the console of the session that made it.
 */
final class Endpoints {
    private static final int RECENT = 16;
    private static final int NOTICE_LIMIT = 4096;

    private final AtomicInteger ids = new AtomicInteger();
    private final Map<Integer, Entry> entries = new ConcurrentSkipListMap<>();

    /** Something with a number. */
    abstract static class Entry {
        final int id;

        Entry(int id) {
            this.id = id;
        }

        abstract void close();
    }

    /** A listener: plain SMB Direct (messages) or bulk. */
    static final class ListenerEntry extends Entry {
        final SmbDirectListener messages;
        final BulkListener bulk;

        ListenerEntry(int id, SmbDirectListener messages, BulkListener bulk) {
            super(id);
            this.messages = messages;
            this.bulk = bulk;
        }

        String kind() {
            return bulk != null ? "bulk" : "messages";
        }

        InetSocketAddress address() {
            return bulk != null ? bulk.localAddress() : messages.localAddress();
        }

        @Override
        void close() {
            if (bulk != null) {
                bulk.close();
            } else {
                messages.close();
            }
        }
    }

    /**
     * A connection, with or without a bulk session on it; it is also the handler of what arrives
     * on it.
     */
    final class ConnectionEntry extends Entry implements ConnectionHandler, BulkHandler {
        final String origin;
        private final PrintStream notices;
        private final Checksum received = new Checksum();
        private final Deque<String> recent = new ArrayDeque<>();
        private long messages;
        private volatile SmbDirectConnection connection;
        private volatile BulkSession session;
        private volatile ConnectionLoss loss;

        ConnectionEntry(String origin, PrintStream notices) {
            super(ids.incrementAndGet());
            this.origin = origin;
            this.notices = notices;
        }

        /** Makes the entry known once its connection is established. */
        ConnectionEntry attach(SmbDirectConnection c, BulkSession s) {
            connection = c;
            session = s;
            if (loss == null) {
                entries.put(id, this);
            }
            return this;
        }

        SmbDirectConnection connection() {
            return connection;
        }

        BulkSession session() {
            return session;
        }

        String kind() {
            return session != null ? "bulk" : "messages";
        }

        synchronized long messagesReceived() {
            return messages;
        }

        Checksum received() {
            return received;
        }

        synchronized List<String> recent() {
            return new ArrayList<>(recent);
        }

        ConnectionLoss loss() {
            return loss;
        }

        private void arrived(ByteBuffer data) {
            int n = data.remaining();
            received.update(data);
            String preview = n <= NOTICE_LIMIT ? preview(data) : null;
            synchronized (this) {
                messages++;
                if (preview != null) {
                    recent.addLast(preview);
                    if (recent.size() > RECENT) {
                        recent.removeFirst();
                    }
                }
            }
            if (preview != null) {
                notice("received " + n + " bytes: " + preview);
            }
        }

        private void ended(ConnectionLoss why) {
            loss = why;
            entries.remove(id, this);
            notice("connection lost: " + why.message());
        }

        private void notice(String text) {
            if (notices != null) {
                notices.println("[" + id + "] " + text);
                notices.flush();
            }
        }

        @Override
        public void onMessage(SmbDirectConnection c, ByteBuffer message, OptionalInt invalidatedToken) {
            arrived(message);
        }

        @Override
        public void onConnectionLost(SmbDirectConnection c, ConnectionLoss why) {
            ended(why);
        }

        @Override
        public void onData(BulkSession s, ByteBuffer data) {
            arrived(data);
        }

        @Override
        public void onClosed(BulkSession s, ConnectionLoss why) {
            ended(why);
        }

        @Override
        void close() {
            entries.remove(id, this);
            if (session != null) {
                session.close();
            } else if (connection != null) {
                connection.close();
            }
        }
    }

    ConnectionEntry newConnection(String origin, PrintStream notices) {
        return new ConnectionEntry(origin, notices);
    }

    ListenerEntry addListener(SmbDirectListener messages, BulkListener bulk) {
        ListenerEntry e = new ListenerEntry(ids.incrementAndGet(), messages, bulk);
        entries.put(e.id, e);
        return e;
    }

    Entry get(int id) {
        return entries.get(id);
    }

    Entry remove(int id) {
        return entries.remove(id);
    }

    List<Entry> all() {
        return new ArrayList<>(entries.values());
    }

    /** The entry of a connection, by identity. */
    ConnectionEntry of(SmbDirectConnection c) {
        for (Entry e : entries.values()) {
            if (e instanceof ConnectionEntry && ((ConnectionEntry) e).connection() == c) {
                return (ConnectionEntry) e;
            }
        }
        return null;
    }

    /** Closes everything (the shell component is going away). */
    void closeAll() {
        for (Entry e : all()) {
            try {
                e.close();
            } catch (RuntimeException ignored) {
                // closing is best effort when the shell goes away
            }
        }
        entries.clear();
    }

    /** Up to 60 characters of the data, quoted, as text when it looks like text. */
    static String preview(ByteBuffer data) {
        ByteBuffer d = data.duplicate();
        int n = Math.min(d.remaining(), 60);
        byte[] b = new byte[n];
        d.get(b);
        boolean text = true;
        for (byte x : b) {
            if ((x < 0x20 && x != '\t') || x == 0x7f) {
                text = false;
                break;
            }
        }
        if (text) {
            String s = new String(b, StandardCharsets.UTF_8);
            return '"' + s + (data.remaining() > n ? "..." : "") + '"';
        }
        StringBuilder s = new StringBuilder("0x");
        for (int i = 0; i < Math.min(n, 16); i++) {
            s.append(String.format("%02x", b[i] & 0xff));
        }
        return s + (data.remaining() > 16 ? "..." : "");
    }
}
