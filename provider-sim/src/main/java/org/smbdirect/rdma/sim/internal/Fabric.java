package org.smbdirect.rdma.sim.internal;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * A simulated fabric: a namespace of addresses. Providers that should reach each other join the
 * same fabric (by name); each has one IPv4 address on it. The fabric knows who has which address,
 * who listens where, and which ports are bound. Fabrics exist while a provider uses them.
 *
 * <p>Connection set-up is not a hot path, so one lock (the class) guards every fabric.
 */
final class Fabric {
    private static final Map<String, Fabric> FABRICS = new HashMap<>();
    private static final int EPHEMERAL_FIRST = 32768;
    private static final int EPHEMERAL_LAST = 65535;

    final String name;
    private final Map<InetAddress, SimProvider> providers = new HashMap<>();
    private final Map<InetSocketAddress, SimListener> listeners = new HashMap<>();
    private final Set<InetSocketAddress> bound = new HashSet<>();
    private int nextHost = 1;
    private int nextPort = EPHEMERAL_FIRST;

    private Fabric(String name) {
        this.name = name;
    }

    /**
     * Adds a provider to the fabric of that name, creating it if needed, at the requested address or,
     * when empty, the next free address of 10.0.0.0/16.
     *
     * @return the fabric; the provider's address is then {@link #addressOf}
     * @throws IllegalArgumentException when the address is taken
     */
    static Fabric join(String name, SimProvider provider, String requested) {
        synchronized (Fabric.class) {
            Fabric f = FABRICS.computeIfAbsent(name, Fabric::new);
            InetAddress a;
            if (requested.isEmpty()) {
                a = null;
                for (int tries = 0; tries < 65536 && a == null; tries++) {
                    int h = f.nextHost;
                    f.nextHost = h % 65534 + 1;
                    if ((h & 0xff) == 0 || (h & 0xff) == 255) {
                        continue;
                    }
                    InetAddress candidate = literal("10.0." + (h >> 8 & 0xff) + "." + (h & 0xff));
                    if (!f.providers.containsKey(candidate)) {
                        a = candidate;
                    }
                }
                if (a == null) {
                    throw new IllegalArgumentException("fabric " + name + " has no free address left in 10.0.0.0/16");
                }
            } else {
                a = literal(requested);
                SimProvider other = f.providers.get(a);
                if (other != null) {
                    throw new IllegalArgumentException("invalid configuration: address = " + requested
                            + " is already used by provider " + other.name() + " on fabric " + name);
                }
            }
            f.providers.put(a, provider);
            return f;
        }
    }

    private static InetAddress literal(String s) {
        try {
            return InetAddress.getByName(s); // a validated literal: no name lookup happens
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("invalid address " + s, e);
        }
    }

    InetAddress addressOf(SimProvider p) {
        synchronized (Fabric.class) {
            for (Map.Entry<InetAddress, SimProvider> e : providers.entrySet()) {
                if (e.getValue() == p) {
                    return e.getKey();
                }
            }
            return null;
        }
    }

    void leave(SimProvider p) {
        synchronized (Fabric.class) {
            providers.values().remove(p);
            listeners.values().removeIf(l -> l.provider == p);
            if (providers.isEmpty()) {
                FABRICS.remove(name);
            }
        }
    }

    SimProvider providerAt(InetAddress a) {
        synchronized (Fabric.class) {
            return providers.get(a);
        }
    }

    SimListener listenerAt(InetSocketAddress a) {
        synchronized (Fabric.class) {
            return listeners.get(a);
        }
    }

    /** Binds a listener at {@code address} (port 0: a free port) and returns the address used. */
    InetSocketAddress listen(SimProvider p, InetSocketAddress address, java.util.function.Function<InetSocketAddress, SimListener> factory)
            throws RdmaException {
        synchronized (Fabric.class) {
            InetAddress ip = address.getAddress();
            InetAddress own = addressOf(p);
            if (ip == null || ip.isAnyLocalAddress()) {
                ip = own;
            } else if (!ip.equals(own)) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "listen: " + ip.getHostAddress()
                        + " is not this provider's address " + own.getHostAddress());
            }
            InetSocketAddress a;
            if (address.getPort() == 0) {
                a = freePort(ip);
            } else {
                a = new InetSocketAddress(ip, address.getPort());
                if (bound.contains(a)) {
                    throw new RdmaException(RdmaStatus.ADDRESS_IN_USE, "listen: " + a + " is in use");
                }
            }
            bound.add(a);
            listeners.put(a, factory.apply(a));
            return a;
        }
    }

    void unlisten(SimListener l) {
        synchronized (Fabric.class) {
            if (listeners.get(l.localAddress()) == l) {
                listeners.remove(l.localAddress());
                bound.remove(l.localAddress());
            }
        }
    }

    /** Picks a free local port for a connecting endpoint. */
    InetSocketAddress bindEphemeral(SimProvider p) throws RdmaException {
        synchronized (Fabric.class) {
            InetSocketAddress a = freePort(addressOf(p));
            bound.add(a);
            return a;
        }
    }

    void release(InetSocketAddress a) {
        if (a == null) {
            return;
        }
        synchronized (Fabric.class) {
            if (!listeners.containsKey(a)) {
                bound.remove(a);
            }
        }
    }

    private InetSocketAddress freePort(InetAddress ip) throws RdmaException {
        for (int i = 0; i <= EPHEMERAL_LAST - EPHEMERAL_FIRST; i++) {
            int port = nextPort;
            nextPort = port == EPHEMERAL_LAST ? EPHEMERAL_FIRST : port + 1;
            InetSocketAddress a = new InetSocketAddress(ip, port);
            if (!bound.contains(a)) {
                return a;
            }
        }
        throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "no free port left on " + ip.getHostAddress());
    }
}
