package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.Test;

/**
 * How one WRITE of smbj's becomes parts (MS-SMB2 3.2.4.1.5, 2.2.21) and how their responses become
 * the one smbj gets (2.2.22: Count the bytes the parts wrote in order, the credits of all of them,
 * the failure of any part).
 */
class SplitWriteTest {
    private static final int MIB = 1024 * 1024;
    private static final long MESSAGE_ID = 2000;
    private static final int STATUS_DISK_FULL = 0xC000007F;

    /** smbj's WRITE request (2.2.21): header and fixed part, MessageId, CreditCharge, CreditRequest, Length, Offset. */
    private static byte[] request(int length, int charge, int creditRequest, long offset) {
        ByteBuffer b = ByteBuffer.allocate(Smb2Messages.BUFFER).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) charge);
        b.putShort(12, (short) Smb2Messages.COMMAND_WRITE).putShort(14, (short) creditRequest);
        b.putLong(Smb2Messages.MESSAGE_ID, MESSAGE_ID);
        b.putShort(64, (short) 49).putShort(66, (short) 112).putInt(68, length).putLong(72, offset);
        return b.array();
    }

    /** A WRITE response (2.2.22) to a part, or an error response (2.2.2) with a status. */
    private static byte[] response(long messageId, int status, int credits, int count) {
        ByteBuffer b = ByteBuffer.allocate(Smb2Messages.HEADER_SIZE + 16).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) 1).putInt(status)
                .putShort((short) Smb2Messages.COMMAND_WRITE).putShort((short) credits)
                .putInt(0x1 | Smb2Messages.SMB2_FLAGS_SIGNED).putInt(0).putLong(messageId);
        b.put(Smb2Messages.SIGNATURE, (byte) 0x5a);
        b.position(64);
        if (status == 0) {
            b.putShort((short) 17).putShort((short) 0).putInt(count);
        } else {
            b.putShort((short) 9);
        }
        return b.array();
    }

    private static SplitWrite eightMiB() {
        return SplitWrite.of(request(8 * MIB, 128, 128, 0), ByteBuffer.allocate(8 * MIB), 2);
    }

    @Test
    void parts_writeTheirSliceAtTheirOffset_underTheirMessageIds() {
        byte[] smbj = request(8 * MIB, 128, 130, 3 * MIB);
        SplitWrite s = SplitWrite.of(smbj, ByteBuffer.allocate(8 * MIB), 4);
        assertEquals(4, s.parts());
        for (int i = 0; i < 4; i++) {
            ByteBuffer part = ByteBuffer.wrap(s.request(smbj, i)).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(MESSAGE_ID + 32 * i, part.getLong(Smb2Messages.MESSAGE_ID), "MessageId of part " + i);
            assertEquals(32, part.getShort(Smb2Messages.CREDIT_CHARGE), "CreditCharge of part " + i);
            assertEquals(2 * MIB, part.getInt(Smb2Messages.WRITE_LENGTH), "Length of part " + i);
            assertEquals(3L * MIB + 2L * MIB * i, part.getLong(72), "Offset of part " + i);
            assertEquals(2 * MIB * i, s.start(i), "where part " + i + "'s data is");
        }
        assertNull(SplitWrite.of(request(8 * MIB, 128, 128, 0), ByteBuffer.allocate(8 * MIB), 1), "writeParts 1");
        assertNull(SplitWrite.of(request(MIB + 1, 17, 17, 0), ByteBuffer.allocate(MIB + 1), 2), "below 2 MiB");
        assertNull(SplitWrite.of(request(0, 0, 1, 0), ByteBuffer.allocate(0), 2), "nothing to write");
    }

    @Test
    void response_allWritten_countOfAll_creditsOfAll() {
        SplitWrite s = eightMiB();
        s.interim(response(MESSAGE_ID + 64, 0x103, 2, 0));
        s.arrived(1, response(MESSAGE_ID + 64, 0, 10, 4 * MIB));
        assertTrue(s.arrived(0, response(MESSAGE_ID, 0, 20, 4 * MIB)));
        byte[] r = s.response();
        assertEquals(MESSAGE_ID, Smb2Messages.u64(r, Smb2Messages.MESSAGE_ID));
        assertEquals(0, Smb2Messages.i32(r, Smb2Messages.STATUS));
        assertEquals(8 * MIB, Smb2Messages.i32(r, Smb2Messages.WRITE_RESPONSE_COUNT), "Count: both parts");
        assertEquals(32, Smb2Messages.u16(r, Smb2Messages.CREDITS), "CreditResponse: both parts' and the interim's");
        assertEquals(0, r[Smb2Messages.SIGNATURE], "the signature is for the caller to make");
        assertTrue(s.signed());
    }

    @Test
    void response_shortFirstPart_countUpToIt() {
        SplitWrite s = eightMiB();
        s.arrived(0, response(MESSAGE_ID, 0, 1, 3 * MIB));
        s.arrived(1, response(MESSAGE_ID + 64, 0, 1, 4 * MIB));
        assertEquals(3 * MIB, Smb2Messages.i32(s.response(), Smb2Messages.WRITE_RESPONSE_COUNT),
                "what follows a short part is not contiguous with it");
    }

    @Test
    void response_aPartFailed_isItsStatus_underSmbjsMessageId() {
        // {status of part 0, status of part 1} -> the status smbj gets
        int[][] table = {
            {0, STATUS_DISK_FULL, STATUS_DISK_FULL},
            {STATUS_DISK_FULL, 0, STATUS_DISK_FULL},
            {Smb2Messages.STATUS_USER_SESSION_DELETED, STATUS_DISK_FULL, Smb2Messages.STATUS_USER_SESSION_DELETED},
        };
        for (int[] row : table) {
            SplitWrite s = eightMiB();
            s.arrived(0, response(MESSAGE_ID, row[0], 3, 4 * MIB));
            s.arrived(1, response(MESSAGE_ID + 64, row[1], 4, 4 * MIB));
            byte[] r = s.response();
            String what = Integer.toHexString(row[0]) + ", " + Integer.toHexString(row[1]);
            assertEquals(row[2], Smb2Messages.i32(r, Smb2Messages.STATUS), what);
            assertEquals(MESSAGE_ID, Smb2Messages.u64(r, Smb2Messages.MESSAGE_ID), what + ": smbj's message id");
            assertEquals(7, Smb2Messages.u16(r, Smb2Messages.CREDITS), what + ": the credits of both");
        }
    }

    @Test
    void response_secondPartNeverSent_countOfTheFirst() {
        SplitWrite s = eightMiB();
        s.arrived(0, response(MESSAGE_ID, 0, 5, 4 * MIB));
        assertTrue(s.arrived(1, null));
        byte[] r = s.response();
        assertEquals(0, Smb2Messages.i32(r, Smb2Messages.STATUS));
        assertEquals(4 * MIB, Smb2Messages.i32(r, Smb2Messages.WRITE_RESPONSE_COUNT));
        assertEquals(5, Smb2Messages.u16(r, Smb2Messages.CREDITS));
    }

    @Test
    void serverClaimsMoreThanAsked_refused() {
        SplitWrite s = eightMiB();
        s.arrived(0, response(MESSAGE_ID, 0, 1, 4 * MIB + 1));
        s.arrived(1, response(MESSAGE_ID + 64, 0, 1, 4 * MIB));
        IllegalStateException e = assertThrows(IllegalStateException.class, s::response);
        assertTrue(e.getMessage().contains("WRITE of " + 4 * MIB), e.getMessage());
    }
}
