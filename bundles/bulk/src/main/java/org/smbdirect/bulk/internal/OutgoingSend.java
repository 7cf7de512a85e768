package org.smbdirect.bulk.internal;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.smbdirect.transport.BufferDescriptorV1;
import org.smbdirect.transport.RegisteredBuffer;

/** One application send, from {@code send} until its stage completes. Guarded by the session's lock. */
final class OutgoingSend {
    /** How the send travels. */
    enum Path { INLINE, READ, WRITE }

    /** Where the send is. */
    enum State {
        /** Queued behind earlier sends, the in-flight limit or the peer's receive window. */
        WAITING,
        /** DATA handed to the transport. */
        SENDING,
        /** READ_REQUEST sent; the receiver reads and answers COMPLETE or NOBUFS. */
        AWAIT_COMPLETE,
        /** WRITE_REQUEST sent; the receiver answers TARGET or NOBUFS. */
        AWAIT_TARGET,
        /** RDMA Writes into the receiver's TARGET in progress. */
        WRITING,
        /** Writes done, COMPLETE handed to the transport. */
        COMPLETING,
        /** Completed or failed. */
        DONE
    }

    /** The application's bytes, position to limit (a duplicate: its position and limit are ours). */
    final ByteBuffer data;
    final int length;
    final CompletableFuture<Void> future = new CompletableFuture<>();
    State state = State.WAITING;
    Path path;
    long sequence;
    /** Bytes sent inline in the request (READ and WRITE paths). */
    int firstPart;
    /** READ path: the rest, registered for the peer's RDMA Read. */
    RegisteredBuffer registration;
    /** WRITE path: the rest in direct memory, and the receiver's buffer. */
    ByteBuffer source;
    List<BufferDescriptorV1> target;
    /** WRITE path: the next offset to write, writes outstanding, the first failure. */
    int nextOffset;
    int outstanding;
    Throwable failure;

    OutgoingSend(ByteBuffer data) {
        this.data = data.duplicate();
        this.length = data.remaining();
    }

    /** Bytes moved by RDMA. */
    int rdmaLength() {
        return length - firstPart;
    }

    @Override
    public String toString() {
        return "send#" + sequence + "[" + path + ", " + length + " bytes, " + state + "]";
    }
}
