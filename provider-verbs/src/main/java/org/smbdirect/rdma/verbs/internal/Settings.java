package org.smbdirect.rdma.verbs.internal;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * The verbs provider's settings, from a {@link VerbsConfiguration} (OSGi) or from a plain map
 * ({@link VerbsProviderFactory}); same keys and defaults.
 */
final class Settings {
    static final String DEVICES = "devices";
    static final String RESOLVE_TIMEOUT = "resolveTimeoutMillis";
    static final String REQUEST_TIMEOUT = "connectionRequestTimeoutMillis";
    static final String RETRY_COUNT = "retryCount";
    static final String CLOSE_TIMEOUT = "closeTimeoutMillis";
    static final String RDMA_READ = "rdmaRead";
    static final String REMOTE_INVALIDATE = "remoteInvalidate";
    static final String INLINE_LIMIT = "inlineLimit";
    static final String REGISTRATION_CACHE = "registrationCache";
    static final String COMPLETION_SPIN = "completionSpinMicroseconds";
    /** The longest completion spin accepted: 0.1 s. */
    static final int MAX_COMPLETION_SPIN = 100_000;
    private static final Set<String> KEYS = Set.of(DEVICES, RESOLVE_TIMEOUT, REQUEST_TIMEOUT, RETRY_COUNT,
            CLOSE_TIMEOUT, RDMA_READ, REMOTE_INVALIDATE, INLINE_LIMIT, REGISTRATION_CACHE, COMPLETION_SPIN);

    final List<String> devices;
    final int resolveTimeoutMillis;
    final int requestTimeoutMillis;
    final int retryCount;
    final int closeTimeoutMillis;
    final boolean rdmaRead;
    final boolean remoteInvalidate;
    final int inlineLimit;
    final int registrationCache;
    final int completionSpinMicroseconds;

    Settings(List<String> devices, int resolveTimeoutMillis, int requestTimeoutMillis, int retryCount,
            int closeTimeoutMillis, boolean rdmaRead, boolean remoteInvalidate, int inlineLimit,
            int registrationCache, int completionSpinMicroseconds) {
        this.devices = List.copyOf(devices);
        this.resolveTimeoutMillis = resolveTimeoutMillis;
        this.requestTimeoutMillis = requestTimeoutMillis;
        this.retryCount = retryCount;
        this.closeTimeoutMillis = closeTimeoutMillis;
        this.rdmaRead = rdmaRead;
        this.remoteInvalidate = remoteInvalidate;
        this.inlineLimit = inlineLimit;
        this.registrationCache = registrationCache;
        this.completionSpinMicroseconds = completionSpinMicroseconds;
    }

    static Settings defaults() {
        return new Settings(List.of(), 5000, 10000, 7, 5000, true, true, -1, 16, 0);
    }

    static Settings from(VerbsConfiguration c) throws RdmaException {
        Settings s = new Settings(List.of(c.devices()), c.resolveTimeoutMillis(), c.connectionRequestTimeoutMillis(),
                c.retryCount(), c.closeTimeoutMillis(), c.rdmaRead(), c.remoteInvalidate(), c.inlineLimit(),
                c.registrationCache(), c.completionSpinMicroseconds());
        s.check();
        return s;
    }

    /**
     * Reads settings from a map with {@link VerbsConfiguration}'s keys; unknown keys and OSGi's own
     * ({@code service.*}, {@code component.*}) keys are rejected and ignored respectively.
     */
    static Settings from(Map<String, ?> map) throws RdmaException {
        Settings d = defaults();
        List<String> devices = d.devices;
        int resolve = d.resolveTimeoutMillis;
        int request = d.requestTimeoutMillis;
        int retry = d.retryCount;
        int close = d.closeTimeoutMillis;
        boolean read = d.rdmaRead;
        boolean invalidate = d.remoteInvalidate;
        int inline = d.inlineLimit;
        int cache = d.registrationCache;
        int spin = d.completionSpinMicroseconds;
        for (Map.Entry<String, ?> e : map.entrySet()) {
            String key = e.getKey();
            Object value = e.getValue();
            if (key.startsWith("service.") || key.startsWith("component.") || key.startsWith("felix.")) {
                continue;
            }
            if (!KEYS.contains(key)) {
                throw new RdmaException(RdmaStatus.INVALID_PARAMETER, "unknown configuration key '" + key
                        + "' (known: " + KEYS + ")");
            }
            switch (key) {
                case DEVICES:
                    devices = strings(key, value);
                    break;
                case RESOLVE_TIMEOUT:
                    resolve = integer(key, value);
                    break;
                case REQUEST_TIMEOUT:
                    request = integer(key, value);
                    break;
                case RETRY_COUNT:
                    retry = integer(key, value);
                    break;
                case RDMA_READ:
                    read = bool(key, value);
                    break;
                case REMOTE_INVALIDATE:
                    invalidate = bool(key, value);
                    break;
                case INLINE_LIMIT:
                    inline = integer(key, value);
                    break;
                case REGISTRATION_CACHE:
                    cache = integer(key, value);
                    break;
                case COMPLETION_SPIN:
                    spin = integer(key, value);
                    break;
                default:
                    close = integer(key, value);
                    break;
            }
        }
        Settings s = new Settings(devices, resolve, request, retry, close, read, invalidate, inline, cache, spin);
        s.check();
        return s;
    }

