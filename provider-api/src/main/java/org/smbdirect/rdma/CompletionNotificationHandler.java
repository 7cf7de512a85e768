package org.smbdirect.rdma;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * The consumer's notification callback of a {@link CompletionQueue} (NDK_FN_CQ_NOTIFICATION_CALLBACK).
 */
@ConsumerType
@FunctionalInterface
public interface CompletionNotificationHandler {

    /**
     * Called once per satisfied {@linkplain CompletionQueue#arm arm}, on a provider thread, never
     * concurrently with another invocation for the same queue and never from within a call the
     * consumer made. The usual reaction is to drain the queue with {@link
     * CompletionQueue#getResults} and arm it again. Must not block. An exception thrown here is
     * logged by the provider and otherwise ignored.
     *
     * @param queue the queue whose arm was satisfied
     */
    void onCompletionNotification(CompletionQueue queue);
}
