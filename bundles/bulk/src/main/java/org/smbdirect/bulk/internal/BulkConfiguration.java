package org.smbdirect.bulk.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The typed OSGi configuration of the bulk-transfer layer (PID {@code org.smbdirect.bulk}); ranges
 * are checked by {@link org.smbdirect.bulk.BulkConfig}.
 */
@ObjectClassDefinition(name = "SMB Direct bulk transfer",
        description = "The sockets-direct session protocol over SMB Direct. Changes apply to sessions made afterwards.")
@interface BulkConfiguration {

    @AttributeDefinition(name = "Inline threshold", min = "0", max = "1048576",
            description = "Sends up to this many bytes travel inline in one control message; larger ones by RDMA.")
    int inlineThreshold() default 8192;

    @AttributeDefinition(name = "Transfers in flight", min = "1", max = "64",
            description = "Large transfers a session moves at once.")
    int maxInFlight() default 4;

    @AttributeDefinition(name = "Maximum message size", min = "1", max = "2147483647",
            description = "The largest send, and the largest accepted from a peer.")
    int maxMessageSize() default 1 << 30;

    @AttributeDefinition(name = "Queued sends", min = "1", max = "65536",
            description = "Sends that may wait for their turn per session before further sends are refused.")
    int maxQueuedSends() default 64;
}
