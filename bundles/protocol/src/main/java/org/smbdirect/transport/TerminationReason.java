package org.smbdirect.transport;

/**
 * Why a connection ended (MS-SMBD 3.1.7.1 Connection Loss), one constant per distinct cause, so
 * that an upper layer, a log or a statistics table can tell them apart. {@link ConnectionLoss}
 * adds the details.
 */
public enum TerminationReason {
    // ------------------------------------------------------------ local and transport causes
    /** The upper layer closed the connection. */
    LOCAL_CLOSE("closed by the local upper layer", null),
    /** The peer disconnected the RDMA connection. */
    PEER_DISCONNECTED("the peer disconnected", null),
    /** The RDMA provider carrying the connection went away (its bundle stopped or it was closed). */
    PROVIDER_STOPPED("the RDMA provider carrying the connection stopped", null),
    /** The transport service was shut down. */
    TRANSPORT_SHUTDOWN("the SMB Direct transport was shut down", null),
    /** The RDMA connection could not be established (refused, unreachable, timed out). */
    CONNECT_FAILED("the RDMA connection could not be established", "3.1.4.1"),
    /** The RDMA provider reported a failed work request or a connection error. */
    TRANSPORT_ERROR("the RDMA provider reported an error", "3.1.4.2"),
    /** Local resources (memory, registrations, queue entries) could not be obtained. */
    LOCAL_RESOURCES("local resources could not be obtained", null),

    // ------------------------------------------------------------ timers
    /** The negotiation did not complete in time. */
    NEGOTIATION_TIMEOUT("negotiation did not complete in time", "3.1.6.1"),
    /** A keepalive (SMB_DIRECT_RESPONSE_REQUESTED) was not answered in time. */
    KEEPALIVE_TIMEOUT("the peer did not answer a keepalive in time", "3.1.6.2"),

    // ------------------------------------------------------------ IRD/ORD (section 6)
    /** The IRD/ORD negotiation resulted in a zero IRD or ORD. */
    IRD_ORD_ZERO("the IRD/ORD negotiation resulted in zero", "6.2"),

    // ------------------------------------------------------------ Negotiate Request checks
    /** A Negotiate Request shorter than 20 bytes. */
    NEGOTIATE_REQUEST_TOO_SHORT("Negotiate Request shorter than 20 bytes", "3.1.5.6"),
    /** A Negotiate Request whose version range does not include 0x0100. */
    NEGOTIATE_REQUEST_VERSION_NOT_SUPPORTED("Negotiate Request version range excludes 0x0100", "3.1.5.6"),
    /** A Negotiate Request with CreditsRequested 0. */
    NEGOTIATE_REQUEST_NO_CREDITS_REQUESTED("Negotiate Request with CreditsRequested 0", "3.1.5.6"),
    /** A Negotiate Request with MaxReceiveSize below 128. */
    NEGOTIATE_REQUEST_MAX_RECEIVE_SIZE_TOO_SMALL("Negotiate Request with MaxReceiveSize below 128", "3.1.5.6"),
    /** A Negotiate Request with MaxFragmentedSize below 131072. */
    NEGOTIATE_REQUEST_MAX_FRAGMENTED_SIZE_TOO_SMALL("Negotiate Request with MaxFragmentedSize below 131072",
            "3.1.5.6"),
    /** A Negotiate Request with PreferredSendSize above the configured limit (Windows behaviour, note 5). */
    NEGOTIATE_REQUEST_PREFERRED_SEND_SIZE_TOO_LARGE("Negotiate Request with PreferredSendSize above the limit",
            "3.1.5.6"),
    /** No receive credits could be posted after the Negotiate Request. */
    NEGOTIATE_NO_RECEIVE_CREDITS("no receive credits could be posted", "3.1.5.6"),

