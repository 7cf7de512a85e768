package org.smbdirect.bench;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Operations in flight, posted in batches of half the depth: the poster waits until a batch fits
 * and is woken once per batch, not once per completion (as perftest moderates its completions), so
 * that a figure measures the operations rather than the benchmark thread's wake-ups. Used the same
 * way by a benchmark and its baseline.
 */
final class Window {
    final int depth;
    final int batch;
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile Thread poster;

    Window(int depth) {
        this.depth = depth;
        this.batch = Math.max(1, depth / 2);
    }

    /** Waits until {@link #batch} more operations may start, and counts them as started. */
    void awaitBatch() {
        poster = Thread.currentThread();
        while (inFlight.get() > depth - batch) {
            LockSupport.park(this);
        }
        inFlight.addAndGet(batch);
    }

    /** {@code n} operations completed (any thread); the poster is woken when a batch fits again. */
    void completed(int n) {
        int before = inFlight.getAndAdd(-n);
        int after = before - n;
        if (before > depth - batch && after <= depth - batch) {
            LockSupport.unpark(poster);
        }
    }

    /** Waits until every operation started has completed. */
    void drain() {
        poster = Thread.currentThread();
        while (inFlight.get() > 0) {
            LockSupport.parkNanos(this, 100_000);
        }
    }
}
