/* VerbsNative methods: rdma_cm identifiers, addresses, connection events and queue pairs (verbs_native.h). */
#include "verbs_native.h"

/* ---------------------------------------------------------------- rdma_cm */

JNIEXPORT jint FN(eventChannelFd)(JNIEnv *env, jclass cls, jlong channel)
{
    (void)cls;
    int fd = PTR(struct rdma_event_channel *, channel)->fd;
    int err = set_nonblocking(fd);
    if (err) {
        throw_errno(env, "fcntl(O_NONBLOCK)", err);
        return -1;
    }
    return fd;
}

JNIEXPORT jlong FN(createCmId)(JNIEnv *env, jclass cls, jlong channel, jlong context)
{
    (void)cls;
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(PTR(struct rdma_event_channel *, channel), &id, PTR(void *, context), RDMA_PS_TCP)) {
        throw_errno(env, "rdma_create_id", errno);
        return 0;
    }
    return JPTR(id);
}

JNIEXPORT void FN(setCmIdContext)(JNIEnv *env, jclass cls, jlong id, jlong context)
{
    (void)env;
    (void)cls;
    PTR(struct rdma_cm_id *, id)->context = PTR(void *, context);
}

JNIEXPORT jlong FN(cmIdContext)(JNIEnv *env, jclass cls, jlong id)
{
    (void)env;
    (void)cls;
    return JPTR(PTR(struct rdma_cm_id *, id)->verbs);
}

JNIEXPORT void FN(bindAddr)(JNIEnv *env, jclass cls, jlong id, jbyteArray address, jint scope_id, jint port)
{
    (void)cls;
    struct sockaddr_storage ss;
    if (to_sockaddr(env, address, scope_id, port, &ss) != 0
        && rdma_bind_addr(PTR(struct rdma_cm_id *, id), (struct sockaddr *)&ss)) {
        throw_errno(env, "rdma_bind_addr", errno);
    }
}

JNIEXPORT jbyteArray FN(address)(JNIEnv *env, jclass cls, jlong id_ptr, jboolean remote)
{
    (void)cls;
    struct rdma_cm_id *id = PTR(struct rdma_cm_id *, id_ptr);
    return from_sockaddr(env, remote ? rdma_get_peer_addr(id) : rdma_get_local_addr(id));
}

JNIEXPORT void FN(listen)(JNIEnv *env, jclass cls, jlong id, jint backlog)
{
    (void)cls;
    if (rdma_listen(PTR(struct rdma_cm_id *, id), backlog)) {
        throw_errno(env, "rdma_listen", errno);
    }
}

JNIEXPORT void FN(resolveAddr)(JNIEnv *env, jclass cls, jlong id, jbyteArray address, jint scope_id, jint port,
                               jint timeout)
{
    (void)cls;
    struct sockaddr_storage ss;
    if (to_sockaddr(env, address, scope_id, port, &ss) != 0
        && rdma_resolve_addr(PTR(struct rdma_cm_id *, id), NULL, (struct sockaddr *)&ss, timeout)) {
        throw_errno(env, "rdma_resolve_addr", errno);
    }
}

JNIEXPORT void FN(resolveRoute)(JNIEnv *env, jclass cls, jlong id, jint timeout)
{
    (void)cls;
    if (rdma_resolve_route(PTR(struct rdma_cm_id *, id), timeout)) {
        throw_errno(env, "rdma_resolve_route", errno);
    }
}

static int fill_param(JNIEnv *env, struct rdma_conn_param *param, unsigned char *buf, jbyteArray private_data,
                      jint ird, jint ord, jint retry, jint rnr_retry)
{
    memset(param, 0, sizeof *param);
    int length = from_byte_array(env, private_data, buf, 255);
    if (length < 0) {
        throw_errno(env, "rdma_conn_param (private data longer than 255 bytes)", EINVAL);
        return -1;
    }
    param->private_data = length > 0 ? buf : NULL;
    param->private_data_len = (uint8_t)length;
    param->responder_resources = (uint8_t)ird;
    param->initiator_depth = (uint8_t)ord;
    param->retry_count = (uint8_t)retry;
    param->rnr_retry_count = (uint8_t)rnr_retry;
    param->flow_control = 1;
    return 0;
}

JNIEXPORT void FN(connect)(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data, jint ird, jint ord,
                           jint retry, jint rnr_retry)
{
    (void)cls;
    struct rdma_conn_param param;
    unsigned char buf[256];
    if (fill_param(env, &param, buf, private_data, ird, ord, retry, rnr_retry) == 0
        && rdma_connect(PTR(struct rdma_cm_id *, id), &param)) {
        throw_errno(env, "rdma_connect", errno);
    }
}

JNIEXPORT void FN(accept)(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data, jint ird, jint ord,
                          jint rnr_retry)
{
    (void)cls;
    struct rdma_conn_param param;
    unsigned char buf[256];
    if (fill_param(env, &param, buf, private_data, ird, ord, 7, rnr_retry) == 0
        && rdma_accept(PTR(struct rdma_cm_id *, id), &param)) {
        throw_errno(env, "rdma_accept", errno);
    }
}

JNIEXPORT void FN(reject)(JNIEnv *env, jclass cls, jlong id, jbyteArray private_data)
{
    (void)cls;
    unsigned char buf[256];
    int length = from_byte_array(env, private_data, buf, 255);
    if (length < 0) {
        throw_errno(env, "rdma_reject (private data longer than 255 bytes)", EINVAL);
        return;
    }
    if (rdma_reject(PTR(struct rdma_cm_id *, id), length > 0 ? buf : NULL, (uint8_t)length)) {
        throw_errno(env, "rdma_reject", errno);
    }
}

