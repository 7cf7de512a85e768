package org.smbdirect.rdma.verbs.internal;

import org.smbdirect.rdma.OperationType;
import org.smbdirect.rdma.RdmaStatus;

/** Maps verbs work completion statuses ({@code enum ibv_wc_status}) onto {@link RdmaStatus}. */
final class WcStatus {
    static final int SUCCESS = 0;
    static final int LOC_LEN_ERR = 1;
    static final int LOC_QP_OP_ERR = 2;
    static final int LOC_EEC_OP_ERR = 3;
    static final int LOC_PROT_ERR = 4;
    static final int WR_FLUSH_ERR = 5;
    static final int MW_BIND_ERR = 6;
    static final int BAD_RESP_ERR = 7;
    static final int LOC_ACCESS_ERR = 8;
    static final int REM_INV_REQ_ERR = 9;
    static final int REM_ACCESS_ERR = 10;
    static final int REM_OP_ERR = 11;
    static final int RETRY_EXC_ERR = 12;
    static final int RNR_RETRY_EXC_ERR = 13;
    static final int LOC_RDD_VIOL_ERR = 14;
    static final int REM_INV_RD_REQ_ERR = 15;
    static final int REM_ABORT_ERR = 16;
    static final int INV_EECN_ERR = 17;
    static final int INV_EEC_STATE_ERR = 18;
    static final int FATAL_ERR = 19;
    static final int RESP_TIMEOUT_ERR = 20;
    static final int GENERAL_ERR = 21;

    private static final String[] NAMES = {"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR",
        "IBV_WC_LOC_EEC_OP_ERR", "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR",
        "IBV_WC_BAD_RESP_ERR", "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR",
        "IBV_WC_REM_OP_ERR", "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR"};

    private WcStatus() {
    }

    static String name(int status) {
        return status >= 0 && status < NAMES.length ? NAMES[status] : "ibv_wc_status " + status;
    }

    /**
     * The API status of a completion.
     *
     * @param status the verbs status
     * @param type what the request was; a receive or local invalidate that fails because of a
     *        token (an invalid send-with-invalidate token, an invalid local token) is {@link
     *        RdmaStatus#INVALID_TOKEN}
     * @return the status
     */
    static RdmaStatus map(int status, OperationType type) {
        return map(status, type, false);
    }

    /**
     * The API status of a completion on a device that may need translating.
     *
     * @param status the verbs status
     * @param type what the request was
     * @param softRoce whether the device is Soft-RoCE (rdma_rxe): it rejects a message longer than
     *        the receive it lands in as a malformed receive (IBV_WC_LOC_QP_OP_ERR at the receiver,
     *        a Remote Operational Error NAK, IBV_WC_REM_OP_ERR, at the sender) instead of a length
     *        error (LOC_LEN_ERR and an Invalid Request NAK). The provider validates every receive
     *        element before posting it, so on rxe that is the only way a receive fails so.
     * @return the status
     */
    static RdmaStatus map(int status, OperationType type, boolean softRoce) {
        if (softRoce && status == LOC_QP_OP_ERR && type == OperationType.RECEIVE) {
            return RdmaStatus.LOCAL_LENGTH_ERROR;
        }
        if (softRoce && status == REM_OP_ERR && type == OperationType.SEND) {
            return RdmaStatus.REMOTE_INVALID_REQUEST;
        }
        switch (status) {
            case SUCCESS:
                return RdmaStatus.SUCCESS;
            case WR_FLUSH_ERR:
                return RdmaStatus.FLUSHED;
            case LOC_LEN_ERR:
                return RdmaStatus.LOCAL_LENGTH_ERROR;
            case LOC_PROT_ERR:
            case LOC_ACCESS_ERR:
            case LOC_RDD_VIOL_ERR:
                return type == OperationType.INVALIDATE ? RdmaStatus.INVALID_TOKEN : RdmaStatus.LOCAL_PROTECTION_ERROR;
            case MW_BIND_ERR:
                return type == OperationType.INVALIDATE || type == OperationType.RECEIVE ? RdmaStatus.INVALID_TOKEN
                        : RdmaStatus.LOCAL_PROTECTION_ERROR;
            case LOC_QP_OP_ERR:
            case LOC_EEC_OP_ERR:
            case INV_EECN_ERR:
            case INV_EEC_STATE_ERR:
                return type == OperationType.INVALIDATE ? RdmaStatus.INVALID_TOKEN : RdmaStatus.LOCAL_OPERATION_ERROR;
            case REM_INV_REQ_ERR:
                // At a receiver, the only invalid request that fails the receive itself is a send
                // that named a token which cannot be invalidated (a too-long send is LOC_LEN_ERR).
                return type == OperationType.RECEIVE ? RdmaStatus.INVALID_TOKEN : RdmaStatus.REMOTE_INVALID_REQUEST;
            case REM_INV_RD_REQ_ERR:
                return RdmaStatus.REMOTE_INVALID_REQUEST;
            case REM_ACCESS_ERR:
                return RdmaStatus.REMOTE_ACCESS_ERROR;
            case REM_OP_ERR:
            case BAD_RESP_ERR:
                return RdmaStatus.REMOTE_OPERATION_ERROR;
            case RNR_RETRY_EXC_ERR:
                return RdmaStatus.RECEIVER_NOT_READY;
            case RETRY_EXC_ERR:
            case REM_ABORT_ERR:
                return RdmaStatus.CONNECTION_RESET;
            case RESP_TIMEOUT_ERR:
                return RdmaStatus.TIMEOUT;
            default:
                return type == OperationType.INVALIDATE ? RdmaStatus.INVALID_TOKEN : RdmaStatus.DEVICE_ERROR;
        }
    }
}
