package org.smbdirect.bench;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.util.ListStatistics;
import org.openjdk.jmh.util.Statistics;

/**
 * Runs every benchmark together with its baseline, in the same JVM run, and prints one table:
 * figure, ours, baseline, ratio, goal, with medians over the measurement iterations and their
 * spread (min-max). {@code --long} runs more iterations and two forks (the figures in turns: three
 * forks, four with {@code --long}).
 */
public final class BenchMain {
    private final boolean longRun;
    private final Map<String, Statistics> scores = new HashMap<>();
    private final Map<String, Double> allocation = new java.util.TreeMap<>();
    private final List<String[]> rows = new ArrayList<>();
    private final List<String[]> idleRows = new ArrayList<>();

    private BenchMain(boolean longRun) {
        this.longRun = longRun;
    }

    public static void main(String[] args) throws Exception {
        boolean longRun = List.of(args).contains("--long");
        BenchMain m = new BenchMain(longRun);
        long t0 = System.nanoTime();
        // Every figure with non-blocking handlers (run where the completions are taken); the goal
        // figures also with handlers on the engine's threads, the default.
        m.run(RdmaBench.class, ".*", false, INLINE);
        m.run(RdmaBench.class, "rdma.*", false, ENGINE, "size", "1048576");
        m.run(RdmaOpsBench.class, ".*", false, INLINE);
        m.run(RdmaOpsBench.class, "transport.*", false, ENGINE);
        m.run(MessageBench.class, ".*", true, INLINE);
        m.run(MessageBench.class, "smbDirect", true, ENGINE, "size", "1024");
        m.run(FragmentedBench.class, ".*", false, INLINE);
        m.run(FragmentedBench.class, ".*", false, ENGINE, "size", "1048576");
        m.run(PingPongBench.class, ".*", false, INLINE);
        m.run(PingPongBench.class, "smbDirect", false, ENGINE);
        m.run(AggregateBench.class, ".*", false, INLINE);
        m.run(AggregateBench.class, ".*", false, ENGINE);
        m.runInTurns(AggregateRatioBench.class, INLINE, "messagesEach", new String[] {"64"}, "4", "16");
        m.runInTurns(AggregateRatioBench.class, ENGINE, "messagesEach", new String[] {"64"}, "4", "16");
        m.runInTurns(MessageRatioBench.class, null, "messagesEach", new String[] {"SmbDirect"}, "Queue");
        m.runInTurns(FragmentedRatioBench.class, INLINE, "each", new String[] {"Fragments"}, "Messages");
        m.runInTurns(RdmaRatioBench.class, null, "operationsEach", new String[] {"Read", "Write"}, "Copy");
        m.run(TcpBench.class, ".*", false);
        String idle = m.idleConnections();
        m.table(idle, (System.nanoTime() - t0) / 1_000_000_000L);
    }

    private static final String[] INLINE = {"handlers", "inline"};
    private static final String[] ENGINE = {"handlers", "engine"};

    /**
     * Runs the methods of {@code benchmark} matching {@code methods}, with parameters fixed as given
     * ({@code name, value} pairs: {@code handlers} first, then optionally one more).
     */
    private void run(Class<?> benchmark, String methods, boolean gc, String[] handlers, String... more)
            throws Exception {
        ChainedOptionsBuilder o = options(benchmark, methods, gc).param(handlers[0], handlers[1]);
        if (more.length == 2) {
            o = o.param(more[0], more[1]);
        }
        collect(benchmark, new Runner(o.build()).run());
    }

    private void run(Class<?> benchmark, String methods, boolean gc) throws Exception {
        collect(benchmark, new Runner(options(benchmark, methods, gc).build()).run());
    }

