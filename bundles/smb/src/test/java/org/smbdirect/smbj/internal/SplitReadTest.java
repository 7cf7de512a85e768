package org.smbdirect.smbj.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import org.junit.jupiter.api.Test;

/**
 * How one READ of smbj's becomes parts (MS-SMB2 3.2.4.1.5: message ids and credit charges) and how
 * their responses become the one smbj gets (2.2.20: the data the parts moved in order, the credits
 * of all of them).
 */
class SplitReadTest {
    private static final int KIB = 1024;
    private static final int MIB = 1024 * KIB;
    private static final long MESSAGE_ID = 1000;
    private static final int STATUS_END_OF_FILE = 0xC0000011;

    /** smbj's READ request: header and fixed part, MessageId, CreditCharge, CreditRequest, Length, Offset. */
    private static byte[] request(int length, int charge, int creditRequest, long offset) {
        ByteBuffer b = ByteBuffer.allocate(Smb2Messages.BUFFER + 1).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) charge);
        b.putShort(12, (short) Smb2Messages.COMMAND_READ).putShort(14, (short) creditRequest);
        b.putLong(Smb2Messages.MESSAGE_ID, MESSAGE_ID);
        b.putShort(64, (short) 49).putInt(68, length).putLong(72, offset).putInt(96, 1);
        return b.array();
    }

    /** A READ response (2.2.20) to a part: moved by RDMA, or inline data, or a status. */
    private static byte[] response(long messageId, int status, int credits, int remaining, byte[] inline, boolean signed) {
        int size = Smb2Messages.HEADER_SIZE + 16 + Math.max(1, inline.length);
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {(byte) 0xfe, 'S', 'M', 'B'}).putShort((short) 64).putShort((short) 1).putInt(status)
                .putShort((short) Smb2Messages.COMMAND_READ).putShort((short) credits)
                .putInt(0x1 | (signed ? Smb2Messages.SMB2_FLAGS_SIGNED : 0)).putInt(0).putLong(messageId);
        b.putLong(Smb2Messages.SESSION_ID, 0x77);
        b.put(Smb2Messages.SIGNATURE, (byte) 0x5a);
        b.position(64);
        b.putShort((short) 17).put((byte) 80).put((byte) 0).putInt(inline.length).putInt(remaining).putInt(0).put(inline);
        return b.array();
    }

    private static byte[] moved(long messageId, int bytes) {
        return response(messageId, 0, 8, bytes, new byte[0], false);
    }

    @Test
    void layout_partsOfWholeCredits_messageIdsAndChargesAsOneRequest() {
        // {length, charge, creditRequest, maxParts} -> {parts, length of each, charge of each}
        Object[][] table = {
            {8 * MIB, 128, 130, 2, new int[] {4 * MIB, 4 * MIB}, new int[] {64, 64}},
            {8 * MIB, 128, 130, 4, new int[] {2 * MIB, 2 * MIB, 2 * MIB, 2 * MIB}, new int[] {32, 32, 32, 32}},
            {3 * MIB + 5, 49, 49, 4, new int[] {1088 * KIB, 1088 * KIB, 896 * KIB + 5}, new int[] {17, 17, 15}},
            {2 * MIB, 32, 1, 16, new int[] {MIB, MIB}, new int[] {16, 16}},
        };
        for (Object[] row : table) {
            int length = (int) row[0];
            int charge = (int) row[1];
            int creditRequest = (int) row[2];
            byte[] smbj = request(length, charge, creditRequest, 5 * MIB);
            SplitRead s = SplitRead.of(smbj, ByteBuffer.allocate(length), (int) row[3]);
            int[] lengths = (int[]) row[4];
            int[] charges = (int[]) row[5];
            String what = length + " bytes in up to " + row[3] + " parts";
            assertEquals(lengths.length, s.parts(), what);
            long id = MESSAGE_ID;
            int start = 0;
            int requested = 0;
            for (int i = 0; i < s.parts(); i++) {
                ByteBuffer part = ByteBuffer.wrap(s.request(smbj, i)).order(ByteOrder.LITTLE_ENDIAN);
                assertEquals(id, part.getLong(Smb2Messages.MESSAGE_ID), what + ": MessageId of part " + i);
                assertEquals(charges[i], part.getShort(6), what + ": CreditCharge of part " + i);
                assertEquals(lengths[i], part.getInt(68), what + ": Length of part " + i);
                assertEquals(5L * MIB + start, part.getLong(72), what + ": Offset of part " + i);
                assertEquals(start, s.start(i), what + ": where part " + i + " goes");
                assertEquals(1, part.getInt(96), what + ": MinimumCount as smbj's");
                assertTrue(charges[i] * 64 * KIB >= lengths[i], what + ": the charge covers the part");
                requested += part.getShort(14);
                id += charges[i];
                start += lengths[i];
            }
            assertEquals(MESSAGE_ID + charge, id, what + ": smbj's message ids, all used");
            assertEquals(length, start, what + ": every byte in one part");
            assertEquals(Math.max(creditRequest, s.parts()), requested, what + ": CreditRequest as smbj's (at least 1 each)");
        }
    }

    @Test
    void layout_belowTwoParts_orOneAsked_staysWhole() {
        assertNull(SplitRead.of(request(2 * MIB - 64 * KIB, 31, 31, 0), ByteBuffer.allocate(2 * MIB), 2), "below 2 MiB");
        assertNull(SplitRead.of(request(8 * MIB, 128, 128, 0), ByteBuffer.allocate(8 * MIB), 1), "readParts 1");
        assertNull(SplitRead.of(request(4096, 1, 1, 0), ByteBuffer.allocate(4096), 16), "4 KiB");
    }

    @Test
    void response_allMovedInFull_dataOfAllParts_creditsOfAll() {
        SplitRead s = SplitRead.of(request(8 * MIB, 128, 128, 0), ByteBuffer.allocate(8 * MIB), 2);
        s.interim(response(MESSAGE_ID + 64, 0x103, 3, 0, new byte[0], false));
        assertFalse(s.arrived(1, moved(MESSAGE_ID + 64, 4 * MIB)), "the second part first");
        assertTrue(s.arrived(0, moved(MESSAGE_ID, 4 * MIB)));
        ByteBuffer r = ByteBuffer.wrap(s.response()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(MESSAGE_ID, r.getLong(Smb2Messages.MESSAGE_ID), "smbj's message id");
        assertEquals(0, r.getInt(Smb2Messages.STATUS));
        assertEquals(0, r.getInt(Smb2Messages.READ_RESPONSE_DATA_LENGTH), "DataLength");
        assertEquals(8 * MIB, r.getInt(Smb2Messages.READ_RESPONSE_DATA_REMAINING), "DataRemaining: both parts");
        assertEquals(8 + 8 + 3, r.getShort(14), "CreditResponse: both parts' and the interim's");
        assertEquals(Smb2Messages.HEADER_SIZE + 17, r.capacity(), "header, fixed part and one byte of Buffer");
        for (int i = Smb2Messages.SIGNATURE; i < Smb2Messages.SIGNATURE + Smb2Messages.SIGNATURE_SIZE; i++) {
            assertEquals(0, r.get(i), "the signature is for the caller to make");
        }
    }

    @Test
    void response_shortOrFailedParts_dataUpToTheFirstShortOne() {
        int eof = -1;
        // {bytes moved, or -1 for END_OF_FILE, by part} -> bytes smbj gets
        Object[][] table = {
            {new int[] {4 * MIB, 3 * MIB}, 7 * MIB},
            {new int[] {3 * MIB, 0}, 3 * MIB},
            {new int[] {4 * MIB, eof}, 4 * MIB},
            {new int[] {2 * MIB, 4 * MIB}, 2 * MIB}, // a short first part: what follows is not contiguous
        };
        for (Object[] row : table) {
            int[] parts = (int[]) row[0];
            SplitRead s = SplitRead.of(request(8 * MIB, 128, 128, 0), ByteBuffer.allocate(8 * MIB), 2);
            for (int i = 0; i < parts.length; i++) {
                long id = s.messageId(i);
                s.arrived(i, parts[i] == eof ? response(id, STATUS_END_OF_FILE, 1, 0, new byte[0], false)
                        : moved(id, parts[i]));
            }
            assertEquals((int) row[1], s.moved(), java.util.Arrays.toString(parts));
            assertEquals((int) row[1], ByteBuffer.wrap(s.response()).order(ByteOrder.LITTLE_ENDIAN)
                    .getInt(Smb2Messages.READ_RESPONSE_DATA_REMAINING));
        }
    }

    @Test
    void response_firstPartFailed_isThatResponse_withAllCredits() {
        SplitRead s = SplitRead.of(request(8 * MIB, 128, 128, 64 * MIB), ByteBuffer.allocate(8 * MIB), 2);
        byte[] failed = response(MESSAGE_ID, STATUS_END_OF_FILE, 5, 0, new byte[0], true);
        s.arrived(0, failed);
        s.arrived(1, response(MESSAGE_ID + 64, STATUS_END_OF_FILE, 7, 0, new byte[0], true));
        byte[] r = s.response();
        assertEquals(failed.length, r.length);
        assertEquals(STATUS_END_OF_FILE, Smb2Messages.i32(r, Smb2Messages.STATUS));
        assertEquals(12, Smb2Messages.u16(r, 14), "CreditResponse of both");
        assertEquals(0, s.moved());
        assertTrue(s.signed(), "signed as the first part's was");
    }

    @Test
    void inlinePart_copiedIntoItsSlice() {
        ByteBuffer buffer = ByteBuffer.allocate(4 * MIB);
        SplitRead s = SplitRead.of(request(4 * MIB, 64, 64, 0), buffer, 2);
        byte[] data = new byte[1000];
        new java.util.Random(7).nextBytes(data);
        s.arrived(0, moved(MESSAGE_ID, 2 * MIB));
        s.arrived(1, response(MESSAGE_ID + 32, 0, 1, 0, data, false));
        assertEquals(2 * MIB + 1000, s.moved());
        byte[] back = new byte[1000];
        buffer.get(2 * MIB, back);
        assertArrayEquals(data, back);
    }

    @Test
    void serverClaimsMoreThanAsked_refused() {
        SplitRead s = SplitRead.of(request(4 * MIB, 64, 64, 0), ByteBuffer.allocate(4 * MIB), 2);
        s.arrived(0, moved(MESSAGE_ID, 2 * MIB + 1));
        s.arrived(1, moved(MESSAGE_ID + 32, 0));
        assertThrows(IllegalStateException.class, s::response);
    }
}
