package org.smbdirect.protocol.internal;

import java.nio.ByteBuffer;

import org.smbdirect.protocol.wire.internal.IrdOrdHeader;
import org.smbdirect.protocol.wire.internal.NegotiateRequest;
import org.smbdirect.protocol.wire.internal.NegotiateResponse;
import org.smbdirect.protocol.wire.internal.Wire;
import org.smbdirect.rdma.TransportType;
import org.smbdirect.transport.ConnectionLoss;
import org.smbdirect.transport.SmbDirectConfig;
import org.smbdirect.transport.TerminationReason;

/**
 * The negotiation rules: MS-SMBD 3.1.5.2 (Sending a Negotiate Request), 3.1.5.3 (Sending a
 * Negotiate Response), 3.1.5.6 (Receiving a Negotiate Request), 3.1.5.7 (Receiving a Negotiate
 * Response), and section 6 (the IRD/ORD Negotiate Header, whose policy is {@link
 * IrdOrdNegotiation}'s). Pure: each rule reads and updates the {@link DataModel} and says what
 * follows; posting the messages and the receives is the connection's.
 */
final class Negotiator {

    /** What follows from a received negotiate message. */
    static final class Outcome {
        /** The message is acceptable; the data model holds the negotiated values. */
        static final Outcome ACCEPTED = new Outcome(null, 0, null);

        /** Why the connection ends, or {@code null} when accepted. */
        final ConnectionLoss loss;
        /**
         * The Status of a failure Negotiate Response to send before terminating (3.1.5.3), or 0 to
         * terminate at once.
         */
        final int failureStatus;
        /** The decoded message, for the log; {@code null} when too short to decode. */
        final Object message;

        private Outcome(ConnectionLoss loss, int failureStatus, Object message) {
            this.loss = loss;
            this.failureStatus = failureStatus;
            this.message = message;
        }

        static Outcome accepted(Object message) {
            return new Outcome(null, 0, message);
        }

        static Outcome terminate(TerminationReason reason, String detail, Object message) {
            return new Outcome(new ConnectionLoss(reason, detail), 0, message);
        }

        static Outcome refuse(int status, TerminationReason reason, String detail, Object message) {
            return new Outcome(new ConnectionLoss(reason, detail), status, message);
        }

        boolean isAccepted() {
            return loss == null;
        }
    }

    private Negotiator() {
    }

    /**
     * MS-SMBD 3.1.5.2 Sending a Negotiate Request: MinVersion and MaxVersion 0x0100, the local
     * SendCreditTarget, MaxSendSize as PreferredSendSize, MaxReceiveSize and
     * MaxFragmentedRecvSize.
     *
     * @param m the data model after 3.1.4.1's initial values
     * @return the request to send
     */
    static NegotiateRequest negotiateRequest(DataModel m) {
        return new NegotiateRequest(Wire.VERSION_1, Wire.VERSION_1, m.credits.sendCreditTarget, m.maxSendSize,
                m.maxReceiveSize, m.maxFragmentedRecvSize);
    }