    private void check() throws RdmaException {
        if (resolveTimeoutMillis < 1) {
            throw bad(RESOLVE_TIMEOUT, resolveTimeoutMillis, "must be at least 1");
        }
        if (requestTimeoutMillis < 1) {
            throw bad(REQUEST_TIMEOUT, requestTimeoutMillis, "must be at least 1");
        }
        if (retryCount < 0 || retryCount > 7) {
            throw bad(RETRY_COUNT, retryCount, "must be 0 to 7");
        }
        if (closeTimeoutMillis < 0) {
            throw bad(CLOSE_TIMEOUT, closeTimeoutMillis, "must not be negative");
        }
        if (inlineLimit < -1) {
            throw bad(INLINE_LIMIT, inlineLimit, "must be -1 (the device's), 0 or more");
        }
        if (registrationCache < 0) {
            throw bad(REGISTRATION_CACHE, registrationCache, "must not be negative (0 keeps nothing)");
        }
        if (completionSpinMicroseconds < 0 || completionSpinMicroseconds > MAX_COMPLETION_SPIN) {
            throw bad(COMPLETION_SPIN, completionSpinMicroseconds, "must be 0 (no spin) to " + MAX_COMPLETION_SPIN);
        }
    }

    private static RdmaException bad(String key, Object value, String why) {
        return new RdmaException(RdmaStatus.INVALID_PARAMETER, "configuration '" + key + "' = " + value + " " + why);
    }

    private static int integer(String key, Object value) throws RdmaException {
        if (value instanceof Number) {
            long l = ((Number) value).longValue();
            if (l == ((Number) value).doubleValue() && l >= Integer.MIN_VALUE && l <= Integer.MAX_VALUE) {
                return (int) l;
            }
        } else if (value instanceof String) {
            try {
                return Integer.parseInt(((String) value).trim());
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        throw bad(key, value, "is not an integer");
    }

    private static boolean bool(String key, Object value) throws RdmaException {
        if (value instanceof Boolean) {
            return (Boolean) value;
        }
        if ("true".equals(value) || "false".equals(value)) {
            return Boolean.parseBoolean((String) value);
        }
        throw bad(key, value, "is not true or false");
    }

    private static List<String> strings(String key, Object value) throws RdmaException {
        List<String> out = new ArrayList<>();
        if (value instanceof String) {
            for (String s : ((String) value).split(",")) {
                if (!s.isBlank()) {
                    out.add(s.trim());
                }
            }
        } else if (value instanceof Collection) {
            for (Object o : (Collection<?>) value) {
                out.add(String.valueOf(o));
            }
        } else if (value != null && value.getClass().isArray()) {
            for (int i = 0; i < Array.getLength(value); i++) {
                out.add(String.valueOf(Array.get(value, i)));
            }
        } else {
            throw bad(key, value, "is not a list of device names");
        }
        return out;
    }

    @Override
    public String toString() {
        return "Settings[devices=" + devices + ", resolveTimeoutMillis=" + resolveTimeoutMillis
                + ", connectionRequestTimeoutMillis=" + requestTimeoutMillis + ", retryCount=" + retryCount
                + ", closeTimeoutMillis=" + closeTimeoutMillis + ", rdmaRead=" + rdmaRead + ", remoteInvalidate="
                + remoteInvalidate + ", inlineLimit=" + inlineLimit + ", registrationCache=" + registrationCache
                + ", completionSpinMicroseconds=" + completionSpinMicroseconds + "]";
    }
}
