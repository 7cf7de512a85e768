package org.smbdirect.rdma.sim.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A serial executor: {@link #act()} never runs on two threads at once, runs on a fabric thread of
 * its {@link Scheduler}, and runs again after every {@link #kick()}. Kicking allocates nothing,
 * so the hot path can hand work between endpoints and completion queues for free.
 */
abstract class Actor {
    private static final int IDLE = 0;
    private static final int SCHEDULED = 1;
    private static final int RERUN = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(Actor.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Scheduler scheduler;
    /** Link of the scheduler's ready queue; guarded by the scheduler. */
    Actor nextReady;
    /** Link of a fabric thread's run-next list; touched by that thread only. */
    Actor nextLocal;
    @SuppressWarnings("unused") // accessed through STATE
    private volatile int state;

    Actor(Scheduler scheduler) {
        this.scheduler = scheduler;
    }

    /**
     * Makes {@link #act()} run (again) soon on a fabric thread; never runs it inside the caller's
     * call (from a fabric thread, it runs after the actor that thread is running).
     */
    final void kick() {
        for (;;) {
            int s = (int) STATE.getVolatile(this);
            if (s == IDLE) {
                if (STATE.compareAndSet(this, IDLE, SCHEDULED)) {
                    if (!Scheduler.runNext(this)) {
                        scheduler.submit(this);
                    }
                    return;
                }
            } else if (s == SCHEDULED) {
                if (STATE.compareAndSet(this, SCHEDULED, RERUN)) {
                    return;
                }
            } else {
                return;
            }
        }
    }

    /** Called by a fabric thread. */
    final void runOnce() {
        try {
            act();
        } catch (Throwable t) {
            // Nothing thrown ever escapes into a fabric thread.
            SimLog.error("unexpected failure in " + this, t);
        }
        if (!STATE.compareAndSet(this, SCHEDULED, IDLE)) {
            STATE.setVolatile(this, SCHEDULED);
            if (!Scheduler.runNext(this)) {
                scheduler.submit(this);
            }
        }
    }

    /** Called when the scheduler was stopped and will never run this actor again. */
    final void dropped() {
        STATE.setVolatile(this, IDLE);
    }

    /** The work; must not block and must tolerate being called when there is nothing to do. */
    protected abstract void act();
}
