package org.smbdirect.shell.internal;

import java.util.Locale;

/** Parsing and printing sizes, durations and rates for people. */
final class Units {
    static final long KIB = 1024;
    static final long MIB = 1024 * KIB;
    static final long GIB = 1024 * MIB;

    private Units() {
    }

    /**
     * A byte count: a number with an optional binary suffix, {@code 4096}, {@code 4k},
     * {@code 64M}, {@code 64MiB}, {@code 1G}.
     */
    static long parseSize(String what, String text) throws UsageException {
        String t = text.trim().toLowerCase(Locale.ROOT);
        if (t.endsWith("ib")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        long factor = 1;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k':
                    factor = KIB;
                    break;
                case 'm':
                    factor = MIB;
                    break;
                case 'g':
                    factor = GIB;
                    break;
                default:
                    break;
            }
        }
        if (factor != 1) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            long v = Long.parseLong(t);
            if (v < 0 || v > Long.MAX_VALUE / factor) {
                throw new NumberFormatException();
            }
            return v * factor;
        } catch (NumberFormatException e) {
            throw new UsageException(what + ": '" + text + "' is not a size (examples: 4096, 64k, 64M, 1G)");
        }
    }

    static int parseInt(String what, String text, int min, int max) throws UsageException {
        try {
            int v = Integer.parseInt(text.trim());
            if (v < min || v > max) {
                throw new UsageException(what + " must be between " + min + " and " + max + ", was " + v);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new UsageException(what + ": '" + text + "' is not a whole number");
        }
    }

    /** {@code 1.5 KiB}, {@code 64.0 MiB}; exact below 1 KiB. */
    static String bytes(long n) {
        if (n < KIB) {
            return n + " B";
        }
        if (n < MIB) {
            return String.format(Locale.ROOT, "%.1f KiB", n / (double) KIB);
        }
        if (n < GIB) {
            return String.format(Locale.ROOT, "%.1f MiB", n / (double) MIB);
        }
        return String.format(Locale.ROOT, "%.2f GiB", n / (double) GIB);
    }

    /** Throughput in MiB/s (2^20 bytes per second, as perftest's MB/sec). */
    static double mibPerSecond(long bytes, long nanos) {
        return nanos <= 0 ? 0 : bytes / (double) MIB / (nanos / 1e9);
    }

    static String rate(long bytes, long nanos) {
        return String.format(Locale.ROOT, "%.1f MiB/s", mibPerSecond(bytes, nanos));
    }

    static String seconds(long nanos) {
        return String.format(Locale.ROOT, "%.3f s", nanos / 1e9);
    }
}
