package org.smbdirect.rdma.verbs.internal;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds the RDMA devices a provider can be made for: devices that rdma_cm can bind to through a
 * local IPv4 address. Touches no native resource beyond that probe and starts no thread.
 */
final class Discovery {

    /** A usable device and its addresses. */
    static final class Device {
        final String name;
        final List<Inet4Address> addresses;

        Device(String name, List<Inet4Address> addresses) {
            this.name = name;
            this.addresses = List.copyOf(addresses);
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
            Map<String, List<Inet4Address>> byDevice = new LinkedHashMap<>();
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
                List<Inet4Address> list = byDevice.get(pairs[i + 1]);
                if (list != null && pairs[i] != null) {
                    list.add(ipv4(pairs[i]));
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
                        + " have no IPv4 address that rdma_cm can bind to");
            }
            return new Result(devices, null);
        } catch (NativeException e) {
            return none("RDMA device discovery failed (" + e.getMessage() + ")");
        } catch (LinkageError e) {
            return none(NativeLibrary.LOAD_FAILED + "libdisni.so is unusable (" + e + ")");
        }
    }

    private static Inet4Address ipv4(String dotted) throws NativeException {
        try {
            return (Inet4Address) InetAddress.getByName(dotted);
        } catch (UnknownHostException | ClassCastException e) {
            throw new NativeException("getifaddrs (address " + dotted + ")", 22, "invalid address");
        }
    }

    private static Result none(String reason) {
        return new Result(List.of(), reason);
    }
}
