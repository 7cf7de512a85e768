package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The clock the device suite's timings and every timer in the guest rest on.
 * {@code tools/rdma-vm/run-in-vm.sh} boots a TCG guest on the TSC ({@code RDMA_VM_CLOCK}), because
 * the HPET the kernel would otherwise pick makes every {@code System.nanoTime} a system call, which
 * perftest's {@code rdtsc} never pays. A kernel that refused the TSC would leave the latency
 * comparison quietly unfair again.
 */
class GuestClockTest {
    private static final Path CLOCK = Path.of("/sys/devices/system/clocksource/clocksource0/current_clocksource");

    @Test
    void clockSource_isTheOneTheKernelWasAskedFor() throws IOException {
        String cmdline = Files.readString(Path.of("/proc/cmdline")).trim();
        Matcher asked = Pattern.compile("(?:^|\\s)clocksource=(\\S+)").matcher(cmdline);
        Assumptions.assumeTrue(asked.find(), "the kernel was not asked for a clock source (its command line: "
                + cmdline + "); run-in-vm.sh asks for one with RDMA_VM_CLOCK=tsc, the default under TCG");
        assertEquals(asked.group(1), Files.readString(CLOCK).trim(), "the kernel runs on another clock source than "
                + "its command line asked for: " + cmdline);
    }

    /**
     * {@code tsc=reliable} tells the kernel not to check that the CPUs' TSCs agree. Two threads pass
     * a token back and forth (on the guest's two vCPUs while both spin); each reads the clock after
     * taking the token and compares it with what the other read before passing it.
     */
    @Test
    void nanoTime_neverBehindAcrossThreads() throws Exception {
        int handOvers = 20_000;
        AtomicInteger turn = new AtomicInteger();
        AtomicLong passed = new AtomicLong(System.nanoTime());
        AtomicInteger behind = new AtomicInteger();
        Runnable side = () -> {
            int me = Thread.currentThread().getName().endsWith("1") ? 1 : 0;
            for (int i = 0; i < handOvers / 2; i++) {
                for (int spins = 0; turn.get() != me; spins++) {
                    if (spins > 10_000) {
                        Thread.yield(); // both threads on one vCPU: let the other one pass the token
                    }
                }
                if (System.nanoTime() < passed.get()) {
                    behind.incrementAndGet();
                }
                passed.set(System.nanoTime());
                turn.set(1 - me);
            }
        };
        Thread a = new Thread(side, "clock-0");
        Thread b = new Thread(side, "clock-1");
        a.setDaemon(true); // a hung hand-over must not keep the suite's JVM alive
        b.setDaemon(true);
        a.start();
        b.start();
        a.join(TimeUnit.MINUTES.toMillis(2));
        b.join(TimeUnit.MINUTES.toMillis(2));
        assertTrue(!a.isAlive() && !b.isAlive(), "the hand-overs did not finish within 2 minutes");
        assertEquals(0, behind.get(), "System.nanoTime() read after a hand-over was behind the value read before it");
    }
}