    private ChainedOptionsBuilder options(Class<?> benchmark, String methods, boolean gc) {
        ChainedOptionsBuilder o = new OptionsBuilder().include(benchmark.getName() + "\\." + methods + "$")
                .forks(longRun ? 2 : 1).warmupIterations(longRun ? 5 : 3).warmupTime(TimeValue.seconds(1))
                .measurementIterations(longRun ? 10 : 5).measurementTime(TimeValue.seconds(1))
                .jvmArgsAppend("-Xmx2g", "-XX:MaxDirectMemorySize=2g").shouldFailOnError(true);
        if (gc) {
            o.addProfiler(GCProfiler.class);
        }
        return o;
    }

    private void collect(Class<?> benchmark, Collection<RunResult> results) {
        for (RunResult r : results) {
            String method = r.getParams().getBenchmark().replaceFirst(".*\\.", "");
            String key = benchmark.getSimpleName() + "." + method + paramSuffix(r);
            scores.put(key, r.getPrimaryResult().getStatistics());
            for (BenchmarkResult br : r.getBenchmarkResults()) {
                // the profiler's key has had a leading "·" in some JMH versions
                Result<?> norm = br.getSecondaryResults().get("gc.alloc.rate.norm");
                if (norm == null) {
                    norm = br.getSecondaryResults().get("·gc.alloc.rate.norm");
                }
                if (norm != null) {
                    allocation.put(key, norm.getScore());
                }
            }
        }
    }

    /**
     * A benchmark measured in turns in one JVM (its sides take turns within each invocation and
     * count their nanoseconds in counters {@code nanos<side>}, and the operations each performed in
     * {@code count}): per measured iteration, each side of {@code ours}' rate, the best rate of
     * {@code bases}, and each of {@code ours} against that best, so that the machine's changes of
     * speed meet all sides alike. Three forks (four with {@code --long}), their iterations pooled: a
     * JVM settles into a faster or slower mode for minutes (BENCHMARKS.md), which turns do not
     * cancel, so one JVM is one draw. Stored under {@code <Benchmark>.<side>}, {@code .base} and
     * {@code .<side>.ratio}, each followed by the run's parameters ({@code :inline}, ...). {@code
     * handlers} fixes the handlers' mode, or {@code null} runs the benchmark's own.
     */
    private void runInTurns(Class<?> benchmark, String[] handlers, String count, String[] ours, String... bases)
            throws Exception {
        ChainedOptionsBuilder o = options(benchmark, ".*", false).forks(longRun ? 4 : 3);
        if (handlers != null) {
            o = o.param(handlers[0], handlers[1]);
        }
        for (RunResult r : new Runner(o.build()).run()) {
            String prefix = benchmark.getSimpleName() + ".";
            String suffix = paramSuffix(r);
            ListStatistics best = new ListStatistics();
            Map<String, ListStatistics> rates = new HashMap<>();
            Map<String, ListStatistics> ratios = new HashMap<>();
            for (String side : ours) {
                rates.put(side, new ListStatistics());
                ratios.put(side, new ListStatistics());
            }
            for (BenchmarkResult br : r.getBenchmarkResults()) {
                for (IterationResult ir : br.getIterationResults()) {
                    Map<String, Result> counters = ir.getSecondaryResults();
                    double operations = counters.get(count).getScore() * 1e9;
                    double better = 0;
                    for (String side : bases) {
                        better = Math.max(better, operations / counters.get("nanos" + side).getScore());
                    }
                    best.addValue(better);
                    for (String side : ours) {
                        double rate = operations / counters.get("nanos" + side).getScore();
                        rates.get(side).addValue(rate);
                        ratios.get(side).addValue(rate / better);
                    }
                }
            }
            scores.put(prefix + "base" + suffix, best);
            for (String side : ours) {
                scores.put(prefix + side + suffix, rates.get(side));
                scores.put(prefix + side + ".ratio" + suffix, ratios.get(side));
            }
        }
    }

    private static String paramSuffix(RunResult r) {
        StringBuilder s = new StringBuilder();
        for (String k : r.getParams().getParamsKeys()) {
            s.append(':').append(r.getParams().getParam(k));
        }
        return s.toString();
    }

