package org.smbdirect.shell.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PcapMergeTest {
    @TempDir
    Path dir;

    /** A pcap file with one record per timestamp (microseconds), each holding its timestamp's low byte. */
    private Path pcap(String name, long... micros) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(24 + micros.length * 17).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(0xa1b2c3d4).putShort((short) 2).putShort((short) 4).putInt(0).putInt(0).putInt(256).putInt(1);
        for (long m : micros) {
            b.putInt((int) (m / 1_000_000)).putInt((int) (m % 1_000_000)).putInt(1).putInt(100).put((byte) m);
        }
        Path p = dir.resolve(name);
        Files.write(p, b.array());
        return p;
    }

    private static List<Long> timestamps(Path p) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(p)).order(ByteOrder.LITTLE_ENDIAN);
        List<Long> t = new ArrayList<>();
        int at = 24;
        while (at < b.limit()) {
            t.add(b.getInt(at) * 1_000_000L + b.getInt(at + 4));
            at += 16 + b.getInt(at + 8);
        }
        return t;
    }

    @Test
    void merge_interleavesByTimestamp_keepsOneHeader() throws Exception {
        Path a = pcap("a", 1_000_001, 3_000_000, 3_000_005);
        Path b = pcap("b", 2_000_000, 3_000_002);
        Path out = dir.resolve("out.pcap");
        assertEquals(5, Demo.Pcap.merge(List.of(a, b), out, Duration.ofSeconds(5)));
        assertEquals(List.of(1_000_001L, 2_000_000L, 3_000_000L, 3_000_002L, 3_000_005L), timestamps(out));
        assertEquals(24 + 5 * 17, Files.size(out));
    }

    @Test
    void truncatedFile_isNotMerged() throws Exception {
        Path a = pcap("a", 1);
        Files.write(a, java.util.Arrays.copyOf(Files.readAllBytes(a), 24 + 10));
        IOException e = assertThrows(IOException.class,
                () -> Demo.Pcap.merge(List.of(a), dir.resolve("out.pcap"), Duration.ofMillis(400)));
        assertEquals(a + " was not complete within 0 s", e.getMessage());
    }
}