    /**
     * MS-SMBD 3.1.5.6 Receiving a Negotiate Request: the checks, in the order of the text, then
     * Protocol, ReceiveCreditTarget, MaxReceiveSize, MaxSendSize and MaxFragmentedSendSize. The
     * receive credits are the caller's next step (3.1.5.9), and a failure to post any is refused
     * with STATUS_INSUFFICIENT_RESOURCES.
     *
     * @param m the data model (PASSIVE); updated when accepted
     * @param config for the PreferredSendSize limit (note 5)
     * @param b the received message
     * @param base where it starts
     * @param length its length as received
     * @return the outcome
     */
    static Outcome receiveNegotiateRequest(DataModel m, SmbDirectConfig config, ByteBuffer b, int base, int length) {
        if (length < NegotiateRequest.SIZE) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_REQUEST_TOO_SHORT, "length=" + length, null);
        }
        NegotiateRequest req = NegotiateRequest.decode(b.duplicate().position(base).limit(base + length));
        if (req.minVersion() > Wire.VERSION_1 || req.maxVersion() < Wire.VERSION_1) {
            return Outcome.refuse(Wire.STATUS_NOT_SUPPORTED, TerminationReason.NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED,
                    String.format("MinVersion=0x%04X, MaxVersion=0x%04X", req.minVersion(), req.maxVersion()), req);
        }
        // Otherwise MinVersion and MaxVersion are ignored (SHOULD; note 4 describes Windows Server 2012 only).
        if (req.creditsRequested() == 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_REQUEST_NO_CREDITS_REQUESTED, "CreditsRequested=0",
                    req);
        }
        if (Integer.compareUnsigned(req.maxReceiveSize(), Wire.MIN_RECEIVE_SIZE) < 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_REQUEST_MAX_RECEIVE_SIZE_TOO_SMALL,
                    "MaxReceiveSize=" + Integer.toUnsignedString(req.maxReceiveSize()), req);
        }
        if (Integer.compareUnsigned(req.maxFragmentedSize(), Wire.MIN_FRAGMENTED_SIZE) < 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_REQUEST_MAX_FRAGMENTED_SIZE_TOO_SMALL,
                    "MaxFragmentedSize=" + Integer.toUnsignedString(req.maxFragmentedSize()), req);
        }
        // Note 5: Windows Server 2012 R2 and later refuse a PreferredSendSize above 8136.
        int limit = config.preferredSendSizeLimit();
        if (limit != 0 && Integer.compareUnsigned(req.preferredSendSize(), limit) > 0) {
            return Outcome.refuse(Wire.STATUS_INSUFFICIENT_RESOURCES,
                    TerminationReason.NEGOTIATE_REQUEST_PREFERRED_SEND_SIZE_TOO_LARGE, "PreferredSendSize="
                            + Integer.toUnsignedString(req.preferredSendSize()) + ", limit " + limit, req);
        }
        m.maxReceiveSize = Math.max(minUnsigned(m.maxReceiveSize, req.preferredSendSize()), Wire.MIN_RECEIVE_SIZE);
        m.protocol = Wire.VERSION_1;
        m.credits.receiveCreditTarget = req.creditsRequested();
        m.maxSendSize = minUnsigned(m.maxSendSize, req.maxReceiveSize());
        m.maxFragmentedSendSize = unsignedCapped(req.maxFragmentedSize());
        return Outcome.accepted(req);
    }

    /**
     * MS-SMBD 3.1.5.3 Sending a Negotiate Response, success form.
     *
     * @param m the data model after 3.1.5.6 and 3.1.5.9
     * @param granted CreditsGranted: the receives posted
     * @return the response to send
     */
    static NegotiateResponse negotiateResponse(DataModel m, int granted) {
        return new NegotiateResponse(Wire.VERSION_1, Wire.VERSION_1, m.protocol, m.credits.sendCreditTarget, granted,
                Wire.STATUS_SUCCESS, m.maxReadWriteSize, m.maxSendSize, m.maxReceiveSize, m.maxFragmentedRecvSize);
    }

    /**
     * MS-SMBD 3.1.5.3, failure form: every field but the versions and the Status zero.
     *
     * @param status the failure status
     * @return the response to send
     */
    static NegotiateResponse negotiateResponseFailure(int status) {
        return NegotiateResponse.failure(status);
    }

    /**
     * MS-SMBD 3.1.5.7 Receiving a Negotiate Response: the Status first (a refusal carries zeros
     * elsewhere, and the refusal is the real reason), then the checks in the order of the text;
     * then Protocol, ReceiveCreditTarget, MaxReceiveSize, MaxSendSize, MaxReadWriteSize (bounded by
     * the local limit, note 6), SendCredits and MaxFragmentedSendSize.
     *
     * @param m the data model (ACTIVE); updated when accepted
     * @param config for the local MaxReadWriteSize
     * @param b the received message
     * @param base where it starts
     * @param length its length as received
     * @return the outcome
     */
    static Outcome receiveNegotiateResponse(DataModel m, SmbDirectConfig config, ByteBuffer b, int base, int length) {
        if (length < NegotiateResponse.SIZE) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_TOO_SHORT, "length=" + length, null);
        }
        NegotiateResponse rsp = NegotiateResponse.decode(b.duplicate().position(base).limit(base + length));
        if (rsp.status() != Wire.STATUS_SUCCESS) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_FAILED_STATUS,
                    "Status=" + Wire.statusName(rsp.status()), rsp);
        }
        if (rsp.negotiatedVersion() != Wire.VERSION_1) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_BAD_VERSION,
                    String.format("NegotiatedVersion=0x%04X", rsp.negotiatedVersion()), rsp);
        }
        if (Integer.compareUnsigned(rsp.maxReceiveSize(), Wire.MIN_RECEIVE_SIZE) < 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_MAX_RECEIVE_SIZE_TOO_SMALL,
                    "MaxReceiveSize=" + Integer.toUnsignedString(rsp.maxReceiveSize()), rsp);
        }
        if (Integer.compareUnsigned(rsp.maxFragmentedSize(), Wire.MIN_FRAGMENTED_SIZE) < 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_MAX_FRAGMENTED_SIZE_TOO_SMALL,
                    "MaxFragmentedSize=" + Integer.toUnsignedString(rsp.maxFragmentedSize()), rsp);
        }
        if (rsp.creditsGranted() == 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_NO_CREDITS_GRANTED, "CreditsGranted=0", rsp);
        }
        if (rsp.creditsRequested() == 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_NO_CREDITS_REQUESTED, "CreditsRequested=0",
                    rsp);
        }
        if (Integer.compareUnsigned(rsp.preferredSendSize(), m.maxReceiveSize) > 0) {
            return Outcome.terminate(TerminationReason.NEGOTIATE_RESPONSE_PREFERRED_SEND_SIZE_TOO_LARGE,
                    "PreferredSendSize=" + Integer.toUnsignedString(rsp.preferredSendSize()) + ", MaxReceiveSize="
                            + m.maxReceiveSize, rsp);
        }
        m.protocol = Wire.VERSION_1;
        m.credits.receiveCreditTarget = rsp.creditsRequested();
        m.maxReceiveSize = Math.max(minUnsigned(m.maxReceiveSize, rsp.preferredSendSize()), Wire.MIN_RECEIVE_SIZE);
        m.maxSendSize = minUnsigned(m.maxSendSize, rsp.maxReceiveSize());
        // Note 6: the local limit is the configured MaxReadWriteSize (8 MiB by default).
        m.maxReadWriteSize = minUnsigned(config.maxReadWriteSize(), rsp.maxReadWriteSize());
        m.credits.sendCredits = rsp.creditsGranted();
        m.maxFragmentedSendSize = unsignedCapped(rsp.maxFragmentedSize());
        return Outcome.accepted(rsp);
    }

    // ---------------------------------------------------------------- section 6

    /** The private data of an acceptance and the depths the accepting peer uses, or why it refuses. */
    static final class Acceptance {
        final IrdOrdNegotiation.Depths depths;
        final byte[] replyPrivateData;
        final ConnectionLoss refusal;

        Acceptance(IrdOrdNegotiation.Depths depths, byte[] replyPrivateData, ConnectionLoss refusal) {
            this.depths = depths;
            this.replyPrivateData = replyPrivateData;
            this.refusal = refusal;
        }
    }

    /**
     * The private data of a connection request (MS-SMBD 6.1): the IRD/ORD Negotiate Header where
     * the transport carries it under the configured policy, else none.
     *
     * @param config the configuration
     * @param transport the provider's transport
     * @param ird this side's IRD
     * @param ord this side's ORD
     * @return the private data, or {@code null}
     */
    static byte[] requestPrivateData(SmbDirectConfig config, TransportType transport, int ird, int ord) {
        return IrdOrdNegotiation.requestPrivateData(config.irdOrdHeader(), transport, ird, ord);
    }

    /**
     * MS-SMBD 6.2 for the accepting peer: answers a header when the policy reads one on this
     * transport (connection-manager padding is never one), refusing a reply of zeros; without a
     * header the connection manager's values decide.
     *
     * @param config the configuration
     * @param transport the provider's transport
     * @param peerPrivateData the request's private data
     * @param peerIrd the IRD the connection manager delivered
     * @param peerOrd the ORD the connection manager delivered
     * @param localIrd this side's IRD
     * @param localOrd this side's ORD
     * @return the depths and reply, or the refusal
     */
    static Acceptance accept(SmbDirectConfig config, TransportType transport, byte[] peerPrivateData, int peerIrd,
            int peerOrd, int localIrd, int localOrd) {
        IrdOrdHeader requested = IrdOrdNegotiation.receivedHeader(config.irdOrdHeader(), transport, peerPrivateData);
        if (requested == null) {
            return new Acceptance(IrdOrdNegotiation.fromConnectionManager(localIrd, localOrd, peerIrd, peerOrd), null,
                    null);
        }
        // The provider's IRD and ORD are the values sent.
        IrdOrdHeader answer = IrdOrdHeader.reply(requested, localIrd, localOrd);
        if (!answer.isValid()) {
            return new Acceptance(null, null,
                    new ConnectionLoss(TerminationReason.IRD_ORD_ZERO, requested + " answered with " + answer));
        }
        return new Acceptance(IrdOrdNegotiation.acceptorFromAnswer(answer), answer.toPrivateData(), null);
    }

    /**
     * MS-SMBD 6.2 for the connecting peer, once established: the values the accepting peer
     * transmitted where the policy reads a header on this transport, else the connection manager's
     * (the endpoint's depths).
     *
     * @param config the configuration
     * @param transport the provider's transport
     * @param peerPrivateData the acceptance's private data
     * @param offeredIrd the IRD this side sent
     * @param offeredOrd the ORD this side sent
     * @param endpointIrd the endpoint's IRD in force
     * @param endpointOrd the endpoint's ORD in force
     * @return the depths, or a {@link TerminationReason#IRD_ORD_ZERO} loss in {@link Acceptance#refusal}
     */
    static Acceptance established(SmbDirectConfig config, TransportType transport, byte[] peerPrivateData,
            int offeredIrd, int offeredOrd, int endpointIrd, int endpointOrd) {
        IrdOrdHeader answer = IrdOrdNegotiation.receivedHeader(config.irdOrdHeader(), transport, peerPrivateData);
        if (answer == null) {
            return new Acceptance(new IrdOrdNegotiation.Depths(endpointIrd, endpointOrd), null, null);
        }
        if (!answer.isValid()) {
            return new Acceptance(null, null, new ConnectionLoss(TerminationReason.IRD_ORD_ZERO, "the peer answered "
                    + answer));
        }
        return new Acceptance(IrdOrdNegotiation.initiatorFromAnswer(offeredIrd, offeredOrd, answer), null, null);
    }

    private static int minUnsigned(int local, int received) {
        return Integer.compareUnsigned(local, received) <= 0 ? local : received;
    }

    private static int unsignedCapped(int v) {
        return (int) Math.min(Integer.toUnsignedLong(v), Integer.MAX_VALUE);
    }
}
