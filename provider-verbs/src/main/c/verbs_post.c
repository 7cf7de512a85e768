/* VerbsNative methods: posting sends, RDMA Reads and Writes, receives; memory regions and windows (verbs_native.h). */
#include "verbs_native.h"

static void read_sges(const unsigned char *p, struct ibv_sge *sges, int count)
{
    for (int i = 0; i < count; i++, p += SGE_SIZE) {
        sges[i].addr = get64(p);
        sges[i].length = get32(p + 8);
        sges[i].lkey = get32(p + 12);
    }
}

/* The opcode and operands of a send-queue request other than a window bind; EINVAL for an unknown
 * operation. */
static int set_operation(struct ibv_send_wr *wr, int op, uint64_t remote_addr, uint32_t rkey, uint32_t invalidate)
{
    switch (op) {
    case OP_SEND:
        wr->opcode = IBV_WR_SEND;
        return 0;
    case OP_SEND_INV:
        wr->opcode = IBV_WR_SEND_WITH_INV;
        wr->invalidate_rkey = invalidate;
        return 0;
    case OP_WRITE:
    case OP_READ:
        wr->opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
        wr->wr.rdma.remote_addr = remote_addr;
        wr->wr.rdma.rkey = rkey;
        return 0;
    case OP_LOCAL_INV:
        wr->opcode = IBV_WR_LOCAL_INV;
        wr->invalidate_rkey = invalidate;
        return 0;
    default:
        return EINVAL;
    }
}

/* The most scatter/gather elements one record may name: far above any device's max_sge, low enough
 * that a corrupt count cannot make the element arrays overflow. */
#define MAX_RECORD_SGES 4096

