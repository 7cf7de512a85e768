package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Paths;

import org.junit.jupiter.api.Test;

import com.hierynomus.mserref.NtStatus;
import com.hierynomus.mssmb2.SMB2Dialect;
import com.hierynomus.mssmb2.SMB2MessageCommandCode;
import com.hierynomus.mssmb2.SMB2PacketHeader;
import com.hierynomus.mssmb2.SMBApiException;
import com.hierynomus.smbj.common.SMBRuntimeException;

/** The smbcopy command's arguments and its one-line explanations of the usual mistakes. */
class SmbCopyCommandTest {

    private static SmbCopyCommand.Options parse(String... args) {
        return SmbCopyCommand.Options.parse(args);
    }

    @Test
    void unc_serverShareAndPath() {
        SmbCopyCommand.Options o = parse("--user", "u", "--password", "p", "--dialect", "3.0", "a.bin",
                "//10.99.0.1/share/dir/b.bin");
        assertEquals(Paths.get("a.bin"), o.local);
        assertEquals("10.99.0.1", o.server);
        assertEquals(445, o.port, "smbj's default, which the transport takes as SMB Direct's port");
        assertEquals("share", o.share);
        assertEquals("dir\\b.bin", o.path);
        assertEquals(SMB2Dialect.SMB_3_0, o.dialect);
        assertNull(o.back);
    }

    @Test
    void unc_withPort_backslashes_ipv6_andBackFile() {
        SmbCopyCommand.Options o = parse("a", "\\\\srv:5445\\s\\p", "back");
        assertEquals("srv", o.server);
        assertEquals(5445, o.port);
        assertEquals(Paths.get("back"), o.back);
        SmbCopyCommand.Options url = parse("a", "smb://srv/s/d/p");
        assertEquals("srv", url.server);
        assertEquals("d\\p", url.path);
        SmbCopyCommand.Options v6 = parse("a", "//[fd00::1]:445/s/p");
        assertEquals("fd00::1", v6.server);
        assertEquals(445, v6.port);
    }

    @Test
    void mistakes_areNamed() {
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("a", "/srv/s/p")).getMessage()
                .contains("not //SERVER/SHARE/PATH"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("a", "//srv/s")).getMessage()
                .contains("not //SERVER/SHARE/PATH"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("a", "//srv:0/s/p")).getMessage()
                .contains("port 0"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("--dialect", "2.1", "a", "//s/s/p"))
                .getMessage().contains("SMB Direct needs SMB 3"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("--bogus", "a", "//s/s/p")).getMessage()
                .contains("unknown option --bogus"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> parse("a")).getMessage().contains("expected"));
    }

    private static SMBApiException api(NtStatus status) {
        SMB2PacketHeader h = new SMB2PacketHeader();
        h.setStatusCode(status.getValue());
        h.setMessageType(SMB2MessageCommandCode.SMB2_TREE_CONNECT);
        return new SMBApiException(h, "x");
    }

    @Test
    void explain_theUsualMistakes() {
        SmbCopyCommand.Options o = parse("--user", "bob", "a", "//srv/data/f");
        assertEquals("authentication failed for user bob at srv (STATUS_LOGON_FAILURE)",
                SmbCopyCommand.explain(new SMBRuntimeException(api(NtStatus.STATUS_LOGON_FAILURE)), o));
        assertEquals("share 'data' not found on srv (STATUS_BAD_NETWORK_NAME)",
                SmbCopyCommand.explain(api(NtStatus.STATUS_BAD_NETWORK_NAME), o));
        assertEquals("srv ended the session (STATUS_USER_SESSION_DELETED): the server is stopping, or logged the "
                + "session off", SmbCopyCommand.explain(new SMBRuntimeException(api(NtStatus.STATUS_USER_SESSION_DELETED)), o));
        String noServer = "no SMB Direct connection to 10.0.0.9:445 over verbs/rxe0: refused. Does the server have SMB Direct";
        assertEquals(noServer, SmbCopyCommand.explain(new IOException(noServer), o));
        String lost = "the SMB Direct connection to /10.0.0.9:445 was lost: the peer disconnected";
        assertEquals(lost, SmbCopyCommand.explain(new SMBRuntimeException(new IOException(lost)), o));
    }
}
