package org.smbdirect.rdma.sim.internal;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

import org.smbdirect.rdma.ProviderCapabilities;
import org.smbdirect.rdma.TransportType;

/**
 * A validated, immutable snapshot of a {@link SimConfig}. Every range check of the configuration
 * lives here and names the key and its range.
 */
final class SimSettings {
    private static final Pattern IPV4 = Pattern.compile("(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})\\.(\\d{1,3})");

    final String name;
    final String fabric;
    final String address;
    final ProviderCapabilities capabilities;
    final int fabricThreads;
    final int connectTimeoutMillis;
    final boolean latencyEnabled;
    final int latencyMicros;
    final int bandwidthMbps;
    final long faultSeed;
    final int disconnectAfterOperations;
    final double disconnectProbability;
    final double registrationFailureProbability;
    final int registrationFailureEvery;
    final double delayProbability;
    final int delayMillis;
    final double receiverNotReadyProbability;
    final boolean captureEnabled;
    final String capturePath;
    final long captureMaxFileBytes;
    final int captureSnapLength;
    final int captureMtu;

    private SimSettings(SimConfig c) {
        name = checkName("name", c.name(), true);
        fabric = checkName("fabric", c.fabric(), false);
        address = checkAddress(c.address());
        capabilities = ProviderCapabilities.builder()
                .rdmaRead(c.rdmaRead())
                .remoteInvalidate(c.remoteInvalidate())
                .inlineLimit(range("inlineLimit", c.inlineLimit(), 0, 4096))
                .maxSge(range("maxSge", c.maxSge(), 1, 64))
                .maxRegionSize(range("maxRegionSize", c.maxRegionSize(), 1, Integer.MAX_VALUE))
                .maxIrd(range("maxIrd", c.maxIrd(), 0, 255))
                .maxOrd(range("maxOrd", c.maxOrd(), 0, 255))
                .maxQueueDepth(range("maxQueueDepth", c.maxQueueDepth(), 1, 65536))
                .maxCompletionQueueDepth(range("maxCompletionQueueDepth", c.maxCompletionQueueDepth(), 1, 1 << 22))
                .maxPrivateData(range("maxPrivateData", c.maxPrivateData(), 0, 56))
                .transportType(transport(c.transport()))
                .linkSpeed(range("linkSpeedMbps", c.linkSpeedMbps(), 0, 10_000_000) * 1_000_000L)
                .build();
        fabricThreads = range("fabricThreads", c.fabricThreads(), 1, 64);
        connectTimeoutMillis = range("connectTimeoutMillis", c.connectTimeoutMillis(), 1, 3_600_000);
        latencyEnabled = c.latency_enabled();
        latencyMicros = range("latency.microseconds", c.latency_microseconds(), 0, 10_000_000);
        bandwidthMbps = range("latency.bandwidthMbps", c.latency_bandwidthMbps(), 1, 10_000_000);
        faultSeed = c.faults_seed();
        disconnectAfterOperations = range("faults.disconnectAfterOperations", c.faults_disconnectAfterOperations(), 0, Integer.MAX_VALUE);
        disconnectProbability = probability("faults.disconnectProbability", c.faults_disconnectProbability());
        registrationFailureProbability = probability("faults.registrationFailureProbability", c.faults_registrationFailureProbability());
        registrationFailureEvery = range("faults.registrationFailureEvery", c.faults_registrationFailureEvery(), 0, Integer.MAX_VALUE);
        delayProbability = probability("faults.delayProbability", c.faults_delayProbability());
        delayMillis = range("faults.delayMillis", c.faults_delayMillis(), 0, 60_000);
        receiverNotReadyProbability = probability("faults.receiverNotReadyProbability", c.faults_receiverNotReadyProbability());
        captureEnabled = c.capture_enabled();
        capturePath = c.capture_path() == null ? "" : c.capture_path().trim();
        if (captureEnabled && capturePath.isEmpty()) {
            throw invalid("capture.path", "\"\"", "a file path when capture.enabled is true");
        }
        captureMaxFileBytes = range("capture.maxFileBytes", c.capture_maxFileBytes(), 1024, Long.MAX_VALUE);
        captureSnapLength = range("capture.snapLength", c.capture_snapLength(), 64, 262_144);
        int mtu = c.capture_mtu();
        if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
            throw invalid("capture.mtu", Integer.toString(mtu), "one of 256, 512, 1024, 2048, 4096");
        }
        captureMtu = mtu;
    }

    /**
     * Validates an OSGi configuration.
     *
     * @throws IllegalArgumentException naming the key and its range
     */
    static SimSettings from(SimConfig config) {
        return new SimSettings(config);
    }

    /**
     * Validates a configuration map with the same keys and defaults as the OSGi configuration.
     *
     * @throws IllegalArgumentException naming an unknown key, a value of the wrong type, or a value out of range
     */
    static SimSettings fromMap(Map<String, ?> map) {
        return new SimSettings(configOf(map));
    }

    /**
     * A {@link SimConfig} view of a map (what SCR would hand the component), with the annotation's
     * defaults for absent keys.
     *
     * @throws IllegalArgumentException naming an unknown key or a value of the wrong type
     */
    static SimConfig configOf(Map<String, ?> map) {
        Map<String, Method> byKey = new LinkedHashMap<>();
        for (Method m : SimConfig.class.getDeclaredMethods()) {
            if (m.getParameterCount() == 0 && m.getDefaultValue() != null) {
                byKey.put(key(m), m);
            }
        }
        Map<Method, Object> values = new LinkedHashMap<>();
        for (Map.Entry<String, ?> e : map.entrySet()) {
            Method m = byKey.get(e.getKey());
            if (m == null) {
                throw new IllegalArgumentException("unknown configuration key \"" + e.getKey() + "\"; known keys: "
                        + byKey.keySet());
            }
            if (e.getValue() != null) {
                values.put(m, convert(e.getKey(), e.getValue(), m.getReturnType()));
            }
        }
        SimConfig proxy = (SimConfig) Proxy.newProxyInstance(SimConfig.class.getClassLoader(),
                new Class<?>[] {SimConfig.class}, (p, m, args) -> {
                    if (m.getDeclaringClass() == Object.class) {
                        switch (m.getName()) {
                            case "hashCode":
                                return System.identityHashCode(p);
                            case "equals":
                                return p == args[0];
                            default:
                                return "SimConfig" + values;
                        }
                    }
                    if (m.getName().equals("annotationType")) {
                        return SimConfig.class;
                    }
                    Object v = values.get(m);
                    return v != null ? v : m.getDefaultValue();
                });
        return proxy;
    }

    /** The configuration key of a {@link SimConfig} method. */
    static String key(Method m) {
        return m.getName().replace('_', '.');
    }

    /** Whether moving from this snapshot to {@code next} needs a new provider (a change of identity or capabilities). */
    boolean needsRestart(SimSettings next) {
        return !name.equals(next.name) || !fabric.equals(next.fabric) || !address.equals(next.address)
                || !capabilities.equals(next.capabilities) || fabricThreads != next.fabricThreads;
    }

    /** Whether the capture settings differ. */
    boolean captureChanged(SimSettings next) {
        return captureEnabled != next.captureEnabled || !capturePath.equals(next.capturePath)
                || captureMaxFileBytes != next.captureMaxFileBytes || captureSnapLength != next.captureSnapLength
                || captureMtu != next.captureMtu;
    }

    /** The same settings with another resolved name and address (for the "pick one" defaults). */
    SimSettings withIdentity(String resolvedName, String resolvedAddress) {
        Map<String, Object> m = toMap();
        m.put("name", resolvedName);
        m.put("address", resolvedAddress);
        return fromMap(m);
    }

    private static TransportType transport(String name) {
        try {
            return TransportType.parse(name);
        } catch (IllegalArgumentException e) {
            throw invalid("transport", "\"" + name + "\"", "RoCE, InfiniBand or iWARP");
        }
    }

    /** Every setting under its configuration key. */
    Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", name);
        m.put("fabric", fabric);
        m.put("address", address);
        m.put("rdmaRead", capabilities.rdmaRead());
        m.put("remoteInvalidate", capabilities.remoteInvalidate());
        m.put("inlineLimit", capabilities.inlineLimit());
        m.put("maxSge", capabilities.maxSge());
        m.put("maxRegionSize", capabilities.maxRegionSize());
        m.put("maxIrd", capabilities.maxIrd());
        m.put("maxOrd", capabilities.maxOrd());
        m.put("maxQueueDepth", capabilities.maxQueueDepth());
        m.put("maxCompletionQueueDepth", capabilities.maxCompletionQueueDepth());
        m.put("maxPrivateData", capabilities.maxPrivateData());
        m.put("transport", capabilities.transportType().displayName());
        m.put("linkSpeedMbps", (int) (capabilities.linkSpeed() / 1_000_000L));
        m.put("fabricThreads", fabricThreads);
        m.put("connectTimeoutMillis", connectTimeoutMillis);
        m.put("latency.enabled", latencyEnabled);
        m.put("latency.microseconds", latencyMicros);
        m.put("latency.bandwidthMbps", bandwidthMbps);
        m.put("faults.seed", faultSeed);
        m.put("faults.disconnectAfterOperations", disconnectAfterOperations);
        m.put("faults.disconnectProbability", disconnectProbability);
        m.put("faults.registrationFailureProbability", registrationFailureProbability);
        m.put("faults.registrationFailureEvery", registrationFailureEvery);
        m.put("faults.delayProbability", delayProbability);
        m.put("faults.delayMillis", delayMillis);
        m.put("faults.receiverNotReadyProbability", receiverNotReadyProbability);
        m.put("capture.enabled", captureEnabled);
        m.put("capture.path", capturePath);
        m.put("capture.maxFileBytes", captureMaxFileBytes);
        m.put("capture.snapLength", captureSnapLength);
        m.put("capture.mtu", captureMtu);
        return m;
    }

    /** Whether any fault is configured. */
    boolean faultsEnabled() {
        return disconnectAfterOperations > 0 || disconnectProbability > 0 || registrationFailureProbability > 0
                || registrationFailureEvery > 0 || delayProbability > 0 || receiverNotReadyProbability > 0;
    }

    @Override
    public String toString() {
        return "SimSettings" + toMap();
    }

    // ------------------------------------------------------------------ checks

    private static String checkName(String key, String value, boolean emptyAllowed) {
        String v = value == null ? "" : value.trim();
        if (v.isEmpty() && !emptyAllowed) {
            throw invalid(key, "\"\"", "a non-empty name of at most 64 characters");
        }
        if (v.length() > 64 || !v.chars().allMatch(ch -> ch > 0x20 && ch < 0x7f)) {
            throw invalid(key, "\"" + value + "\"", "at most 64 printable ASCII characters without spaces");
        }
        return v;
    }

    private static String checkAddress(String value) {
        String v = value == null ? "" : value.trim();
        if (v.isEmpty()) {
            return v;
        }
        var m = IPV4.matcher(v);
        boolean ok = m.matches();
        if (ok) {
            int first = Integer.parseInt(m.group(1));
            for (int i = 1; i <= 4; i++) {
                ok &= Integer.parseInt(m.group(i)) <= 255;
            }
            ok &= first != 0 && first < 224 && !v.equals("255.255.255.255");
        }
        if (!ok) {
            throw invalid("address", "\"" + value + "\"", "an IPv4 unicast literal such as 10.0.0.7, or empty");
        }
        return v;
    }

    static int range(String key, int value, int min, int max) {
        if (value < min || value > max) {
            throw invalid(key, Integer.toString(value), min + ".." + max);
        }
        return value;
    }

    static long range(String key, long value, long min, long max) {
        if (value < min || value > max) {
            throw invalid(key, Long.toString(value), min + ".." + max);
        }
        return value;
    }

    private static double probability(String key, double value) {
        if (!(value >= 0.0 && value <= 1.0)) {
            throw invalid(key, Double.toString(value), "0.0..1.0");
        }
        return value;
    }

    private static IllegalArgumentException invalid(String key, String value, String range) {
        return new IllegalArgumentException("invalid configuration: " + key + " = " + value + " is out of range; expected "
                + range);
    }

    private static Object convert(String key, Object value, Class<?> type) {
        try {
            if (type == String.class) {
                if (value instanceof String) {
                    return value;
                }
                throw new IllegalArgumentException("a string");
            }
            if (type == boolean.class) {
                if (value instanceof Boolean) {
                    return value;
                }
                String s = value.toString().trim();
                if (s.equalsIgnoreCase("true") || s.equalsIgnoreCase("false")) {
                    return Boolean.valueOf(s);
                }
                throw new IllegalArgumentException("true or false");
            }
            if (type == double.class) {
                if (value instanceof Number) {
                    return ((Number) value).doubleValue();
                }
                return Double.parseDouble(value.toString().trim());
            }
            long l;
            if (value instanceof Double || value instanceof Float) {
                double d = ((Number) value).doubleValue();
                if (d != Math.rint(d)) {
                    throw new IllegalArgumentException("an integer");
                }
                l = (long) d;
            } else if (value instanceof Number) {
                l = ((Number) value).longValue();
            } else {
                l = Long.parseLong(value.toString().trim());
            }
            if (type == int.class) {
                if (l < Integer.MIN_VALUE || l > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("an int");
                }
                return (int) l;
            }
            return l;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("invalid configuration: " + key + " = \"" + value
                    + "\" is not a number of type " + type.getSimpleName(), e);
        } catch (IllegalArgumentException e) {
            if (e.getMessage() != null && e.getMessage().startsWith("invalid configuration")) {
                throw e;
            }
            throw new IllegalArgumentException("invalid configuration: " + key + " = " + describe(value)
                    + " has the wrong type; expected " + e.getMessage(), e);
        }
    }

    private static String describe(Object value) {
        if (value.getClass().isArray()) {
            return value.getClass().getComponentType().getSimpleName() + "[]";
        }
        return Objects.toString(value) + " (" + value.getClass().getSimpleName() + ")";
    }

    /** For tests and messages: every known key. */
    static String[] keys() {
        return Arrays.stream(SimConfig.class.getDeclaredMethods())
                .filter(m -> m.getParameterCount() == 0 && m.getDefaultValue() != null)
                .map(SimSettings::key).sorted().toArray(String[]::new);
    }
}
