package org.smbdirect.protocol.internal;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Something whose state one thread at a time touches: signalled from any thread, it runs {@link
 * #process()} on its {@link EventLoopGroup.Loop}, never concurrently with itself. Signals that
 * arrive while it runs make it run again, after the other actors already waiting on the loop
 * (fairness). Signalling allocates nothing.
 */
abstract class Actor implements Runnable {
    private final AtomicInteger signals = new AtomicInteger();
    private final EventLoopGroup.Loop loop;
    /** Link of the loop's intrusive run queue; written only by the loop's queue. */
    volatile Actor next;

    Actor(EventLoopGroup.Loop loop) {
        this.loop = loop;
    }

    /** Makes the actor run soon. Thread-safe, allocation-free. */
    final void signal() {
        if (signals.getAndIncrement() == 0) {
            loop.submit(this);
        }
    }

    /**
     * Whether the current thread is this actor's loop thread (so that reentrant calls, such as an
     * upper layer sending from inside its message handler, can run directly).
     *
     * @return {@code true} on the loop thread
     */
    final boolean inLoop() {
        return Thread.currentThread() == loop.thread();
    }

    @Override
    public final void run() {
        int seen = signals.get();
        try {
            process();
        } finally {
            if (signals.addAndGet(-seen) != 0) {
                loop.submit(this);
            }
        }
    }

    /** Does the pending work. Runs on the loop thread; must not block. */
    protected abstract void process();
}
