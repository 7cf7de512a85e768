package org.smbdirect.rdma.verbs.internal;

import org.smbdirect.rdma.CompletionQueue;

/** What the device tests may read of a verbs completion queue's internals. */
public final class CompletionQueueProbe {
    private CompletionQueueProbe() {
    }

    /**
     * How many times the queue asked its device for a notification ({@code ibv_req_notify_cq}).
     *
     * @param queue a queue of the verbs provider
     * @return the count since the queue was created
     */
    public static long deviceRequests(CompletionQueue queue) {
        return ((VerbsCompletionQueue) queue).deviceRequests();
    }

    /**
     * How many of the queue's device requests asked for any completion; the others asked for
     * solicited ones only, the request that notices failures while no arm is pending.
     *
     * @param queue a queue of the verbs provider
     * @return the count since the queue was created
     */
    public static long anyRequests(CompletionQueue queue) {
        return ((VerbsCompletionQueue) queue).anyRequests();
    }

    /**
     * How many work completions the queue took from its device ({@code ibv_poll_cq}), reported
     * to the consumer or not.
     *
     * @param queue a queue of the verbs provider
     * @return the count since the queue was created
     */
    public static long workCompletions(CompletionQueue queue) {
        return ((VerbsCompletionQueue) queue).workCompletions();
    }

    /**
     * How many endpoints use the queue: an endpoint leaves it when it is released.
     *
     * @param queue a queue of the verbs provider
     * @return the endpoints not released yet
     */
    public static int endpoints(CompletionQueue queue) {
        return ((VerbsCompletionQueue) queue).endpoints();
    }
}
