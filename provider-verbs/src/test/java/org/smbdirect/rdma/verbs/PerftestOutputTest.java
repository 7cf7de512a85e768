package org.smbdirect.rdma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How the guest suite reads perftest's output for the verbs-vs-perftest table. */
class PerftestOutputTest {

    @Test
    void parse_uncalibratedRun_leftOutOfTheMedian(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("perftest.txt");
        Files.writeString(file, String.join("\n",
                "=== ib_write_bw 4096 2000",
                " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
                " 4096       2000             19.15              15.46  \t\t   0.003958",
                "=== exit 0",
                "=== ib_write_bw 4096 2000",
                "Correlation coefficient r^2: 0.845068 < 0.9",
                " 4096       2000             0.00               0.00   \t\t   0.000000",
                "=== exit 0",
                "=== ib_write_bw 4096 2000",
                " 4096       2000             20.59              19.12  \t\t   0.004895",
                "=== exit 0",
                "=== ib_send_lat 64 2000",
                " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]",
                " 64      2000          26.88          1341.90      33.18    \t       40.74       \t28.99  \t\t177.13  \t\t793.38 ",
                "=== exit 0", ""));
        SoftRoceGuestIT.Perftest p = SoftRoceGuestIT.parsePerftest(file);
        assertEquals(Map.of("write_bw 4096", List.of(15.46, 19.12), "send_lat 64", List.of(33.18)), p.values());
        assertEquals(1, p.discarded());
    }
}
