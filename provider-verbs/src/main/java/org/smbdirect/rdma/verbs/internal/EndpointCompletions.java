package org.smbdirect.rdma.verbs.internal;

import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.deregistered;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.opName;
import static org.smbdirect.rdma.verbs.internal.WorkRequestRecords.type;

import org.smbdirect.rdma.Endpoint;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;

/**
 * The completion side of one endpoint: accounts for each verbs work completion of its queue pair
 * in the send-queue ledger or the receive queue, settles the memory windows it concerns, ends the
 * connection on a failure, and queues what the consumer is to see on the completion queue that
 * polled it. Requests that never reached the device (synthetic ones) are reported here too, in
 * order with the others. Everything here runs under that completion queue's lock.
 */
final class EndpointCompletions {
    private final Endpoint endpoint;
    private final boolean softRoce;
    private final int withInvalidateFlags;
    private final EndpointConnection connection;
    private final EndpointRegistrations registrations;
    private final SendQueueLedger sendQueue;
    private final ReceiveQueue receives;
    /** Schedules the endpoint's release (closed, and nothing outstanding any more). */
    private final Runnable release;

    /**
     * @param softRoce whether the device is Soft-RoCE, whose completion statuses need translating
     * @param withInvalidateFlags the wc_flags bits that mean "this receive invalidated a token"
     */
    EndpointCompletions(Endpoint endpoint, EndpointConnection connection, EndpointRegistrations registrations,
            SendQueueLedger sendQueue, ReceiveQueue receives, boolean softRoce, int withInvalidateFlags,
            Runnable release) {
        this.endpoint = endpoint;
        this.softRoce = softRoce;
        this.withInvalidateFlags = withInvalidateFlags;
        this.connection = connection;
        this.registrations = registrations;
        this.sendQueue = sendQueue;
        this.receives = receives;
        this.release = release;
    }

    /**
     * Requests whose completion is still due (unsignaled ones are left out, see {@link
     * SendQueueLedger#outstanding}; the endpoint's release settles the binds).
     */
    int outstanding() {
        return sendQueue.outstanding() + receives.outstanding();
    }