    // ------------------------------------------------------------ Negotiate Response checks
    /** A Negotiate Response shorter than 32 bytes. */
    NEGOTIATE_RESPONSE_TOO_SHORT("Negotiate Response shorter than 32 bytes", "3.1.5.7"),
    /** A Negotiate Response with a Status other than STATUS_SUCCESS: the peer refused. */
    NEGOTIATE_RESPONSE_FAILED_STATUS("the peer refused the negotiation", "3.1.5.7"),
    /** A Negotiate Response whose NegotiatedVersion is not 0x0100. */
    NEGOTIATE_RESPONSE_BAD_VERSION("Negotiate Response with NegotiatedVersion other than 0x0100", "3.1.5.7"),
    /** A Negotiate Response with MaxReceiveSize below 128. */
    NEGOTIATE_RESPONSE_MAX_RECEIVE_SIZE_TOO_SMALL("Negotiate Response with MaxReceiveSize below 128", "3.1.5.7"),
    /** A Negotiate Response with MaxFragmentedSize below 131072. */
    NEGOTIATE_RESPONSE_MAX_FRAGMENTED_SIZE_TOO_SMALL("Negotiate Response with MaxFragmentedSize below 131072",
            "3.1.5.7"),
    /** A Negotiate Response with CreditsGranted 0. */
    NEGOTIATE_RESPONSE_NO_CREDITS_GRANTED("Negotiate Response with CreditsGranted 0", "3.1.5.7"),
    /** A Negotiate Response with CreditsRequested 0. */
    NEGOTIATE_RESPONSE_NO_CREDITS_REQUESTED("Negotiate Response with CreditsRequested 0", "3.1.5.7"),
    /** A Negotiate Response with PreferredSendSize above our MaxReceiveSize. */
    NEGOTIATE_RESPONSE_PREFERRED_SEND_SIZE_TOO_LARGE(
            "Negotiate Response with PreferredSendSize above our MaxReceiveSize", "3.1.5.7"),

    // ------------------------------------------------------------ Data Transfer checks
    /** A Data Transfer message shorter than 20 bytes. */
    DATA_TRANSFER_TOO_SHORT("Data Transfer message shorter than 20 bytes", "3.1.5.8"),
    /** A Data Transfer message with CreditsRequested 0. */
    DATA_TRANSFER_NO_CREDITS_REQUESTED("Data Transfer message with CreditsRequested 0", "3.1.5.8"),
    /** A Data Transfer message whose DataOffset is not 8-byte aligned. */
    DATA_OFFSET_NOT_ALIGNED("DataOffset not 8-byte aligned", "3.1.5.8"),
    /** A Data Transfer message whose DataOffset + DataLength exceeds the message. */
    DATA_BEYOND_MESSAGE("DataOffset + DataLength beyond the end of the message", "3.1.5.8"),
    /** DataLength + RemainingDataLength exceeds MaxFragmentedRecvSize. */
    FRAGMENTED_SIZE_EXCEEDED("DataLength + RemainingDataLength exceeds MaxFragmentedSize", "3.1.5.8"),
    /** The final fragment arrived while reassembly still expected bytes. */
    REASSEMBLY_INCOMPLETE("final fragment arrived before the announced data was complete", "3.1.5.8"),
    /**
     * A continuation fragment carried more data than the sequence announced, or a
     * RemainingDataLength that contradicts the sequence.
     */
    REASSEMBLY_OVERRUN("fragment inconsistent with the announced RemainingDataLength", "3.1.5.8"),
    /** The peer sent a message without holding a send credit. */
    SEND_WITHOUT_CREDIT("the peer sent a message without a send credit", "3.1.5.8"),
    /** The peer granted more send credits than can be counted (more than 65535 outstanding). */
    SEND_CREDITS_OVERFLOW("the peer granted more than 65535 send credits", "3.1.5.8"),
    /** The peer invalidated a token that was not registered for remote access on this connection. */
    INVALID_TOKEN_INVALIDATED("the peer invalidated an unknown token", "3.1.5.8");

    private final String description;
    private final String section;

    TerminationReason(String description, String section) {
        this.description = description;
        this.section = section;
    }

    /**
     * A short readable description.
     *
     * @return the description
     */
    public String description() {
        return description;
    }

    /**
     * The MS-SMBD section whose rule ended the connection, or {@code null} when no protocol rule
     * did (a local close, a peer disconnect).
     *
     * @return for example {@code "3.1.5.8"}, or {@code null}
     */
    public String section() {
        return section;
    }

    /**
     * Whether the peer broke a rule of MS-SMBD (as opposed to a local, timer or transport cause).
     *
     * @return {@code true} for the Negotiate and Data Transfer checks
     */
    public boolean isProtocolViolation() {
        return ordinal() >= NEGOTIATE_REQUEST_TOO_SHORT.ordinal() && this != NEGOTIATE_NO_RECEIVE_CREDITS;
    }
}
