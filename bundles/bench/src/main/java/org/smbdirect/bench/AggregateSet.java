package org.smbdirect.bench;

import java.nio.ByteBuffer;
import java.nio.channels.CompletionHandler;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

import org.smbdirect.transport.SmbDirectConnection;

/**
 * Connections between two transports of their own, sending 1 KiB messages in turn, each with up to
 * {@value #WINDOW} sends in flight: the load of the aggregate figure (e).
 */
final class AggregateSet implements AutoCloseable {
    /** Sends in flight per connection: below maxPendingSends, above what the credits let through. */
    static final int WINDOW = 512;

    private final SimPair pair;
    private final SmbDirectConnection[] senders;
    /** Sends completed, per connection (the attachment of a send is its connection's index). */
    private final AtomicLongArray completed;
    /** Sends started, per connection. */
    private final long[] sent;
    private final Integer[] index;
    private final ByteBuffer payload = ByteBuffer.allocate(1024);
    private final AtomicLong received = new AtomicLong();
    private long target;
    private final CompletionHandler<Void, Object> onSent = new CompletionHandler<>() {
        @Override
        public void completed(Void result, Object attachment) {
            completed.incrementAndGet((Integer) attachment);
        }

        @Override
        public void failed(Throwable exc, Object attachment) {
            exc.printStackTrace();
        }
    };

    /**
     * @param connections how many
     * @param handlers where the handlers run: {@code inline} or {@code engine} (see {@link SimPair#connect})
     */
    AggregateSet(int connections, String handlers) throws Exception {
        pair = new SimPair();
        senders = new SmbDirectConnection[connections];
        completed = new AtomicLongArray(connections);
        sent = new long[connections];
        index = new Integer[connections];
        for (int i = 0; i < connections; i++) {
            senders[i] = pair.connect(handlers, (x, m, t) -> { }, (x, m, t) -> received.incrementAndGet())[0];
            index[i] = i;
        }
    }

    /**
     * Sends {@code messages} (a multiple of the connections), one per connection in turn, and waits
     * until all have arrived.
     */
    void send(int messages) {
        target += messages;
        int connections = senders.length;
        int per = messages / connections;
        for (int i = 0; i < per; i++) {
            for (int c = 0; c < connections; c++) {
                while (sent[c] - completed.get(c) >= WINDOW) {
                    LockSupport.parkNanos(1000);
                }
                senders[c].send(payload, index[c], onSent);
                sent[c]++;
            }
        }
        while (received.get() < target) {
            LockSupport.parkNanos(1000);
        }
    }

    @Override
    public void close() {
        pair.close();
    }
}
