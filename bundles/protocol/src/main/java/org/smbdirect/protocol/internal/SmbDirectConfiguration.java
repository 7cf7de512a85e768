package org.smbdirect.protocol.internal;

import org.smbdirect.transport.IrdOrdHeaderPolicy;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The typed OSGi configuration of the SMB Direct transport (PID {@code org.smbdirect.protocol}).
 * Defaults are the Windows product values of MS-SMBD section 7; ranges are checked by {@link
 * org.smbdirect.transport.SmbDirectConfig}.
 */
@ObjectClassDefinition(name = "SMB Direct transport",
        description = "MS-SMBD engine settings. Defaults are the Windows values of MS-SMBD section 7. "
                + "Changes apply to connections made afterwards.")
@interface SmbDirectConfiguration {

    @AttributeDefinition(name = "ReceiveCreditMax", min = "1", max = "65535",
            description = "Most receive credits granted to a peer (MS-SMBD 3.1.1.1, note 2); receive buffers "
                    + "start at 32 and grow to this while the peer is busy.")
    int receiveCreditMax() default 255;

    @AttributeDefinition(name = "SendCreditTarget", min = "1", max = "65535",
            description = "Send credits requested of a peer (note 2).")
    int sendCreditTarget() default 255;

    @AttributeDefinition(name = "MaxSendSize", min = "128", max = "16777216",
            description = "Largest message sent, header included (note 2).")
    int maxSendSize() default 1364;

    @AttributeDefinition(name = "MaxReceiveSize", min = "128", max = "16777216",
            description = "Largest message received (note 2).")
    int maxReceiveSize() default 8192;

    @AttributeDefinition(name = "MaxFragmentedRecvSize", min = "131072", max = "268435456",
            description = "Largest upper-layer message reassembled (note 2).")
    int maxFragmentedRecvSize() default 1048576;

    @AttributeDefinition(name = "MaxReadWriteSize", min = "0", max = "1073741824",
            description = "Largest RDMA transfer for one upper-layer request (notes 6, 7).")
    int maxReadWriteSize() default 8388608;

    @AttributeDefinition(name = "Keepalive interval (s)", min = "0", max = "86400",
            description = "Idle Connection Timer: idle time before a keepalive; 0 disables (note 1).")
    int keepaliveIntervalSeconds() default 120;

    @AttributeDefinition(name = "Keepalive response timeout (s)", min = "1", max = "3600",
            description = "How long a keepalive may stay unanswered (note 3).")
    int keepaliveResponseTimeoutSeconds() default 5;

    @AttributeDefinition(name = "Active negotiation timeout (s)", min = "1", max = "3600",
            description = "Negotiation Timer of the initiator (3.1.4.1).")
    int activeNegotiationTimeoutSeconds() default 120;

    @AttributeDefinition(name = "Passive negotiation timeout (s)", min = "1", max = "3600",
            description = "Negotiation Timer of the listener (3.1.7.2).")
    int passiveNegotiationTimeoutSeconds() default 5;

    @AttributeDefinition(name = "PreferredSendSize limit", min = "0", max = "16777216",
            description = "Negotiate Requests with a larger PreferredSendSize fail with "
                    + "STATUS_INSUFFICIENT_RESOURCES (note 5); 0 accepts any.")
    int preferredSendSizeLimit() default 8136;

    @AttributeDefinition(name = "IRD/ORD header",
            description = "When the IRD/ORD Negotiate Header of MS-SMBD section 6 travels in the private data: "
                    + "AUTO on iWARP only (as Windows and Linux), ALWAYS on every transport, NEVER.")
    IrdOrdHeaderPolicy irdOrdHeader() default IrdOrdHeaderPolicy.AUTO;

    @AttributeDefinition(name = "RNR retry count", min = "0", max = "7",
            description = "Transport retries of a send that finds no receive posted (7: until one is).")
    int rnrRetryCount() default 7;

    @AttributeDefinition(name = "Strict reassembly",
            description = "End the connection on an empty message inside a fragmented sequence "
                    + "(by default taken as credits and keepalive, as older Linux peers send them).")
    boolean strictReassembly() default false;

    @AttributeDefinition(name = "IRD", min = "1", max = "255", description = "Incoming RDMA Read depth offered.")
    int ird() default 16;

    @AttributeDefinition(name = "ORD", min = "1", max = "255", description = "Outgoing RDMA Read depth asked for.")
    int ord() default 16;

    @AttributeDefinition(name = "Send buffers", min = "1", max = "1024",
            description = "Most Data Transfer messages in flight per connection (registered on demand).")
    int sendBuffers() default 32;

    @AttributeDefinition(name = "Max pending sends", min = "1", max = "1048576",
            description = "Most upper-layer messages waiting to be sent per connection.")
    int maxPendingSends() default 1024;

    @AttributeDefinition(name = "Engine threads", min = "0", max = "256",
            description = "Threads running the protocol; 0 means one per processor. Applies on restart.")
    int engineThreads() default 0;

    @AttributeDefinition(name = "RDMA registration cache (bytes)", min = "0", max = "1073741824",
            description = "Bytes of upper-layer RDMA Read/Write buffers kept registered per connection (at most 16 buffers); 0 registers around every operation.")
    int rdmaRegistrationCacheBytes() default 67108864;

    @AttributeDefinition(name = "Engine spin (microseconds)", min = "0", max = "100000",
            description = "How long an idle engine thread polls for work before sleeping (busy polling; burns a core while it polls); 0 sleeps at once. Applies on restart.")
    int engineSpinMicroseconds() default 0;

    @AttributeDefinition(name = "Receive buffer budget", min = "0", max = "1048576",
            description = "Receive buffers all connections of the transport grow to together: a busy connection grows to its share (the budget divided by the connections, at least its first 32), at most receiveCreditMax; 0: no budget.")
    int receiveBufferBudget() default 4096;

    @AttributeDefinition(name = "Provider filter", required = false,
            description = "LDAP filter selecting the RDMA providers to use, e.g. (provider.type=sim).")
    String provider_target() default "(provider.type=*)";
}
