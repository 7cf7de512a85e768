package org.smbdirect.rdma.verbs.internal;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds the RDMA devices a provider can be made for: devices that rdma_cm can bind to through a
 * local IPv4 or IPv6 address. Touches no native resource beyond that probe and starts no thread.
 */
final class Discovery {

    /** A usable device and its addresses. */
    static final class Device {
        final String name;
        /** IPv4 first, then global IPv6, then link-local IPv6: the first is where the provider binds by default. */
        final List<InetAddress> addresses;

        Device(String name, List<InetAddress> addresses) {
            this.name = name;
            List<InetAddress> sorted = new ArrayList<>(addresses);
            sorted.sort(Comparator.comparingInt(Discovery::preference));
            this.addresses = List.copyOf(sorted);
        }
    }

    /** What discovery found: devices, or the one reason there are none. */
    static final class Result {
        final List<Device> devices;
        final String reason;

        Result(List<Device> devices, String reason) {
            this.devices = List.copyOf(devices);
            this.reason = reason;
        }
    }

    private Discovery() {
    }

    static Result discover(Settings settings) {
        String failure = NativeLibrary.load();
        if (failure != null) {
            return none(failure);
        }
        try {
            String[] names;
            try {
                names = VerbsNative.deviceNames();
            } catch (NativeException e) {
                return none(e.meansNoDevice() ? "no RDMA device (no RDMA support in this kernel: " + e.getMessage() + ")"
                        : "cannot list RDMA devices (" + e.getMessage() + ")");
            }
            if (names.length == 0) {
                return none("no RDMA device (ibv_get_device_list found none)");
            }
            Map<String, List<InetAddress>> byDevice = new LinkedHashMap<>();
            for (String name : names) {
                if (settings.devices.isEmpty() || settings.devices.contains(name)) {
                    byDevice.put(name, new ArrayList<>());
                }
            }
            if (byDevice.isEmpty()) {
                return none("none of the configured devices " + settings.devices + " exists (found "
                        + String.join(", ", names) + ")");
            }
            String[] pairs = VerbsNative.addressDevices();
            for (int i = 0; i + 1 < pairs.length; i += 2) {
                List<InetAddress> list = byDevice.get(pairs[i + 1]);
                if (list != null && pairs[i] != null) {
                    list.add(parse(pairs[i]));
                }
            }
            List<Device> devices = new ArrayList<>();
            List<String> withoutAddress = new ArrayList<>();
            byDevice.forEach((name, addresses) -> {
                if (addresses.isEmpty()) {
                    withoutAddress.add(name);
                } else {
                    devices.add(new Device(name, addresses));
                }
            });
            if (devices.isEmpty()) {
                return none("RDMA device(s) " + String.join(", ", withoutAddress)
                        + " have no IP address that rdma_cm can bind to");
            }
            return new Result(devices, null);
        } catch (NativeException e) {
            return none("RDMA device discovery failed (" + e.getMessage() + ")");
        } catch (LinkageError e) {
            return none(NativeLibrary.LOAD_FAILED + "libdisni.so is unusable (" + e + ")");
        }
    }

    /** A literal of the native side: a dotted quad or IPv6 text with a numeric scope. */
    private static InetAddress parse(String literal) throws NativeException {
        if (!literal.matches("[0-9A-Fa-f:.%]+")) {
            throw new NativeException("getifaddrs (address " + literal + ")", 22, "invalid address");
        }
        try {
            return InetAddress.getByName(literal); // a literal: no name service
        } catch (UnknownHostException e) {
            throw new NativeException("getifaddrs (address " + literal + ")", 22, "invalid address");
        }
    }

    private static int preference(InetAddress a) {
        if (a instanceof Inet4Address) {
            return 0;
        }
        return a instanceof Inet6Address && a.isLinkLocalAddress() ? 2 : 1;
    }

    private static Result none(String reason) {
        return new Result(List.of(), reason);
    }
}
