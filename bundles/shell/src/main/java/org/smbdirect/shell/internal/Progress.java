package org.smbdirect.shell.internal;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A progress bar for a transfer of known size. On a terminal it is redrawn in place at most ten
 * times a second; otherwise (output to a file or a pipe) one line is printed per quarter.
 */
final class Progress {
    private static final int WIDTH = 30;
    private final PrintStream out;
    private final long total;
    private final boolean terminal;
    private final long start = System.nanoTime();
    private long lastDraw;
    private int lastQuarter;
    private boolean drawn;

    Progress(PrintStream out, long total, boolean terminal) {
        this.out = out;
        this.total = Math.max(1, total);
        this.terminal = terminal;
    }

    synchronized void update(long done) {
        long now = System.nanoTime();
        if (terminal) {
            if (now - lastDraw >= 100_000_000L || done >= total) {
                lastDraw = now;
                out.print('\r' + line(done, now));
                out.flush();
                drawn = true;
            }
        } else {
            int quarter = (int) (4 * Math.min(done, total) / total);
            if (quarter > lastQuarter) {
                lastQuarter = quarter;
                out.println(line(done, now));
            }
        }
    }

    /** Ends the bar's line (on a terminal). */
    synchronized void finish() {
        if (terminal && drawn) {
            out.println();
        }
    }

    private String line(long done, long now) {
        int filled = (int) (WIDTH * Math.min(done, total) / total);
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < WIDTH; i++) {
            b.append(i < filled ? '#' : '.');
        }
        b.append(']');
        return b + String.format(Locale.ROOT, " %3d%%  %s / %s  %s", 100 * Math.min(done, total) / total,
                Units.bytes(done), Units.bytes(total), Units.rate(done, now - start));
    }
}
