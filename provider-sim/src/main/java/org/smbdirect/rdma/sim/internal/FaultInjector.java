package org.smbdirect.rdma.sim.internal;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

import org.smbdirect.rdma.RdmaException;
import org.smbdirect.rdma.RdmaStatus;

/**
 * Seeded fault injection. Every decision comes from a {@link SplittableRandom} derived from the
 * configured seed and the identity of what it decides about (a connection's ordinal, the
 * provider's registration count), and is taken in the order the work happens on that connection,
 * so the same workload with the same seed injects the same faults, whatever the threads do.
 * Every injected fault is recorded (and logged).
 */
final class FaultInjector {
    static final int DISCONNECT = 1;
    static final int RECEIVER_NOT_READY = 2;
    static final int DELAY = 4;
    private static final int LOG_LIMIT = 100_000;

    private final SimProvider provider;
    private final List<String> log = new ArrayList<>();
    // every fault counted by kind, beyond the log's limit
    private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
    // registration faults, guarded by this
    private SplittableRandom registrationRandom;
    private long registrationSeed;
    private long registrations;

    FaultInjector(SimProvider provider) {
        this.provider = provider;
    }

    /** The decisions for one connection. Used by that connection's actor only. */
    Stream stream(int ordinal) {
        return new Stream(ordinal);
    }

    /** Fails the registration now if the configuration says so. */
    void checkRegistration() throws RdmaException {
        SimSettings s = provider.live();
        if (s.registrationFailureEvery == 0 && s.registrationFailureProbability == 0) {
            return;
        }
        String fault = null;
        synchronized (this) {
            if (registrationRandom == null || registrationSeed != s.faultSeed) {
                registrationSeed = s.faultSeed;
                registrationRandom = new SplittableRandom(mix(s.faultSeed, -1));
                registrations = 0;
            }
            long n = ++registrations;
            boolean every = s.registrationFailureEvery > 0 && n % s.registrationFailureEvery == 0;
            boolean random = s.registrationFailureProbability > 0
                    && registrationRandom.nextDouble() < s.registrationFailureProbability;
            if (every || random) {
                fault = "registration " + n + ": INSUFFICIENT_RESOURCES";
            }
        }
        if (fault != null) {
            record("REGISTRATION_FAILURE", fault);
            throw new RdmaException(RdmaStatus.INSUFFICIENT_RESOURCES, "register: injected fault (" + fault + ")");
        }
    }

    void record(String kind, String fault) {
        counts.computeIfAbsent(kind, k -> new LongAdder()).increment();
        synchronized (log) {
            if (log.size() < LOG_LIMIT) {
                log.add(fault);
            }
        }
        SimLog.info("provider " + provider.name() + " injected fault: " + fault);
    }

    /** The faults injected so far, in order per connection. */
    List<String> injected() {
        synchronized (log) {
            return new ArrayList<>(log);
        }
    }

    /** How many faults of each kind were injected so far, by kind name. */
    Map<String, Long> counts() {
        Map<String, Long> m = new TreeMap<>();
        counts.forEach((k, v) -> m.put(k, v.sum()));
        return m;
    }

    private static long mix(long seed, long id) {
        long z = seed + 0x9E3779B97F4A7C15L * (id + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** One connection's fault decisions. */
    final class Stream {
        private final int ordinal;
        private SplittableRandom random;
        private long seed;
        private long operations;

        Stream(int ordinal) {
            this.ordinal = ordinal;
        }

        long operations() {
            return operations;
        }

        /** Decides what happens to the next operation started on the connection. */
        int decide(byte op, SimSettings s) {
            operations++;
            if (!s.faultsEnabled()) {
                return 0;
            }
            if (random == null || seed != s.faultSeed) {
                seed = s.faultSeed;
                random = new SplittableRandom(mix(s.faultSeed, ordinal));
            }
            int fault = 0;
            if (s.disconnectAfterOperations > 0 && operations == s.disconnectAfterOperations) {
                fault |= DISCONNECT;
            }
            if (s.disconnectProbability > 0 && random.nextDouble() < s.disconnectProbability) {
                fault |= DISCONNECT;
            }
            boolean send = op == SendQueue.OP_SEND || op == SendQueue.OP_SEND_INVALIDATE;
            if (send && s.receiverNotReadyProbability > 0 && random.nextDouble() < s.receiverNotReadyProbability) {
                fault |= RECEIVER_NOT_READY;
            }
            if (s.delayProbability > 0 && random.nextDouble() < s.delayProbability) {
                fault |= DELAY;
            }
            if (fault != 0) {
                String kind = (fault & DISCONNECT) != 0 ? "DISCONNECT"
                        : (fault & RECEIVER_NOT_READY) != 0 ? "RECEIVER_NOT_READY" : "DELAY";
                record(kind, "connection " + ordinal + " operation " + operations + ": "
                        + (kind.equals("DELAY") ? "DELAY " + s.delayMillis + " ms" : kind));
            }
            return (fault & DISCONNECT) != 0 ? DISCONNECT : fault;
        }
    }
}