JNIEXPORT void FN(postSend)(JNIEnv *env, jclass cls, jlong qp, jlong records, jint count)
{
    (void)cls;
    if (count <= 0 || count > 65536) {
        throw_post_error(env, "ibv_post_send (request count outside 1..65536)", EINVAL, 0, count);
        return;
    }
    /* First pass: the element counts, checked before anything is built or posted. */
    const unsigned char *p = PTR(const unsigned char *, records);
    int total_sges = 0;
    for (int i = 0; i < count; i++) {
        int n = (int)get32(p + WR_NUM_SGE);
        if (n < 0 || n > MAX_RECORD_SGES) {
            throw_post_error(env, "ibv_post_send (scatter/gather element count outside 0..4096)", EINVAL, 0, count);
            return;
        }
        total_sges += n;
        p += WR_SGE + n * SGE_SIZE;
    }
    struct ibv_send_wr stack_wrs[STACK_WRS];
    struct ibv_sge stack_sges[STACK_SGES];
    struct ibv_send_wr *wrs = stack_wrs;
    struct ibv_sge *sges = stack_sges;
    if (count > STACK_WRS) {
        wrs = malloc(sizeof *wrs * (size_t)count);
    }
    if (total_sges > STACK_SGES) {
        sges = malloc(sizeof *sges * (size_t)total_sges);
    }
    if (wrs == NULL || sges == NULL) {
        if (wrs != stack_wrs) free(wrs);
        if (sges != stack_sges) free(sges);
        throw_post_error(env, "ibv_post_send (work request memory)", ENOMEM, 0, count);
        return;
    }
    memset(wrs, 0, sizeof *wrs * (size_t)count);
    p = PTR(const unsigned char *, records);
    struct ibv_sge *next_sge = sges;
    int err = 0;
    for (int i = 0; i < count && err == 0; i++) {
        struct ibv_send_wr *wr = &wrs[i];
        int n = (int)get32(p + WR_NUM_SGE);
        wr->wr_id = get64(p + WR_ID);
        wr->next = i + 1 < count ? &wrs[i + 1] : NULL;
        wr->send_flags = get32(p + WR_FLAGS);
        wr->num_sge = n;
        wr->sg_list = n > 0 ? next_sge : NULL;
        read_sges(p + WR_SGE, next_sge, n);
        next_sge += n;
        int op = (int)get32(p + WR_OPCODE);
        if (op == OP_BIND_MW) {
            wr->opcode = IBV_WR_BIND_MW;
            wr->bind_mw.mw = PTR(struct ibv_mw *, get64(p + WR_BIND_MW));
            wr->bind_mw.rkey = get32(p + WR_BIND_RKEY);
            wr->bind_mw.bind_info.mr = PTR(struct ibv_mr *, get64(p + WR_BIND_MR));
            wr->bind_mw.bind_info.addr = get64(p + WR_BIND_ADDR);
            wr->bind_mw.bind_info.length = get64(p + WR_BIND_LENGTH);
            wr->bind_mw.bind_info.mw_access_flags = get32(p + WR_BIND_ACCESS);
        } else {
            err = set_operation(wr, op, get64(p + WR_REMOTE_ADDR), get32(p + WR_RKEY), get32(p + WR_INVALIDATE));
        }
        p += WR_SGE + n * SGE_SIZE;
    }
    struct ibv_send_wr *bad = NULL;
    int posted = 0;
    if (err == 0) {
        err = ibv_post_send(PTR(struct ibv_qp *, qp), wrs, &bad);
        /* ibv_post_send stops at the first request it refuses: those before it are posted and
         * will complete, the rest were not. */
        posted = err == 0 ? count : (bad >= wrs && bad < wrs + count ? (int)(bad - wrs) : 0);
        /* A type 2 window's bind names the window by the rkey it has now (Soft-RoCE refuses a
         * bind whose ibv_mw rkey is not the window's current one), and nothing updates the ibv_mw
         * of a window bound by a work request: once posted, the new key is the window's. */
        for (int i = 0; i < posted; i++) {
            if (wrs[i].opcode == IBV_WR_BIND_MW) {
                wrs[i].bind_mw.mw->rkey = wrs[i].bind_mw.rkey;
            }
        }
    }
    if (wrs != stack_wrs) free(wrs);
    if (sges != stack_sges) free(sges);
    if (err) {
        throw_post_error(env, posted == 0 && bad == NULL ? "ibv_post_send (unknown operation)" : "ibv_post_send", err,
                         posted, count);
    }
}

/* One send-queue request of at most one element, from arguments rather than a record: what most
 * sends and RDMA operations are, without the record's writes and reads (see WorkRequestRecords). */
JNIEXPORT void FN(postSendOne)(JNIEnv *env, jclass cls, jlong qp, jlong wr_id, jint op, jint flags,
                               jlong remote_addr, jint rkey, jint invalidate, jint sges, jlong address,
                               jint length, jint lkey)
{
    (void)cls;
    if (sges < 0 || sges > 1) {
        throw_post_error(env, "ibv_post_send (one request takes 0 or 1 element here)", EINVAL, 0, 1);
        return;
    }
    struct ibv_sge sge = { .addr = (uint64_t)address, .length = (uint32_t)length, .lkey = (uint32_t)lkey };
    struct ibv_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = (uint64_t)wr_id;
    wr.send_flags = (unsigned int)flags;
    wr.num_sge = sges;
    wr.sg_list = sges > 0 ? &sge : NULL;
    if (set_operation(&wr, op, (uint64_t)remote_addr, (uint32_t)rkey, (uint32_t)invalidate)) {
        throw_post_error(env, "ibv_post_send (unknown operation)", EINVAL, 0, 1);
        return;
    }
    int err = ibv_post_send(PTR(struct ibv_qp *, qp), &wr, &bad);
    if (err) {
        throw_post_error(env, "ibv_post_send", err, 0, 1);
    }
}

