package org.smbdirect.shell.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

class ProgressTest {

    @Test
    void withoutATerminal_oneLinePerQuarter() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(bytes, true, StandardCharsets.UTF_8), 1000, false);
        for (int i = 0; i <= 1000; i += 10) {
            p.update(i);
        }
        p.finish();
        String[] lines = bytes.toString(StandardCharsets.UTF_8).split("\n");
        assertEquals(4, lines.length);
        assertTrue(lines[0].startsWith("[#######.......................]  25%  250 B / 1000 B"), lines[0]);
        assertTrue(lines[3].startsWith("[##############################] 100%  1000 B / 1000 B"), lines[3]);
    }

    @Test
    void onATerminal_redrawsInPlace() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        Progress p = new Progress(new PrintStream(bytes, true, StandardCharsets.UTF_8), 100, true);
        p.update(100);
        p.finish();
        String s = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(s.startsWith("\r[##############################] 100%"), s);
        assertTrue(s.endsWith(System.lineSeparator()), s);
    }
}
