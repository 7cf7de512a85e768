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
     * Runs {@code work} on the calling thread when the actor is idle (neither scheduled nor
     * running), as if it were the actor's own processing: a caller may do the actor's work itself
     * instead of handing it over to the loop thread and waking it. Refused, and the caller signals
     * instead, when the actor is busy or when the calling thread is an engine thread in the middle
     * of an actor's processing (one connection's rules never run while another's hold the thread).
     * Work signalled meanwhile is handed to the loop when {@code work} returns.
     *
     * @param work what to run; must not block
     * @return {@code true} when it ran here
     */
    final boolean tryRunHere(Runnable work) {
        if (EventLoopGroup.inEngineStep()) {
            return false;
        }
        if (!signals.compareAndSet(0, 1)) {
            return false;
        }
        try {
            work.run();
        } finally {
            if (signals.decrementAndGet() != 0) {
                loop.submit(this);
            }
        }
        return true;
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
