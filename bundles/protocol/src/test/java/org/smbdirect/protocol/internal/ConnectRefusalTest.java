package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.RdmaStatus;
import org.smbdirect.rdma.TransportType;

/**
 * MS-SMBD 3.1.4.1 (a failed connection request is returned to the upper layer), with what a refusal
 * can mean: the other transport's port (MS-SMB2 2.1, which Linux's ksmbd keeps to) or a busy
 * listener; the provider's words always come first and stay whole.
 */
class ConnectRefusalTest {
    @Test
    void roce_port5445_refused_namesIWarpsPortAnd445() {
        String s = ConnectRefusal.explain(RdmaStatus.CONNECTION_REFUSED, "the peer rejected the connection (reject reason 28)",
                TransportType.ROCE, 5445);
        assertEquals("the peer rejected the connection (reject reason 28); port 5445 is SMB Direct's port for iWARP, and "
                + "RoCE uses 445 (MS-SMB2 2.1): Linux ksmbd takes RoCE on 445 only", s);
    }

    @Test
    void iwarp_port445_refused_namesInfiniBandsPortAnd5445() {
        String s = ConnectRefusal.explain(RdmaStatus.CONNECTION_REFUSED, "nobody listens at /10.99.0.1:445",
                TransportType.IWARP, 445);
        assertEquals("nobody listens at /10.99.0.1:445; port 445 is SMB Direct's port for InfiniBand and RoCE, and iWARP "
                + "uses 5445 (MS-SMB2 2.1): Linux ksmbd takes iWARP on 5445 only", s);
    }

    @Test
    void rightPort_rejectedByAListener_saysTheServerMayBeBusy() {
        String s = ConnectRefusal.explain(RdmaStatus.CONNECTION_REFUSED, "the peer rejected the connection (reject reason 28)",
                TransportType.ROCE, 445);
        assertTrue(s.startsWith("the peer rejected the connection (reject reason 28); "), s);
        assertTrue(s.contains("more than 10 connection requests are pending): try again"), s);
    }

    @Test
    void rightPort_nobodyListening_orAnotherPort_orAnotherStatus_theProvidersWordsAlone() {
        assertEquals("nobody listens at /10.99.0.1:445",
                ConnectRefusal.explain(RdmaStatus.CONNECTION_REFUSED, "nobody listens at /10.99.0.1:445", TransportType.ROCE, 445));
        assertEquals("nobody listens at /10.99.0.1:4444",
                ConnectRefusal.explain(RdmaStatus.CONNECTION_REFUSED, "nobody listens at /10.99.0.1:4444", TransportType.ROCE, 4444));
        assertEquals("route resolution timed out",
                ConnectRefusal.explain(RdmaStatus.TIMEOUT, "route resolution timed out", TransportType.ROCE, 5445));
    }
}
