package org.smbdirect.bench;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;

import org.smbdirect.transport.SmbDirectConfig;

/**
 * (f) Memory per idle connection, measured by opening them: both ends of every connection live in
 * this JVM, on the sim provider. Prints heap and direct (registered) memory per connection, and
 * how many connections were opened before the heap or direct memory limit stopped it.
 *
 * <p>Usage: {@code IdleConnections <connections> [peerMaxSendSize]}; run it with the heap limit to
 * test, e.g. {@code -Xmx4g}.
 */
public final class IdleConnections {
    private IdleConnections() {
    }

    /** The measured figures. */
    record Result(int opened, long heapPerConnection, long directPerConnection, String stoppedBy) {
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int peerSendSize = args.length > 1 ? Integer.parseInt(args[1]) : 1364;
        Result r = measure(n, peerSendSize);
        System.out.printf("idle connections: opened %d of %d (peer MaxSendSize %d), heap limit %d MiB, direct limit %s%s%n",
                r.opened, n, peerSendSize, Runtime.getRuntime().maxMemory() >> 20,
                System.getProperty("idle.directLimit", "default"), r.stoppedBy == null ? "" : ", stopped by " + r.stoppedBy);
        System.out.printf("per connection (both ends): heap %.1f KiB, direct %.1f KiB, total %.1f KiB%n",
                r.heapPerConnection / 1024.0, r.directPerConnection / 1024.0,
                (r.heapPerConnection + r.directPerConnection) / 1024.0);
        // for BenchMain
        System.out.printf("IDLE %d %d %d %d %d%n", peerSendSize, r.opened, n, r.heapPerConnection, r.directPerConnection);
    }

    static Result measure(int n, int peerSendSize) throws Exception {
        // The server side negotiates with a peer whose PreferredSendSize (its MaxSendSize) is given.
        SmbDirectConfig cfg = SmbDirectConfig.builder().maxSendSize(peerSendSize).engineThreads(2).build();
        try (SimPair pair = new SimPair(cfg, Map.of())) {
            pair.connect((x, m, t) -> { }, (x, m, t) -> { }); // warm everything once
            long heap0 = heapUsed();
            long direct0 = directUsed();
            int opened = 0;
            String stoppedBy = null;
            try {
                for (; opened < n; opened++) {
                    pair.connect((x, m, t) -> { }, (x, m, t) -> { });
                }
            } catch (OutOfMemoryError | Exception e) {
                stoppedBy = e.toString();
            }
            long heap = heapUsed() - heap0;
            long direct = directUsed() - direct0;
            if (Boolean.getBoolean("idle.histogram")) {
                histogram();
            }
            return new Result(opened, heap / Math.max(1, opened), direct / Math.max(1, opened), stoppedBy);
        }
    }

    /** What the heap holds, by class (jcmd GC.class_histogram), to see where an idle connection's memory goes. */
    static void histogram() throws Exception {
        Process p = new ProcessBuilder(java.nio.file.Path.of(System.getProperty("java.home"), "bin", "jcmd").toString(),
                Long.toString(ProcessHandle.current().pid()), "GC.class_histogram").redirectErrorStream(true).start();
        try (java.io.BufferedReader r = p.inputReader()) {
            r.lines().limit(45).forEach(System.out::println);
        }
    }

    static long heapUsed() throws InterruptedException {
        for (int i = 0; i < 4; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    static long directUsed() {
        List<BufferPoolMXBean> pools = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class);
        return pools.stream().filter(p -> p.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed)
                .sum();
    }
}