    /**
     * Accounts for one verbs work completion of this endpoint and queues what the consumer is to
     * see on {@code cq}, the queue that polled it (under its lock).
     */
    void complete(long wrId, int wcStatus, int byteLen, int wcFlags, int invalidated, int vendorErr,
            VerbsCompletionQueue.Entry out, VerbsCompletionQueue cq) {
        int slot = (int) (wrId & ReceiveQueue.SEQ_MASK);
        if ((wrId & ReceiveQueue.RECV_BIT) != 0) {
            Object context = receives.context(slot);
            Object named = receives.regions(slot);
            receives.retire(slot);
            RdmaStatus status = WcStatus.map(wcStatus, OperationType.RECEIVE, softRoce);
            if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED && deregistered(named)) {
                // The consumer deregistered memory the receive named: devices report it in their
                // own ways (Soft-RoCE as a malformed receive).
                status = RdmaStatus.LOCAL_PROTECTION_ERROR;
            }
            String failure = status == RdmaStatus.SUCCESS || status == RdmaStatus.FLUSHED ? null
                    : "a receive failed with " + WcStatus.name(wcStatus) + " (vendor error 0x"
                            + Integer.toHexString(vendorErr) + ")";
            out.tokenInvalidated = false;
            out.token = 0;
            if (status == RdmaStatus.SUCCESS && (wcFlags & withInvalidateFlags) != 0) {
                VerbsMemoryRegion r = registrations.byToken(invalidated);
                if (r != null && r.isRemote() && r.state() == VerbsMemoryRegion.VALID) {
                    r.invalidated();
                    registrations.recycleWindow(r); // free again: kept for another registration, under another key
                    out.tokenInvalidated = true;
                    out.token = invalidated;
                } else {
                    // NdkSendAndInvalidate: a token that is not a valid remote token of this
                    // endpoint aborts the connection (some devices invalidate other windows).
                    status = RdmaStatus.INVALID_TOKEN;
                    failure = "the peer's send invalidated token 0x" + Integer.toHexString(invalidated)
                            + ", which is not a valid remote token of this endpoint";
                }
            }
            out.context = context;
            out.endpoint = endpoint;
            out.type = OperationType.RECEIVE;
            out.status = status;
            out.bytes = status == RdmaStatus.SUCCESS ? byteLen : 0;
            if (failure != null) {
                connection.requestFailed(status, failure);
                if (status == RdmaStatus.INVALID_TOKEN) {
                    connection.qpToErrorQuietly();
                }
            }
            cq.enqueueLocked(out);
        } else {
            if (!sendQueue.reported(slot)) {
                // an unsignaled bind already settled when the connection was doomed: its flush
                return;
            }
            Object context = sendQueue.context(slot);
            int op = sendQueue.opcode(slot);
            byte flag = sendQueue.flags(slot);
            int bytes = sendQueue.bytes(slot);
            VerbsMemoryRegion region = sendQueue.region(slot);
            sendQueue.retire(slot);
            RdmaStatus status = WcStatus.map(wcStatus, type(op), softRoce);
            if ((flag & SendQueueLedger.INTERNAL) != 0) {
                registrations.bindSettled(region);
                if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED && region != null
                        && region.state() != VerbsMemoryRegion.DEREGISTERED) {
                    region.invalidated();
                    connection.requestFailed(RdmaStatus.DEVICE_ERROR, "binding a memory window failed with "
                            + WcStatus.name(wcStatus));
                }
            } else {
                if (op == VerbsNative.OP_LOCAL_INV && status == RdmaStatus.SUCCESS && region != null) {
                    registrations.recycleWindow(region); // free again: kept for another registration, under another key
                }
                if (status != RdmaStatus.SUCCESS && status != RdmaStatus.FLUSHED) {
                    connection.requestFailed(status, "a " + opName(op) + " failed with " + WcStatus.name(wcStatus)
                            + " (vendor error 0x" + Integer.toHexString(vendorErr) + ")");
                }
                if ((flag & SendQueueLedger.SILENT) == 0 || status != RdmaStatus.SUCCESS) {
                    out.context = context;
                    out.endpoint = endpoint;
                    out.type = type(op);
                    out.status = status;
                    out.bytes = status == RdmaStatus.SUCCESS ? bytes : 0;
                    out.tokenInvalidated = false;
                    out.token = 0;
                    cq.enqueueLocked(out);
                }
            }
            drainSynthetic(cq);
        }
        if (connection.closeRequested() && outstanding() == 0) {
            release.run();
        }
    }

    /**
     * Reports the synthetic requests that are next in line, in order. Under the send completion
     * queue's lock.
     */
    void drainSynthetic(VerbsCompletionQueue cq) {
        for (int slot; (slot = sendQueue.nextSynthetic()) >= 0;) {
            byte flag = sendQueue.flags(slot);
            if ((flag & SendQueueLedger.INTERNAL) != 0) {
                // a deferred bind that never reached the device: its window is free to go
                VerbsMemoryRegion region = sendQueue.region(slot);
                sendQueue.retire(slot);
                registrations.bindSettled(region);
                continue;
            }
            VerbsCompletionQueue.Entry e = new VerbsCompletionQueue.Entry();
            e.context = sendQueue.context(slot);
            e.endpoint = endpoint;
            e.type = type(sendQueue.opcode(slot));
            e.status = (flag & SendQueueLedger.SYNTHETIC_INVALID) != 0 ? RdmaStatus.INVALID_TOKEN : RdmaStatus.FLUSHED;
            sendQueue.retire(slot);
            if ((flag & SendQueueLedger.SYNTHETIC_INVALID) != 0) {
                connection.requestFailed(RdmaStatus.INVALID_TOKEN, "a local invalidate named a token that was already "
                        + "invalidated or deregistered");
                connection.qpToErrorQuietly();
            }
            cq.enqueueLocked(e);
        }
    }
}