JNIEXPORT void FN(disconnect)(JNIEnv *env, jclass cls, jlong id)
{
    (void)cls;
    if (rdma_disconnect(PTR(struct rdma_cm_id *, id))) {
        throw_errno(env, "rdma_disconnect", errno);
    }
}

JNIEXPORT void FN(destroyCmId)(JNIEnv *env, jclass cls, jlong id)
{
    (void)cls;
    if (rdma_destroy_id(PTR(struct rdma_cm_id *, id))) {
        throw_errno(env, "rdma_destroy_id", errno);
    }
}

static int has_conn_param(enum rdma_cm_event_type type)
{
    switch (type) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
    case RDMA_CM_EVENT_ESTABLISHED:
    case RDMA_CM_EVENT_REJECTED:
        return 1;
    default:
        return 0;
    }
}

JNIEXPORT jboolean FN(getCmEvent)(JNIEnv *env, jclass cls, jlong channel, jobject out)
{
    (void)cls;
    unsigned char *record = (*env)->GetDirectBufferAddress(env, out);
    if (record == NULL || (*env)->GetDirectBufferCapacity(env, out) < EV_PRIVATE_DATA + EV_PRIVATE_DATA_MAX) {
        throw_errno(env, "rdma_get_cm_event (event buffer too small)", EINVAL);
        return JNI_FALSE;
    }
    struct rdma_cm_event *event;
    if (rdma_get_cm_event(PTR(struct rdma_event_channel *, channel), &event)) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return JNI_FALSE;
        }
        throw_errno(env, "rdma_get_cm_event", errno);
        return JNI_FALSE;
    }
    memset(record, 0, EV_PRIVATE_DATA);
    put32(record + EV_TYPE, (uint32_t)event->event);
    put32(record + EV_STATUS, (uint32_t)event->status);
    put64(record + EV_ID_CONTEXT, (uint64_t)(uintptr_t)event->id->context);
    put64(record + EV_ID, (uint64_t)(uintptr_t)event->id);
    if (event->listen_id != NULL) {
        put64(record + EV_LISTEN_CONTEXT, (uint64_t)(uintptr_t)event->listen_id->context);
    }
    if (has_conn_param(event->event)) {
        const struct rdma_conn_param *conn = &event->param.conn;
        int length = conn->private_data == NULL ? 0 : conn->private_data_len;
        if (length > EV_PRIVATE_DATA_MAX) {
            length = EV_PRIVATE_DATA_MAX;
        }
        put32(record + EV_RESPONDER_RESOURCES, conn->responder_resources);
        put32(record + EV_INITIATOR_DEPTH, conn->initiator_depth);
        put32(record + EV_PRIVATE_DATA_LEN, (uint32_t)length);
        if (length > 0) {
            memcpy(record + EV_PRIVATE_DATA, conn->private_data, (size_t)length);
        }
    }
    rdma_ack_cm_event(event);
    return JNI_TRUE;
}

/* ---------------------------------------------------------------- queue pairs */

JNIEXPORT jlong FN(createQp)(JNIEnv *env, jclass cls, jlong id_ptr, jlong pd, jlong send_cq, jlong recv_cq,
                             jint send_wr, jint recv_wr, jint send_sge, jint recv_sge, jint inline_size,
                             jintArray caps_out)
{
    (void)cls;
    if (caps_out == NULL || (*env)->GetArrayLength(env, caps_out) < 5) {
        throw_errno(env, "rdma_create_qp (capabilities array of 5 expected)", EINVAL);
        return 0;
    }
    struct rdma_cm_id *id = PTR(struct rdma_cm_id *, id_ptr);
    struct ibv_qp_init_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.send_cq = PTR(struct ibv_cq *, send_cq);
    attr.recv_cq = PTR(struct ibv_cq *, recv_cq);
    attr.qp_type = IBV_QPT_RC;
    /* Each request says whether it completes (IBV_SEND_SIGNALED): the consumer's always do, and
     * SILENT_SUCCESS is implemented by not reporting the success; most memory window binds do
     * not, and complete with the next request that does (see VerbsEndpoint). */
    attr.sq_sig_all = 0;
    attr.cap.max_send_wr = (uint32_t)send_wr;
    attr.cap.max_recv_wr = (uint32_t)recv_wr;
    attr.cap.max_send_sge = (uint32_t)send_sge;
    attr.cap.max_recv_sge = (uint32_t)recv_sge;
    attr.cap.max_inline_data = (uint32_t)inline_size;
    if (rdma_create_qp(id, PTR(struct ibv_pd *, pd), &attr)) {
        throw_errno(env, "rdma_create_qp", errno);
        return 0;
    }
    jint caps[5] = { (jint)attr.cap.max_send_wr, (jint)attr.cap.max_recv_wr, (jint)attr.cap.max_send_sge,
                     (jint)attr.cap.max_recv_sge, (jint)attr.cap.max_inline_data };
    (*env)->SetIntArrayRegion(env, caps_out, 0, 5, caps);
    return JPTR(id->qp);
}

JNIEXPORT void FN(destroyQp)(JNIEnv *env, jclass cls, jlong id)
{
    (void)env;
    (void)cls;
    rdma_destroy_qp(PTR(struct rdma_cm_id *, id));
}

JNIEXPORT void FN(qpToError)(JNIEnv *env, jclass cls, jlong qp)
{
    (void)cls;
    struct ibv_qp_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.qp_state = IBV_QPS_ERR;
    int err = ibv_modify_qp(PTR(struct ibv_qp *, qp), &attr, IBV_QP_STATE);
    if (err) {
        throw_errno(env, "ibv_modify_qp(IBV_QPS_ERR)", err);
    }
}
