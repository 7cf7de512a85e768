package org.smbdirect.smbj.internal;

import org.smbdirect.smbj.SmbjOptions;
import org.smbdirect.transport.ConnectionParameters;

import com.hierynomus.mssmb2.SMB2Dialect;

/**
 * What one SMB Direct connection carries for smbj: the largest READ and WRITE data inline (the
 * message, its fixed part and room for a transform header within the negotiated
 * MaxFragmentedSendSize and MaxFragmentedRecvSize, MS-SMBD 3.1.4.7), the largest through the
 * RDMA channel (MaxReadWriteSize), and whether the channel can be used at all in each direction.
 */
final class Limits {
    private static final int PAGE = 4096;
    private static final int CREDIT = 65536;

    final int inlineWrite;
    final int inlineRead;
    final int transact;
    final int rdmaSize;
    /** READ by RDMA: the server RDMA-writes into a buffer registered for remote write. */
    final boolean rdmaReads;
    /** WRITE by RDMA: the server RDMA-reads a buffer registered for remote read (needs our IRD). */
    final boolean rdmaWrites;
    final int threshold;
    final boolean remoteInvalidation;

    private Limits(ConnectionParameters p, SmbjOptions o, boolean encryptData) {
        // whole 64 KiB credits: smbj's WRITE puts as many 64 KiB chunks of its data in the message as
        // the request was granted credits, whatever its Length says (MS-SMBD 3.1.5.6 guarantees
        // MaxFragmentedSize >= 128 KiB, so at least one fits)
        inlineWrite = Math.max(CREDIT, (p.maxFragmentedSendSize() - Smb2Messages.WRITE_REQUEST_OVERHEAD) / CREDIT * CREDIT);
        inlineRead = pages(p.maxFragmentedRecvSize() - Smb2Messages.READ_RESPONSE_OVERHEAD);
        // IOCTL, QUERY_INFO, QUERY_DIRECTORY and SET_INFO carry up to MaxTransactSize each way
        transact = pages(Math.min(p.maxFragmentedSendSize(), p.maxFragmentedRecvSize()) - 256);
        rdmaSize = Math.max(CREDIT, p.maxReadWriteSize() / CREDIT * CREDIT);
        // MS-SMB2 2.2.43: on an encrypted session the RDMA channel could carry data only in an
        // SMB2_RDMA_TRANSFORM, which needs RDMA transform capabilities (3.1.1) that smbj does not
        // negotiate: such a session's data goes inline, sized for it from the start.
        rdmaReads = o.rdmaChannel() && !encryptData && rdmaSize > 0;
        rdmaWrites = rdmaReads && p.rdmaRead() && p.ird() > 0;
        threshold = o.rdmaThreshold();
        remoteInvalidation = o.remoteInvalidation();
    }

    static Limits of(ConnectionParameters p, SmbjOptions o, boolean encryptData) {
        return new Limits(p, o, encryptData);
    }

    private static int pages(int bytes) {
        return Math.max(PAGE, bytes / PAGE * PAGE);
    }

    /** MS-SMB2 2.2.19: the RDMA channel exists from SMB 3.0 on. */
    boolean rdmaReads(SMB2Dialect dialect) {
        return rdmaReads && dialect.isSmb3x();
    }

    boolean rdmaWrites(SMB2Dialect dialect) {
        return rdmaWrites && dialect.isSmb3x();
    }

    int maxReadSize(SMB2Dialect dialect, int server) {
        return Math.min(server, rdmaReads(dialect) ? rdmaSize : inlineRead);
    }

    int maxWriteSize(SMB2Dialect dialect, int server) {
        return Math.min(Math.max(CREDIT, server / CREDIT * CREDIT), rdmaWrites(dialect) ? rdmaSize : inlineWrite);
    }

    int maxTransactSize(int server) {
        return Math.min(server, transact);
    }

    /**
     * MS-SMB2 3.2.4.6 and 3.2.4.7: the channel for the dialect; SMB 3.0 knows only
     * SMB2_CHANNEL_RDMA_V1, 3.0.2 and 3.1.1 also the one that asks for remote invalidation.
     */
    int channel(SMB2Dialect dialect) {
        return dialect == SMB2Dialect.SMB_3_0 || !remoteInvalidation ? Smb2Messages.SMB2_CHANNEL_RDMA_V1
                : Smb2Messages.SMB2_CHANNEL_RDMA_V1_INVALIDATE;
    }

    @Override
    public String toString() {
        return "inline WRITE " + inlineWrite + ", inline READ " + inlineRead + ", transact " + transact
                + ", RDMA " + rdmaSize + " (READ " + rdmaReads + ", WRITE " + rdmaWrites + ", threshold " + threshold + ")";
    }
}
