package org.smbdirect.itest.traffic;

import java.util.BitSet;

import org.smbdirect.itest.lifecycle.probe.TrafficProbe;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.TerminationReason;

/**
 * What one end sent on one stream: which sequence numbers it handed to the transport, which of
 * those sends completed and which failed. At the end of a round, with both ends told of their end
 * and no send outstanding, {@link #match} holds it against what the other end received: every
 * message delivered once, in order (the receiver checks that as it goes), or lost with its
 * connection.
 */
final class Ledger {
    private long attempted;
    private final BitSet completed = new BitSet();
    private final BitSet failed = new BitSet();

    /** The sequence number of the next message to send. */
    synchronized long next() {
        return attempted++;
    }

    synchronized long attempted() {
        return attempted;
    }

    /** @return {@code false} when the send had completed or failed already */
    synchronized boolean completed(long seq) {
        return mark(completed, seq);
    }

    /** @return {@code false} when the send had completed or failed already */
    synchronized boolean failed(long seq) {
        return mark(failed, seq);
    }

    private boolean mark(BitSet set, long seq) {
        int i = Math.toIntExact(seq);
        if (completed.get(i) || failed.get(i)) {
            return false;
        }
        set.set(i);
        return true;
    }

    /**
     * The matching check of one direction.
     *
     * @param what names the direction, for messages
     * @param stream the sender's stream
     * @param receiver what the other end received
     * @param receiverEnd how the other end was told its connection ended
     * @param handedOverBeforePeerLoss whether the transport promises that what the sender saw
     *        complete reaches the receiver's upper layer before a loss by the peer's disconnect:
     *        SMB Direct messages do (MS-SMBD 3.1.7.1; the engine hands received messages over
     *        first); a bulk send completes when the peer's session holds the data, which a later
     *        send still in transfer may keep from delivery when the session ends
     * @param probe where problems and expected losses go
     * @return how many messages were lost with the connection (handed to the transport, not delivered)
     */
    synchronized long match(String what, int stream, Payload.Inbound receiver, ConnectionLoss receiverEnd,
            boolean handedOverBeforePeerLoss, TrafficProbe probe) {
        if (receiver.stream() != -1 && receiver.stream() != stream) {
            probe.problem(what + ": the receiving end got stream " + receiver.stream() + ", not " + stream, null);
            return 0;
        }
        long delivered = receiver.delivered();
        if (completed.cardinality() + failed.cardinality() != attempted) {
            probe.problem(what + ": of " + attempted + " sends, " + completed.cardinality() + " completed and "
                    + failed.cardinality() + " failed", null);
        }
        if (delivered > attempted) {
            probe.problem(what + ": " + delivered + " messages delivered of " + attempted + " sent", null);
            return 0;
        }
        int d = Math.toIntExact(delivered);
        // A send may fail with the connection's loss after its message arrived (the completion
        // raced with the end); the message then counts as delivered, once.
        probe.expected("delivered, its send failed with the connection's loss", failed.get(0, d).cardinality());
        int undelivered = completed.get(d, Math.toIntExact(attempted)).cardinality();
        if (undelivered > 0) {
            TerminationReason r = receiverEnd == null ? null : receiverEnd.reason();
            if (handedOverBeforePeerLoss && r == TerminationReason.PEER_DISCONNECTED) {
                // The receiver ended because its peer disconnected, not by its own close or its
                // provider's: what the peer saw complete was received, and reaches the upper layer
                // before the loss (MS-SMBD 3.1.7.1).
                probe.problem(what + ": " + undelivered + " sends completed (from message " + d
                        + ") but never delivered, though the receiving end ended by its peer's disconnect: "
                        + receiverEnd, null);
            } else {
                probe.expected("send completed, message lost with its connection (" + r + ")", undelivered);
            }
        }
        return attempted - delivered;
    }

    @Override
    public synchronized String toString() {
        return attempted + " sent, " + completed.cardinality() + " completed, " + failed.cardinality() + " failed";
    }
}
