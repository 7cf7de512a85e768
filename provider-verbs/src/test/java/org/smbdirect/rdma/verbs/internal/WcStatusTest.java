package org.smbdirect.rdma.verbs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;

class WcStatusTest {

    @Test
    void verbsStatuses_mapOntoTheApi() {
        assertEquals(RdmaStatus.SUCCESS, WcStatus.map(WcStatus.SUCCESS, OperationType.SEND));
        assertEquals(RdmaStatus.FLUSHED, WcStatus.map(WcStatus.WR_FLUSH_ERR, OperationType.RECEIVE));
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR, WcStatus.map(WcStatus.LOC_LEN_ERR, OperationType.RECEIVE));
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, WcStatus.map(WcStatus.REM_INV_REQ_ERR, OperationType.SEND));
        assertEquals(RdmaStatus.REMOTE_ACCESS_ERROR, WcStatus.map(WcStatus.REM_ACCESS_ERR, OperationType.READ));
        assertEquals(RdmaStatus.RECEIVER_NOT_READY, WcStatus.map(WcStatus.RNR_RETRY_EXC_ERR, OperationType.SEND));
        assertEquals(RdmaStatus.CONNECTION_RESET, WcStatus.map(WcStatus.RETRY_EXC_ERR, OperationType.WRITE));
        assertEquals(RdmaStatus.LOCAL_PROTECTION_ERROR, WcStatus.map(WcStatus.LOC_PROT_ERR, OperationType.SEND));
        assertEquals(RdmaStatus.DEVICE_ERROR, WcStatus.map(WcStatus.FATAL_ERR, OperationType.SEND));
    }

    @Test
    void tokenFailures_areInvalidToken() {
        // NdkSendAndInvalidate: the receive of a send naming a bad token fails INVALID_TOKEN
        assertEquals(RdmaStatus.INVALID_TOKEN, WcStatus.map(WcStatus.REM_INV_REQ_ERR, OperationType.RECEIVE));
        assertEquals(RdmaStatus.INVALID_TOKEN, WcStatus.map(WcStatus.MW_BIND_ERR, OperationType.INVALIDATE));
        assertEquals(RdmaStatus.INVALID_TOKEN, WcStatus.map(WcStatus.LOC_QP_OP_ERR, OperationType.INVALIDATE));
    }

    @Test
    void softRoceLengthErrors_areTranslatedOnlyForSoftRoce() {
        assertEquals(RdmaStatus.LOCAL_LENGTH_ERROR,
                WcStatus.map(WcStatus.LOC_QP_OP_ERR, OperationType.RECEIVE, true));
        assertEquals(RdmaStatus.REMOTE_INVALID_REQUEST, WcStatus.map(WcStatus.REM_OP_ERR, OperationType.SEND, true));
        assertEquals(RdmaStatus.LOCAL_OPERATION_ERROR,
                WcStatus.map(WcStatus.LOC_QP_OP_ERR, OperationType.RECEIVE, false));
        assertEquals(RdmaStatus.REMOTE_OPERATION_ERROR, WcStatus.map(WcStatus.REM_OP_ERR, OperationType.SEND, false));
        assertEquals(RdmaStatus.REMOTE_OPERATION_ERROR, WcStatus.map(WcStatus.REM_OP_ERR, OperationType.WRITE, true));
    }

    @Test
    void names_areTheVerbsNames() {
        assertEquals("IBV_WC_REM_ACCESS_ERR", WcStatus.name(WcStatus.REM_ACCESS_ERR));
        assertEquals("ibv_wc_status 99", WcStatus.name(99));
    }
}
