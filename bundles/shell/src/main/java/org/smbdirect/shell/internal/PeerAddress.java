package org.smbdirect.shell.internal;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.regex.Pattern;

/**
 * What the user wrote for an address: {@code A.B.C.D[:PORT]}, {@code [IPV6][:PORT]}, a bare IPv6
 * literal, {@code HOST[:PORT]} or {@code :PORT}. An absent host means the provider's own address,
 * an absent port the transport's port for its RDMA transport type (445 on InfiniBand and RoCE,
 * 5445 on iWARP), so both are left to the caller.
 */
final class PeerAddress {
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
    private static final Pattern DIGITS = Pattern.compile("\\d+");

    /** The host, or {@code null} for the provider's own address. */
    final InetAddress host;
    /** The port, or -1 when none was given. */
    final int port;

    private PeerAddress(InetAddress host, int port) {
        this.host = host;
        this.port = port;
    }

    /**
     * Parses an address argument.
     *
     * @param text the argument; {@code null} or empty for neither host nor port
     * @param minPort the lowest port accepted (0 where 0 means "pick one")
     * @return the parsed address
     * @throws UsageException naming what is wrong with it
     */
    static PeerAddress parse(String text, int minPort) throws UsageException {
        String s = text == null ? "" : text.trim();
        String host = s;
        String port = null;
        if (s.startsWith("[")) {
            int close = s.indexOf(']');
            if (close < 0) {
                throw new UsageException("'" + s + "': '[' without ']' (write [IPV6]:PORT)");
            }
            host = s.substring(1, close);
            String rest = s.substring(close + 1);
            if (!rest.isEmpty()) {
                if (!rest.startsWith(":")) {
                    throw new UsageException("'" + s + "': expected :PORT after ']'");
                }
                port = rest.substring(1);
            }
            if (!host.contains(":")) {
                throw new UsageException("'" + host + "' is not an IPv6 address");
            }
        } else {
            int colon = s.indexOf(':');
            if (colon >= 0 && colon == s.lastIndexOf(':')) {
                host = s.substring(0, colon);
                port = s.substring(colon + 1);
            }
            // Two colons or more without brackets: a bare IPv6 literal, no port.
        }
        int p = port == null ? -1 : Units.parseInt("port", port, minPort, 65535);
        return new PeerAddress(host.isEmpty() ? null : resolve(host), p);
    }

    private static InetAddress resolve(String host) throws UsageException {
        if (IPV4.matcher(host).matches()) {
            byte[] bytes = new byte[4];
            String[] parts = host.split("\\.");
            for (int i = 0; i < 4; i++) {
                int v = Integer.parseInt(parts[i]);
                if (v > 255) {
                    throw new UsageException("'" + host + "' is not an IPv4 address");
                }
                bytes[i] = (byte) v;
            }
            return literal(bytes, host);
        }
        if (host.contains(":")) {
            // A literal never goes to the resolver: getByName parses it or rejects it.
            if (!host.matches("[0-9A-Fa-f:.]+(%[\\w.-]+)?")) {
                throw new UsageException("'" + host + "' is not an IPv6 address");
            }
            try {
                return InetAddress.getByName(host);
            } catch (UnknownHostException e) {
                throw new UsageException("'" + host + "' is not an IPv6 address");
            }
        }
        if (DIGITS.matcher(host.replace(".", "")).matches()) {
            throw new UsageException("'" + host + "' is not an IPv4 address");
        }
        try {
            return InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new UsageException("cannot resolve host name '" + host + "'");
        }
    }

    private static InetAddress literal(byte[] bytes, String text) throws UsageException {
        try {
            return InetAddress.getByAddress(bytes);
        } catch (UnknownHostException e) {
            throw new UsageException("'" + text + "' is not an address");
        }
    }
}
