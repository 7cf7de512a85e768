package org.smbdirect.rdma;

import org.osgi.annotation.versioning.ProviderType;

/**
 * A completion queue (CQ): where finished work requests of one or more endpoints are reported.
 *
 * <h2>Consumer obligations</h2>
 * The consumer serialises its calls of {@link #getResults}, {@link #getResultsEx} and {@link
 * #arm} on one queue: never two of them at once, from any threads. The provider need not guard
 * against concurrent calls. The consumer sizes the queue to hold every completion that can be
 * outstanding at once ({@link #depth()}); see {@link RdmaStatus#COMPLETION_QUEUE_OVERFLOW}.
 *
 * <h2>Provider obligations (NDKPI completion rules)</h2>
 * <ul>
 * <li>Completions of one endpoint's receive queue, and of its send queue (sends, reads, writes,
 * invalidates), are queued in the order the requests were posted.</li>
 * <li>The {@link CompletionNotificationHandler} is called at most once per arm, and only after
 * the consumer armed the queue. When a completion satisfying the arm's {@link ArmType} is queued,
 * the provider clears the arm and then calls the handler.</li>
 * <li>When {@link #arm} is called while the queue holds completions: if at least one completion
 * satisfying the arm type was queued since the handler was last called, the arm is satisfied at
 * once; if every such completion was already present at the last call of the handler, the
 * provider may satisfy it at once or wait for a new completion.</li>
 * <li>Calls of the handler are serialised: a notification due while the handler runs is delivered
 * after it returns. The handler is never called from within {@link #arm} or any other call the
 * consumer made.</li>
 * <li>Arming again before an arm is satisfied combines the two types by {@link
 * ArmType#combine(ArmType)}.</li>
 * <li>A receive that invalidated a local token because the peer used send-and-invalidate is
 * reported by both {@link #getResults} and {@link #getResultsEx}; only the extended form reports
 * the token. The token is invalid either way, and a later {@linkplain Endpoint#postInvalidate
 * local invalidate} of it fails as for any invalid token.</li>
 * </ul>
 *
 * <p>If more completions are due than {@link #depth()} allows, the queue overflows: the provider
 * ends every endpoint that reports to it with status {@link RdmaStatus#COMPLETION_QUEUE_OVERFLOW};
 * completions already queued remain retrievable.
 */
@ProviderType
public interface CompletionQueue extends AutoCloseable {

    /**
     * The number of completions the queue holds.
     *
     * @return the depth given at creation
     */
    int depth();

    /**
     * Removes up to {@code results.length} completions from the queue, oldest first, and fills
     * the holders in {@code results} from index 0 (NdkGetCqResults). Extended fields are left
     * cleared ({@link CompletionResult#tokenInvalidated()} is {@code false}).
     *
     * @param results holders to fill
     * @return the number of holders filled, 0 when the queue is empty
     */
    int getResults(CompletionResult[] results);

    /**
     * As {@link #getResults} but also reports the token a peer's send-and-invalidate invalidated
     * (NdkGetCqResultsEx).
     *
     * @param results holders to fill
     * @return the number of holders filled, 0 when the queue is empty
     */
    int getResultsEx(CompletionResult[] results);

    /**
     * Requests one call of the queue's {@link CompletionNotificationHandler} when a completion of
     * the given kind is queued (NdkArmCq). See the class description for the rules.
     *
     * @param type the condition
     */
    void arm(ArmType type);

    /**
     * Releases the queue. Endpoints still using it must be closed first; closing a queue in use
     * is rejected.
     *
     * @throws RdmaException with {@link RdmaStatus#INVALID_STATE} while an open endpoint uses it
     */
    @Override
    void close() throws RdmaException;
}
