package org.smbdirect.smbj.internal;

import org.osgi.service.metatype.annotations.AttributeDefinition;
import org.osgi.service.metatype.annotations.ObjectClassDefinition;

/**
 * The typed OSGi configuration of the smbj transport (PID {@code org.smbdirect.smbj}); ranges are
 * checked by {@link org.smbdirect.smbj.SmbjOptions}. Changes apply to connections made afterwards.
 */
@ObjectClassDefinition(name = "SMB3 over SMB Direct (smbj)",
        description = "How smbj's READ and WRITE requests use SMB Direct. Changes apply to connections made afterwards.")
@interface SmbjConfiguration {

    @AttributeDefinition(name = "RDMA channel",
            description = "Whether READ and WRITE data may move through the RDMA channel; otherwise all of it travels inline.")
    boolean rdmaChannel() default true;

    @AttributeDefinition(name = "RDMA threshold", min = "1",
            description = "READ and WRITE requests of at least this many bytes move their data by RDMA (default 4096, as Linux).")
    int rdmaThreshold() default 4096;

    @AttributeDefinition(name = "Remote invalidation",
            description = "Ask the server to invalidate each registration with its response (SMB 3.0.2 and 3.1.1).")
    boolean remoteInvalidation() default true;

    @AttributeDefinition(name = "Connect timeout", min = "1", max = "3600",
            description = "Seconds that connecting and negotiating SMB Direct may take.")
    int connectTimeoutSeconds() default 60;

    @AttributeDefinition(name = "READ parts", min = "1", max = "16",
            description = "A READ through the RDMA channel of at least 2 MiB travels as up to this many READs in flight "
                    + "at once, each of at least 1 MiB (1: never split).")
    int readParts() default 2;

    @AttributeDefinition(name = "WRITE parts", min = "1", max = "16",
            description = "A WRITE through the RDMA channel of at least 2 MiB travels as up to this many WRITEs in flight "
                    + "at once, each of at least 1 MiB (1: never split).")
    int writeParts() default 2;

    @AttributeDefinition(name = "Register ahead",
            description = "Where registrations are memory regions of their own (no memory windows, as on soft-iWARP), "
                    + "register a connection's next READ and WRITE buffers while the server serves the last ones; "
                    + "each such connection then keeps up to one READ's and one WRITE's buffer registered between requests.")
    boolean registerAhead() default true;

    @AttributeDefinition(name = "Strict signatures",
            description = "Refuse READ responses signed as ksmbd signs those without data (over the 4-byte transport "
                    + "length and the response, not the response alone as MS-SMB2 3.3.4.1.1 says). By default they are "
                    + "accepted, logged once per connection and counted: the signature is still a MAC under the session's key.")
    boolean strictSignatures() default false;

    @AttributeDefinition(name = "SMB Direct transport",
            description = "Filter selecting the SmbDirect service to use, e.g. (component.name=org.smbdirect.protocol).")
    String transport_target() default "(objectClass=org.smbdirect.transport.SmbDirect)";
}
