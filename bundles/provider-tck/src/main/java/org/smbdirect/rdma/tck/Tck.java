package org.smbdirect.rdma.tck;

import java.time.Duration;

/** Time limits of the kit, scaled for slow machines. */
public final class Tck {
    /**
     * System property that multiplies every time limit, for example {@code 10} under emulation
     * (default 1).
     */
    public static final String TIMEOUT_FACTOR_PROPERTY = "tck.timeoutFactor";

    /** The unscaled limit for anything the kit waits for. */
    public static final Duration BASE_TIMEOUT = Duration.ofSeconds(10);

    private Tck() {
    }

    /**
     * The factor from {@value #TIMEOUT_FACTOR_PROPERTY}.
     *
     * @return the factor, at least 1
     */
    public static double timeoutFactor() {
        String v = System.getProperty(TIMEOUT_FACTOR_PROPERTY, "1").trim();
        try {
            double f = v.isEmpty() ? 1 : Double.parseDouble(v);
            return f >= 1 ? f : 1;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(TIMEOUT_FACTOR_PROPERTY + " must be a number, was \"" + v + "\"", e);
        }
    }

    /**
     * How long the kit waits for an event, a completion or a notification before it fails.
     *
     * @return {@link #BASE_TIMEOUT} times the factor
     */
    public static Duration timeout() {
        return Duration.ofMillis((long) (BASE_TIMEOUT.toMillis() * timeoutFactor()));
    }

    /**
     * The deadline of a wait that starts now.
     *
     * @return a {@link System#nanoTime()} value
     */
    public static long deadline() {
        return System.nanoTime() + timeout().toNanos();
    }
}
