package org.smbdirect.shell.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import org.junit.jupiter.api.Test;

class PeerAddressTest {

    @Test
    void ipv4_withAndWithoutPort() throws Exception {
        PeerAddress a = PeerAddress.parse("10.0.1.2:5445", 1);
        assertEquals(InetAddress.getByName("10.0.1.2"), a.host);
        assertEquals(5445, a.port);
        PeerAddress b = PeerAddress.parse("10.0.1.2", 1);
        assertTrue(b.host instanceof Inet4Address);
        assertEquals(-1, b.port, "no port: the transport's port for its type decides");
    }

    @Test
    void ipv6_bracketedWithPort_bareWithout() throws Exception {
        PeerAddress a = PeerAddress.parse("[fd00::2]:445", 1);
        assertEquals(InetAddress.getByName("fd00::2"), a.host);
        assertEquals(445, a.port);
        PeerAddress b = PeerAddress.parse("fd00::2", 1);
        assertTrue(b.host instanceof Inet6Address);
        assertEquals(-1, b.port);
        PeerAddress c = PeerAddress.parse("[fe80::1%1]", 1);
        assertEquals(1, ((Inet6Address) c.host).getScopeId());
        assertEquals(-1, c.port);
    }

    @Test
    void portOnly_orNothing_isTheProvidersOwnAddress() throws Exception {
        PeerAddress a = PeerAddress.parse(":6000", 0);
        assertNull(a.host);
        assertEquals(6000, a.port);
        PeerAddress b = PeerAddress.parse(null, 0);
        assertNull(b.host);
        assertEquals(-1, b.port);
        assertEquals(0, PeerAddress.parse(":0", 0).port, "listening: 0 picks a port");
    }

    @Test
    void mistakes_sayWhatIsWrong() {
        assertEquals("'300.1.1.1' is not an IPv4 address", message("300.1.1.1:445", 1));
        assertEquals("'1.2.3' is not an IPv4 address", message("1.2.3", 1));
        assertEquals("'fd00::zz' is not an IPv6 address", message("[fd00::zz]:445", 1));
        assertEquals("'10.0.0.1' is not an IPv6 address", message("[10.0.0.1]:445", 1));
        assertEquals("'[fd00::2': '[' without ']' (write [IPV6]:PORT)", message("[fd00::2", 1));
        assertEquals("'[fd00::2]445': expected :PORT after ']'", message("[fd00::2]445", 1));
        assertTrue(message("10.0.0.1:0", 1).startsWith("port"), message("10.0.0.1:0", 1));
        assertTrue(message("10.0.0.1:70000", 1).startsWith("port"));
    }

    private static String message(String text, int minPort) {
        return assertThrows(UsageException.class, () -> PeerAddress.parse(text, minPort)).getMessage();
    }
}
