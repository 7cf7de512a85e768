package org.smbdirect.protocol.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.util.List;

import org.junit.jupiter.api.Test;

/** Which of the provider's addresses an outgoing connection starts from (MS-SMBD 3.1.4.1). */
class LocalAddressTest {
    private static final List<InetAddress> OWN = List.of(ip("10.99.0.1"), ip("10.99.1.1"), ip("fd99::1"),
            scoped("fe80::1", 2), scoped("fe80::2", 3));

    @Test
    void ipv4Peer_firstIpv4Address() {
        assertEquals(ip("10.99.0.1"), Establishment.localAddressFor(ip("10.99.1.7"), OWN));
    }

    @Test
    void ipv6Peer_firstIpv6Address() {
        assertEquals(ip("fd99::1"), Establishment.localAddressFor(ip("fd99::7"), OWN));
    }

    @Test
    void linkLocalPeerWithScope_addressOnThatLink() {
        InetAddress chosen = Establishment.localAddressFor(scoped("fe80::9", 3), OWN);
        assertEquals(ip("fe80::2"), chosen);
        assertEquals(3, ((Inet6Address) chosen).getScopeId());
    }

    @Test
    void noAddressOfThePeersFamily_none() {
        assertNull(Establishment.localAddressFor(ip("fd99::7"), List.of(ip("10.99.0.1"))));
        assertNull(Establishment.localAddressFor(ip("10.99.0.7"), List.of(ip("fd99::1"))));
    }

    private static InetAddress ip(String literal) {
        try {
            return InetAddress.getByName(literal);
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static InetAddress scoped(String literal, int scope) {
        try {
            return Inet6Address.getByAddress(null, InetAddress.getByName(literal).getAddress(), scope);
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
