package org.smbdirect.shell.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

class ArgsTest {

    @Test
    void optionsInEveryForm_flagsAndPositionals() throws Exception {
        Args a = Args.parse(new String[] {"-s", "4k", "--chunk=1M", "--bulk", "10.0.0.1:5445", "--", "--x"},
                "s|size=", "c|chunk=", "b|bulk");
        assertEquals(4096, a.size("size", 0));
        assertEquals(1 << 20, a.size("chunk", 0));
        assertTrue(a.flag("bulk"));
        assertEquals(List.of("10.0.0.1:5445", "--x"), a.positional());
    }

    @Test
    void absentOption_givesTheDefault() throws Exception {
        Args a = Args.parse(new String[0], "s|size=", "b|bulk");
        assertEquals(7, a.size("size", 7));
        assertFalse(a.flag("bulk"));
        assertNull(a.value("size"));
        assertEquals(3, a.integer("size", 3, 1, 5));
    }

    @Test
    void unknownOption_isNamed() {
        UsageException e = assertThrows(UsageException.class, () -> Args.parse(new String[] {"--bogus"}, "b|bulk"));
        assertEquals("unknown option --bogus", e.getMessage());
    }

    @Test
    void optionWithoutItsValue_isRefused() {
        UsageException e = assertThrows(UsageException.class, () -> Args.parse(new String[] {"--size"}, "s|size="));
        assertEquals("option --size needs a value", e.getMessage());
    }

    @Test
    void flagWithAValue_isRefused() {
        assertThrows(UsageException.class, () -> Args.parse(new String[] {"--bulk=yes"}, "b|bulk"));
    }

    @Test
    void negativeNumbers_arePositional() throws Exception {
        assertEquals(List.of("-1"), Args.parse(new String[] {"-1"}).positional());
    }

    @Test
    void positionalCount_isChecked() throws Exception {
        Args none = Args.parse(new String[0]);
        assertEquals("an argument is missing", assertThrows(UsageException.class, () -> none.positional(1, 1)).getMessage());
        Args two = Args.parse(new String[] {"a", "b"});
        assertEquals("unexpected argument 'b'", assertThrows(UsageException.class, () -> two.positional(0, 1)).getMessage());
    }

    @Test
    void integerOutOfRange_namesTheRange() throws Exception {
        Args a = Args.parse(new String[] {"-n", "0"}, "n|iterations=");
        UsageException e = assertThrows(UsageException.class, () -> a.integer("iterations", 1, 1, 10));
        assertEquals("--iterations must be between 1 and 10, was 0", e.getMessage());
    }
}