JNIEXPORT void FN(postRecv)(JNIEnv *env, jclass cls, jlong qp, jlong record)
{
    (void)cls;
    const unsigned char *p = PTR(const unsigned char *, record);
    int n = (int)get32(p + RECV_NUM_SGE);
    if (n < 0 || n > MAX_RECORD_SGES) {
        throw_errno(env, "ibv_post_recv (scatter/gather element count outside 0..4096)", EINVAL);
        return;
    }
    struct ibv_sge stack_sges[STACK_SGES];
    struct ibv_sge *sges = n > STACK_SGES ? malloc(sizeof *sges * (size_t)n) : stack_sges;
    if (sges == NULL) {
        throw_errno(env, "ibv_post_recv (work request memory)", ENOMEM);
        return;
    }
    read_sges(p + RECV_SGE, sges, n);
    struct ibv_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof wr);
    wr.wr_id = get64(p + RECV_ID);
    wr.sg_list = sges;
    wr.num_sge = n;
    int err = ibv_post_recv(PTR(struct ibv_qp *, qp), &wr, &bad);
    if (sges != stack_sges) free(sges);
    if (err) {
        throw_errno(env, "ibv_post_recv", err);
    }
}

/* ---------------------------------------------------------------- memory */

JNIEXPORT jlong FN(bufferAddress)(JNIEnv *env, jclass cls, jobject buffer)
{
    (void)cls;
    void *address = (*env)->GetDirectBufferAddress(env, buffer);
    return JPTR(address);
}

JNIEXPORT jlong FN(regMr)(JNIEnv *env, jclass cls, jlong pd, jlong address, jlong length, jint access,
                          jintArray keys_out)
{
    (void)cls;
    /* Checked first: a registration made while an exception is pending would be lost to Java. */
    if (keys_out == NULL || (*env)->GetArrayLength(env, keys_out) < 2 || length <= 0) {
        throw_errno(env, "ibv_reg_mr (keys array of 2 and a positive length expected)", EINVAL);
        return 0;
    }
    struct ibv_mr *mr = ibv_reg_mr(PTR(struct ibv_pd *, pd), PTR(void *, address), (size_t)length, access);
    if (mr == NULL) {
        throw_errno(env, "ibv_reg_mr", errno);
        return 0;
    }
    jint keys[2] = { (jint)mr->lkey, (jint)mr->rkey };
    (*env)->SetIntArrayRegion(env, keys_out, 0, 2, keys);
    if ((*env)->ExceptionCheck(env)) {
        ibv_dereg_mr(mr);
        return 0;
    }
    return JPTR(mr);
}

JNIEXPORT void FN(deregMr)(JNIEnv *env, jclass cls, jlong mr)
{
    (void)cls;
    int err = ibv_dereg_mr(PTR(struct ibv_mr *, mr));
    if (err) {
        throw_errno(env, "ibv_dereg_mr", err);
    }
}

JNIEXPORT jlong FN(allocMw)(JNIEnv *env, jclass cls, jlong pd, jintArray rkey_out)
{
    (void)cls;
    if (rkey_out == NULL || (*env)->GetArrayLength(env, rkey_out) < 1) {
        throw_errno(env, "ibv_alloc_mw (rkey array of 1 expected)", EINVAL);
        return 0;
    }
    struct ibv_mw *mw = ibv_alloc_mw(PTR(struct ibv_pd *, pd), IBV_MW_TYPE_2);
    if (mw == NULL) {
        throw_errno(env, "ibv_alloc_mw", errno);
        return 0;
    }
    jint rkey = (jint)mw->rkey;
    (*env)->SetIntArrayRegion(env, rkey_out, 0, 1, &rkey);
    if ((*env)->ExceptionCheck(env)) {
        ibv_dealloc_mw(mw);
        return 0;
    }
    return JPTR(mw);
}

JNIEXPORT void FN(deallocMw)(JNIEnv *env, jclass cls, jlong mw)
{
    (void)cls;
    int err = ibv_dealloc_mw(PTR(struct ibv_mw *, mw));
    if (err) {
        throw_errno(env, "ibv_dealloc_mw", err);
    }
}
