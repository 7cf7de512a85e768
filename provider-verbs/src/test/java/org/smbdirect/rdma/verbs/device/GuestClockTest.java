package org.smbdirect.rdma.verbs.device;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The clock the device suite's timings rest on. {@code tools/rdma-vm/run-in-vm.sh} boots a TCG
 * guest on the TSC ({@code RDMA_VM_CLOCK}), because the HPET the kernel would otherwise pick makes
 * every {@code System.nanoTime} a system call, which perftest's {@code rdtsc} never pays. A kernel
 * that refused the TSC would leave the latency comparison quietly unfair again.
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
}
