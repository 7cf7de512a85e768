package org.smbdirect.smbj.internal;

import java.nio.ByteBuffer;

/**
 * A large WRITE of smbj's as several WRITEs in flight ({@link SplitRequest}), each one's data read
 * by the server from its slice of the buffer (MS-SMB2 3.3.5.13). The response smbj gets is the
 * first part's with Count the bytes the parts wrote up to the first that wrote less than asked
 * (2.2.22); when a part failed, the first failed part's response, under smbj's message id, so that
 * the caller learns of the failure as it would of one WRITE's, whichever part it hit.
 */
final class SplitWrite extends SplitRequest {
    private SplitWrite(byte[] request, ByteBuffer buffer, int maxParts) {
        super(request, buffer, maxParts, "WRITE", Smb2Messages.WRITE_RESPONSE_BUFFER);
    }

    /**
     * How smbj's WRITE request is split, or {@code null} when it stays one request.
     *
     * @param request smbj's WRITE request, serialized (header and fixed part, Length the data's)
     * @param buffer the data: part i's from {@link #start(int)}
     * @param maxParts the most parts ({@link org.smbdirect.smbj.SmbjOptions#writeParts()})
     * @return the split, or {@code null}
     */
    static SplitWrite of(byte[] request, ByteBuffer buffer, int maxParts) {
        SplitWrite s = new SplitWrite(request, buffer, maxParts);
        return s.parts() < 2 ? null : s;
    }

    @Override
    int movedBy(byte[] r) {
        return Smb2Messages.i32(r, Smb2Messages.WRITE_RESPONSE_COUNT);
    }

    @Override
    byte[] merged(byte[][] responses) {
        for (byte[] r : responses) {
            if (!succeeded(r) && r.length >= Smb2Messages.HEADER_SIZE) {
                byte[] m = r.clone();
                Smb2Messages.put32(m, Smb2Messages.MESSAGE_ID, (int) messageId);
                Smb2Messages.put32(m, Smb2Messages.MESSAGE_ID + 4, (int) (messageId >>> 32));
                return m;
            }
        }
        // every part that was sent succeeded (the first always was sent when its split ends here)
        byte[] m = responses[0].clone();
        Smb2Messages.put32(m, Smb2Messages.WRITE_RESPONSE_COUNT, moved());
        return m;
    }
}