    /**
     * Runs (f) in JVMs of their own, opening the connections rather than extrapolating: 10,000
     * with the default configuration (the peer sends 1364-byte messages) in 4 GiB of memory, heap
     * (2 GiB) and direct, registered memory (2 GiB) together; and 1,000 with a peer sending the
     * largest messages Windows accepts (8136 bytes).
     */
    private String idleConnections() throws Exception {
        String cp = System.getProperty("java.class.path");
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        StringBuilder out = new StringBuilder();
        for (String[] variant : new String[][] {{"10000", "1364"}, {"1000", "8136"}}) {
            Process p = new ProcessBuilder(java, "-Xmx2g", "-XX:MaxDirectMemorySize=2g", "-Didle.directLimit=2048 MiB",
                    "-cp", cp, IdleConnections.class.getName(), variant[0], variant[1]).redirectErrorStream(true).start();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream()))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("idle connections") || line.startsWith("per connection")) {
                        out.append(line).append('\n');
                    } else if (line.startsWith("IDLE ")) {
                        idleRow(line.split(" "));
                    }
                }
            }
            p.waitFor();
        }
        return out.toString();
    }

    /** A row of (f) from {@code IDLE peerSendSize opened wanted heapPerPair directPerPair}. */
    private void idleRow(String[] f) {
        int peerSend = Integer.parseInt(f[1]);
        int opened = Integer.parseInt(f[2]);
        int wanted = Integer.parseInt(f[3]);
        double perEnd = (Long.parseLong(f[4]) + Long.parseLong(f[5])) / 2.0 / 1024;
        String what = peerSend == 1364 ? "default configuration, peer sends 1364 B" : "peer sends " + peerSend + " B";
        idleRows.add(new String[] {"f) idle connection, " + what, String.format(Locale.ROOT, "%.1f KiB", perEnd)
            + " per connection (heap + registered)", "", "", peerSend == 1364 ? "<= 400 KiB" : ""});
        if (peerSend == 1364) {
            idleRows.add(new String[] {"f) idle connections opened in 4 GiB (2 GiB heap + 2 GiB direct)",
                String.format(Locale.ROOT, "%,d pairs (%,d connections)", opened, 2 * opened),
                String.format(Locale.ROOT, "%,d pairs", wanted), "", ">= 10,000"});
        }
    }

    private double median(String key) {
        Statistics s = scores.get(key);
        return s == null ? Double.NaN : s.getPercentile(50);
    }

    private String spread(String key, double scale) {
        Statistics s = scores.get(key);
        return s == null ? "" : String.format(Locale.ROOT, " (%s-%s)", num(s.getMin() * scale), num(s.getMax() * scale));
    }

    private void row(String figure, String oursKey, double oursScale, String baseKey, double baseScale, String unit,
            String goal, boolean lowerIsBetter) {
        double ours = median(oursKey) * oursScale;
        double base = median(baseKey) * baseScale;
        double ratio = lowerIsBetter ? ours / base : ours / base;
        rows.add(new String[] {figure, num(ours) + " " + unit + spread(oursKey, oursScale),
            num(base) + " " + unit + spread(baseKey, baseScale), String.format(Locale.ROOT, "%.2f", ratio), goal});
    }

    /**
     * A row of a benchmark measured in turns ({@link #runInTurns}): the side's rate, the best
     * base's, and the median of each iteration's own ratio, each with its spread. Rates are scaled
     * by {@code scale}.
     */
    private void turnsRow(String figure, String benchmark, String side, String params, double scale, String unit,
            String goal) {
        String ours = benchmark + "." + side + params;
        String base = benchmark + ".base" + params;
        String ratio = benchmark + "." + side + ".ratio" + params;
        rows.add(new String[] {figure, num(median(ours) * scale) + " " + unit + spread(ours, scale),
            num(median(base) * scale) + " " + unit + spread(base, scale),
            String.format(Locale.ROOT, "%.2f", median(ratio)) + spread(ratio, 1), goal});
    }

    private void table(String idle, long seconds) {
        double mb = 1.0 / (1 << 20);
        String nb = " (non-blocking handlers)";
        String eng = " (handlers on engine threads)";
        for (String op : new String[] {"rdmaRead", "rdmaWrite"}) {
            String what = "a) RDMA " + (op.equals("rdmaRead") ? "Read " : "Write ");
            for (int size : new int[] {4096, 65536, 1048576, 8388608}) {
                row(what + human(size) + nb, "RdmaBench." + op + ":inline:" + size, size * mb,
                        "RdmaBench.copy:inline:" + size, size * mb, "MiB/s", "", false);
            }
            row(what + "1 MiB" + eng, "RdmaBench." + op + ":engine:1048576", mb * (1 << 20),
                    "RdmaBench.copy:inline:1048576", mb * (1 << 20), "MiB/s", "", false);
            // the goal's figure: the same against the copy in one JVM, in turns
            for (int size : new int[] {1048576, 8388608}) {
                turnsRow(what + human(size) + " against memory copy, in turns in one JVM, forks pooled" + nb, "RdmaRatioBench",
                        op.equals("rdmaRead") ? "Read" : "Write", ":inline:" + size, size * mb, "MiB/s", ">= 0.90");
            }
        }
        for (String op : new String[] {"Read", "Write"}) {
            for (int size : new int[] {4096, 65536, 1048576}) {
                String what = "a) RDMA " + op + " " + human(size) + ": operations through the transport vs on the "
                        + "provider API";
                row(what + nb, "RdmaOpsBench.transport" + op + ":inline:" + size, 1,
                        "RdmaOpsBench.provider" + op + ":inline:" + size, 1, "op/s", ">= 0.80", false);
                row(what + eng, "RdmaOpsBench.transport" + op + ":engine:" + size, 1,
                        "RdmaOpsBench.provider" + op + ":inline:" + size, 1, "op/s", "", false);
            }
            // what a) at 1 MiB can reach at most on this fabric: the provider API alone against the copy
            row("a) RDMA " + op + " 1 MiB on the provider API alone vs memory copy (the simulated fabric's ceiling)",
                    "RdmaOpsBench.provider" + op + ":inline:1048576", mb * (1 << 20), "RdmaBench.copy:inline:1048576",
                    mb * (1 << 20), "MiB/s", "", false);
        }
        for (int size : new int[] {64, 1024, 1340}) {
            row("b) one-way messages " + size + " B" + nb, "MessageBench.smbDirect:inline:" + size, 1,
                    "MessageBench.queue:inline:" + size, 1, "msg/s", "", false);
        }
        row("b) one-way messages 1024 B" + eng, "MessageBench.smbDirect:engine:1024", 1, "MessageBench.queue:inline:1024",
                1, "msg/s", "", false);
        // the goal's figure: the same against the queue in one JVM, in turns
        turnsRow("b) one-way messages 1024 B against the queue hand-off, in turns in one JVM, forks pooled" + nb, "MessageRatioBench",
                "SmbDirect", ":inline:1024", 1, "msg/s", ">= 0.50");
        turnsRow("b) one-way messages 1024 B against the queue hand-off, in turns in one JVM, forks pooled" + eng, "MessageRatioBench",
                "SmbDirect", ":engine:1024", 1, "msg/s", "");
        for (int size : new int[] {65536, 1048576}) {
            // 3.1.5.4: MaxSendSize 1364 (the Windows default) leaves 1340 bytes of data per fragment
            int fragments = (size + 1339) / 1340;
            row("c) fragmented " + human(size) + ": fragments/s vs 1 KiB messages/s" + nb, "FragmentedBench.smbDirect:inline:"
                    + size, fragments, "MessageBench.smbDirect:inline:1024", 1, "frag/s", "", false);
        }
        // the goal's figure: the same in one JVM, in turns
        turnsRow("c) fragmented 1 MiB: fragments/s vs 1 KiB messages/s, in turns in one JVM, forks pooled" + nb,
                "FragmentedRatioBench", "Fragments", ":inline", 1, "frag/s", ">= 0.90");
        row("c) fragmented 1 MiB: fragments/s vs 1 KiB messages/s" + eng, "FragmentedBench.smbDirect:engine:1048576",
                (1048576 + 1339) / 1340, "MessageBench.smbDirect:engine:1024", 1, "frag/s", "", false);
        row("d) ping-pong 64 B (lower is better)" + nb, "PingPongBench.smbDirect:inline", 1, "PingPongBench.threads:inline",
                1, "us", "<= 2.00", true);
        row("d) ping-pong 64 B (lower is better)" + eng, "PingPongBench.smbDirect:engine", 1,
                "PingPongBench.threads:inline", 1, "us", "", true);
        for (String mode : new String[] {"inline", "engine"}) {
            double best = 0;
            for (int c : new int[] {1, 4, 16, 64}) {
                best = Math.max(best, median("AggregateBench.smbDirect:" + c + ":" + mode));
            }
            for (int c : new int[] {1, 4, 16, 64}) {
                String key = "AggregateBench.smbDirect:" + c + ":" + mode;
                rows.add(new String[] {"e) aggregate 1 KiB, " + c + " connection" + (c > 1 ? "s" : "")
                    + (mode.equals("inline") ? nb : eng), num(median(key)) + " msg/s" + spread(key, 1),
                    num(best) + " msg/s (best)", String.format(Locale.ROOT, "%.2f", median(key) / best),
                    ""});
            }
            // the goal's figure: 4, 16 and 64 connections in one JVM, sending in turns
            turnsRow("e) aggregate 1 KiB, 64 connections against the better of 4 and 16, in turns in one JVM, forks pooled"
                    + (mode.equals("inline") ? nb : eng), "AggregateRatioBench", "64", ":" + mode, 1, "msg/s",
                    mode.equals("inline") ? ">= 0.80" : "");
        }
        rows.addAll(idleRows);
        row("g) 1 KiB messages vs TCP loopback", "MessageBench.smbDirect:inline:1024", 1, "TcpBench.tcp:1024",
                TcpBench.BATCH, "msg/s", "> 1", false);
        row("g) 1 MiB by RDMA Read vs TCP loopback", "RdmaBench.rdmaRead:inline:1048576", 1.0, "TcpBench.tcp:1048576",
                1.0, "MiB/s", "> 1", false);
        row("g) 1 MiB by RDMA Write vs TCP loopback", "RdmaBench.rdmaWrite:inline:1048576", 1.0, "TcpBench.tcp:1048576",
                1.0, "MiB/s", "> 1", false);

        StringBuilder t = new StringBuilder();
        t.append(String.format(Locale.ROOT, "Run of %s on %s, %d processors, Java %s (%s), %d s%s%n%n", LocalDate.now(),
                System.getProperty("os.name") + " " + System.getProperty("os.arch"),
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                System.getProperty("java.vm.name"), seconds, longRun ? ", long version" : ", short version"));
        t.append("| figure | ours (median, min-max) | baseline (median, min-max) | ratio | goal |\n");
        t.append("|---|---|---|---|---|\n");
        for (String[] r : rows) {
            t.append("| ").append(String.join(" | ", r)).append(" |\n");
        }
        t.append('\n');
        for (Map.Entry<String, Double> a : allocation.entrySet()) {
            t.append(String.format(Locale.ROOT, "- b) allocation, %s: %.1f bytes per message%n", a.getKey(), a.getValue()));
        }
        t.append('\n').append("f) idle connections (both ends of each in this JVM; per connection = half a pair):\n\n```\n")
                .append(idle).append("```\n");
        System.out.println();
        System.out.println(t);
    }

    private static String human(int size) {
        return size >= 1 << 20 ? (size >> 20) + " MiB" : size >= 1024 ? (size >> 10) + " KiB" : size + " B";
    }

    private static String num(double v) {
        if (Double.isNaN(v)) {
            return "n/a";
        }
        return v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.2f", v);
    }
}
