/*
 * The native half of DiSNI 2.1 (com.ibm.disni:disni), written for this project from the native
 * method declarations of com.ibm.disni.verbs.impl.NativeDispatcher and
 * com.ibm.disni.util.NativeAffinity and the libibverbs/librdmacm manual pages.
 *
 * Conventions DiSNI's Java side relies on:
 * - objects are native pointers carried in a jlong (NatObject.getObjId());
 * - methods declared "throws IOException" report failure by throwing; the int-returning ones
 *   return a negative value instead, and the pointer-returning ones never return a negative value
 *   on success;
 * - structures exchanged through memory addresses (work requests, work completions, sockaddr_in)
 *   are the C structures themselves; DiSNI checks their sizes through the _get*Size methods at
 *   start-up and adopts ours.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <netinet/in.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "jni_util.h"

/* The interface version DiSNI 2.1's Java side expects (NativeDispatcher.JVERBS_VERSION). */
#define DISNI_JVERBS_VERSION 32

/* Scatter/gather limit of queue pairs created through DiSNI's createQP, which has no such
 * parameter; clamped to what the device supports. */
#define DISNI_QP_SGE 4

#define FN(name) JNICALL Java_com_ibm_disni_verbs_impl_NativeDispatcher__1##name

/* Waits until fd is readable; returns 1 when readable, 0 on timeout, -1 on error (errno set).
 * A negative timeout waits without limit. */
static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n;
    do {
        n = poll(&p, 1, timeout_ms);
    } while (n < 0 && errno == EINTR);
    return n;
}

/* ---------------------------------------------------------------- rdma_cm */

JNIEXPORT jlong FN(createEventChannel)(JNIEnv *env, jobject self)
{
    (void)self;
    struct rdma_event_channel *channel = rdma_create_event_channel();
    if (channel == NULL) {
        throw_errno(env, "rdma_create_event_channel", errno);
        return -1;
    }
    return JPTR(channel);
}

JNIEXPORT jlong FN(createId)(JNIEnv *env, jobject self, jlong channel, jshort ps)
{
    (void)self;
    struct rdma_cm_id *id = NULL;
    if (rdma_create_id(PTR(struct rdma_event_channel *, channel), &id, NULL, (enum rdma_port_space)(uint16_t)ps)) {
        throw_errno(env, "rdma_create_id", errno);
        return -1;
    }
    return JPTR(id);
}

JNIEXPORT jlong FN(createQP)(JNIEnv *env, jobject self, jlong id_ptr, jlong pd_ptr, jlong send_cq, jlong recv_cq,
                             jint qp_type, jint max_send_wr, jint max_recv_wr, jint max_inline)
{
    (void)self;
    struct rdma_cm_id *id = PTR(struct rdma_cm_id *, id_ptr);
    struct ibv_pd *pd = PTR(struct ibv_pd *, pd_ptr);
    struct ibv_device_attr device;
    int sge = DISNI_QP_SGE;
    if (ibv_query_device(pd->context, &device) == 0 && device.max_sge < sge) {
        sge = device.max_sge;
    }
    struct ibv_qp_init_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.send_cq = PTR(struct ibv_cq *, send_cq);
    attr.recv_cq = PTR(struct ibv_cq *, recv_cq);
    attr.qp_type = (enum ibv_qp_type)qp_type;
    attr.cap.max_send_wr = (uint32_t)max_send_wr;
    attr.cap.max_recv_wr = (uint32_t)max_recv_wr;
    attr.cap.max_send_sge = (uint32_t)sge;
    attr.cap.max_recv_sge = (uint32_t)sge;
    attr.cap.max_inline_data = (uint32_t)max_inline;
    if (rdma_create_qp(id, pd, &attr)) {
        throw_errno(env, "rdma_create_qp", errno);
        return -1;
    }
    return JPTR(id->qp);
}

JNIEXPORT void FN(bindAddr)(JNIEnv *env, jobject self, jlong id, jlong addr)
{
    (void)self;
    if (rdma_bind_addr(PTR(struct rdma_cm_id *, id), PTR(struct sockaddr *, addr))) {
        throw_errno(env, "rdma_bind_addr", errno);
    }
}

JNIEXPORT void FN(listen)(JNIEnv *env, jobject self, jlong id, jint backlog)
{
    (void)self;
    if (rdma_listen(PTR(struct rdma_cm_id *, id), backlog)) {
        throw_errno(env, "rdma_listen", errno);
    }
}

JNIEXPORT void FN(resolveAddr)(JNIEnv *env, jobject self, jlong id, jlong src, jlong dst, jint timeout)
{
    (void)self;
    if (rdma_resolve_addr(PTR(struct rdma_cm_id *, id), PTR(struct sockaddr *, src), PTR(struct sockaddr *, dst),
                          timeout)) {
        throw_errno(env, "rdma_resolve_addr", errno);
    }
}

JNIEXPORT void FN(resolveRoute)(JNIEnv *env, jobject self, jlong id, jint timeout)
{
    (void)self;
    if (rdma_resolve_route(PTR(struct rdma_cm_id *, id), timeout)) {
        throw_errno(env, "rdma_resolve_route", errno);
    }
}

/*
 * Waits up to timeout ms for the next event, stores the listening identifier (or, for events that
 * are not connection requests, the identifier itself) at listen_out and the identifier at conn_out,
 * acknowledges the event and returns its type; -1 on timeout or failure. The event is acknowledged
 * here because DiSNI's _ackCmEvent names no channel; it copies nothing it would need later.
 */
JNIEXPORT jint FN(getCmEvent)(JNIEnv *env, jobject self, jlong channel_ptr, jlong listen_out, jlong conn_out,
                              jint timeout)
{
    (void)env;
    (void)self;
    struct rdma_event_channel *channel = PTR(struct rdma_event_channel *, channel_ptr);
    if (wait_readable(channel->fd, timeout) <= 0) {
        return -1;
    }
    struct rdma_cm_event *event;
    if (rdma_get_cm_event(channel, &event)) {
        return -1;
    }
    jint type = (jint)event->event;
    uint64_t listen = (uint64_t)(uintptr_t)(event->listen_id != NULL ? event->listen_id : event->id);
    uint64_t conn = (uint64_t)(uintptr_t)event->id;
    memcpy(PTR(void *, listen_out), &listen, sizeof listen);
    memcpy(PTR(void *, conn_out), &conn, sizeof conn);
    rdma_ack_cm_event(event);
    return type;
}

static int connect_param(JNIEnv *env, struct rdma_conn_param *param, jint retry, jint rnr_retry)
{
    (void)env;
    memset(param, 0, sizeof *param);
    /* RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH: as many RDMA Reads as the device allows. */
    param->responder_resources = RDMA_MAX_RESP_RES;
    param->initiator_depth = RDMA_MAX_INIT_DEPTH;
    param->retry_count = (uint8_t)retry;
    param->rnr_retry_count = (uint8_t)rnr_retry;
    param->flow_control = 1;
    return 0;
}

JNIEXPORT void FN(connect)(JNIEnv *env, jobject self, jlong id, jint retry, jint rnr_retry, jlong private_data,
                           jbyte private_data_len)
{
    (void)self;
    struct rdma_conn_param param;
    connect_param(env, &param, retry, rnr_retry);
    param.private_data = PTR(const void *, private_data);
    param.private_data_len = (uint8_t)private_data_len;
    if (rdma_connect(PTR(struct rdma_cm_id *, id), &param)) {
        throw_errno(env, "rdma_connect", errno);
    }
}

JNIEXPORT void FN(accept)(JNIEnv *env, jobject self, jlong id, jint retry, jint rnr_retry)
{
    (void)self;
    struct rdma_conn_param param;
    connect_param(env, &param, retry, rnr_retry);
    if (rdma_accept(PTR(struct rdma_cm_id *, id), &param)) {
        throw_errno(env, "rdma_accept", errno);
    }
}

/* Events are acknowledged by _getCmEvent; nothing is left to do. */
JNIEXPORT jint FN(ackCmEvent)(JNIEnv *env, jobject self, jint type)
{
    (void)env;
    (void)self;
    (void)type;
    return 0;
}

JNIEXPORT jint FN(disconnect)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    return rdma_disconnect(PTR(struct rdma_cm_id *, id)) ? -errno : 0;
}

JNIEXPORT jint FN(destroyEventChannel)(JNIEnv *env, jobject self, jlong channel)
{
    (void)env;
    (void)self;
    rdma_destroy_event_channel(PTR(struct rdma_event_channel *, channel));
    return 0;
}

JNIEXPORT jint FN(destroyCmId)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    return rdma_destroy_id(PTR(struct rdma_cm_id *, id)) ? -errno : 0;
}

JNIEXPORT jint FN(destroyQP)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    rdma_destroy_qp(PTR(struct rdma_cm_id *, id));
    return 0;
}

static jint copy_sockaddr(struct sockaddr *sa, jlong out)
{
    if (sa == NULL || sa->sa_family != AF_INET) {
        return -1;
    }
    memcpy(PTR(void *, out), sa, sizeof(struct sockaddr_in));
    return 0;
}

JNIEXPORT jint FN(getSrcAddr)(JNIEnv *env, jobject self, jlong id, jlong out)
{
    (void)env;
    (void)self;
    return copy_sockaddr(rdma_get_local_addr(PTR(struct rdma_cm_id *, id)), out);
}

JNIEXPORT jint FN(getDstAddr)(JNIEnv *env, jobject self, jlong id, jlong out)
{
    (void)env;
    (void)self;
    return copy_sockaddr(rdma_get_peer_addr(PTR(struct rdma_cm_id *, id)), out);
}

JNIEXPORT jint FN(destroyEp)(JNIEnv *env, jobject self, jlong id)
{
    (void)env;
    (void)self;
    rdma_destroy_ep(PTR(struct rdma_cm_id *, id));
    return 0;
}

/* ---------------------------------------------------------------- verbs */

JNIEXPORT jlong FN(allocPd)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    struct ibv_pd *pd = ibv_alloc_pd(PTR(struct ibv_context *, context));
    if (pd == NULL) {
        throw_errno(env, "ibv_alloc_pd", errno);
        return -1;
    }
    return JPTR(pd);
}

JNIEXPORT jlong FN(createCompChannel)(JNIEnv *env, jobject self, jlong context)
{
    (void)self;
    struct ibv_comp_channel *channel = ibv_create_comp_channel(PTR(struct ibv_context *, context));
    if (channel == NULL) {
        throw_errno(env, "ibv_create_comp_channel", errno);
        return -1;
    }
    return JPTR(channel);
}

JNIEXPORT jlong FN(createCQ)(JNIEnv *env, jobject self, jlong context, jlong channel, jint cqe, jint vector)
{
    (void)self;
    struct ibv_cq *cq = ibv_create_cq(PTR(struct ibv_context *, context), cqe, NULL,
                                      PTR(struct ibv_comp_channel *, channel), vector);
    if (cq == NULL) {
        throw_errno(env, "ibv_create_cq", errno);
        return -1;
    }
    return JPTR(cq);
}

/*
 * DiSNI 2.1's RdmaVerbs.modifyQP always passes a null attribute pointer: there is nothing to
 * modify then, and the call succeeds. A non-null pointer names a struct ibv_qp_attr whose state
 * field is applied.
 */
JNIEXPORT jint FN(modifyQP)(JNIEnv *env, jobject self, jlong qp, jlong attr)
{
    (void)self;
    if (attr == 0) {
        return 0;
    }
    int err = ibv_modify_qp(PTR(struct ibv_qp *, qp), PTR(struct ibv_qp_attr *, attr), IBV_QP_STATE);
    if (err) {
        throw_errno(env, "ibv_modify_qp", err);
        return -1;
    }
    return 0;
}

JNIEXPORT jlong FN(regMr)(JNIEnv *env, jobject self, jlong pd, jlong addr, jint length, jint access, jlong lkey_out,
                          jlong rkey_out, jlong handle_out)
{
    (void)self;
    struct ibv_mr *mr = ibv_reg_mr(PTR(struct ibv_pd *, pd), PTR(void *, addr), (size_t)(uint32_t)length, access);
    if (mr == NULL) {
        throw_errno(env, "ibv_reg_mr", errno);
        return -1;
    }
    uint32_t lkey = mr->lkey, rkey = mr->rkey, handle = mr->handle;
    memcpy(PTR(void *, lkey_out), &lkey, sizeof lkey);
    memcpy(PTR(void *, rkey_out), &rkey, sizeof rkey);
    memcpy(PTR(void *, handle_out), &handle, sizeof handle);
    return JPTR(mr);
}

/* The on-demand-paging capabilities for reliable connections (IBV_ODP_SUPPORT_* bits), -1 when
 * the device has no on-demand paging. */
JNIEXPORT jint FN(queryOdpSupport)(JNIEnv *env, jobject self, jlong context)
{
    (void)env;
    (void)self;
    struct ibv_device_attr_ex attr;
    memset(&attr, 0, sizeof attr);
    if (ibv_query_device_ex(PTR(struct ibv_context *, context), NULL, &attr)) {
        return -1;
    }
    if (!(attr.odp_caps.general_caps & IBV_ODP_SUPPORT)) {
        return -1;
    }
    return (jint)attr.odp_caps.per_transport_caps.rc_odp_caps;
}

/* Experimental-verbs prefetch, mapped onto ibv_advise_mr(PREFETCH). */
JNIEXPORT jint FN(expPrefetchMr)(JNIEnv *env, jobject self, jlong mr_ptr, jlong addr, jint length)
{
    (void)self;
    struct ibv_mr *mr = PTR(struct ibv_mr *, mr_ptr);
    struct ibv_sge sge = { .addr = (uint64_t)addr, .length = (uint32_t)length, .lkey = mr->lkey };
    int err = ibv_advise_mr(mr->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
    if (err) {
        throw_errno(env, "ibv_advise_mr", err);
        return -1;
    }
    return 0;
}

JNIEXPORT void FN(deregMr)(JNIEnv *env, jobject self, jlong mr)
{
    (void)self;
    int err = ibv_dereg_mr(PTR(struct ibv_mr *, mr));
    if (err) {
        throw_errno(env, "ibv_dereg_mr", err);
    }
}

JNIEXPORT void FN(postSend)(JNIEnv *env, jobject self, jlong qp, jlong wr)
{
    (void)self;
    struct ibv_send_wr *bad = NULL;
    int err = ibv_post_send(PTR(struct ibv_qp *, qp), PTR(struct ibv_send_wr *, wr), &bad);
    if (err) {
        throw_errno(env, "ibv_post_send", err);
    }
}

JNIEXPORT void FN(postRecv)(JNIEnv *env, jobject self, jlong qp, jlong wr)
{
    (void)self;
    struct ibv_recv_wr *bad = NULL;
    int err = ibv_post_recv(PTR(struct ibv_qp *, qp), PTR(struct ibv_recv_wr *, wr), &bad);
    if (err) {
        throw_errno(env, "ibv_post_recv", err);
    }
}

/* Waits up to timeout ms for a completion event on the channel and takes it (the caller
 * acknowledges it with _ackCqEvent); returns 0, or -1 on timeout. */
JNIEXPORT jint FN(getCqEvent)(JNIEnv *env, jobject self, jlong channel_ptr, jint timeout)
{
    (void)self;
    struct ibv_comp_channel *channel = PTR(struct ibv_comp_channel *, channel_ptr);
    int ready = wait_readable(channel->fd, timeout);
    if (ready < 0) {
        throw_errno(env, "poll", errno);
        return -1;
    }
    if (ready == 0) {
        return -1;
    }
    struct ibv_cq *cq;
    void *cq_context;
    if (ibv_get_cq_event(channel, &cq, &cq_context)) {
        if (errno == EAGAIN) {
            return -1;
        }
        throw_errno(env, "ibv_get_cq_event", errno);
        return -1;
    }
    return 0;
}

JNIEXPORT jint FN(pollCQ)(JNIEnv *env, jobject self, jlong cq, jint ne, jlong wc)
{
    (void)self;
    int n = ibv_poll_cq(PTR(struct ibv_cq *, cq), ne, PTR(struct ibv_wc *, wc));
    if (n < 0) {
        throw_errno(env, "ibv_poll_cq", -n);
        return -1;
    }
    return n;
}

JNIEXPORT jint FN(reqNotifyCQ)(JNIEnv *env, jobject self, jlong cq, jint solicited)
{
    (void)self;
    int err = ibv_req_notify_cq(PTR(struct ibv_cq *, cq), solicited);
    if (err) {
        throw_errno(env, "ibv_req_notify_cq", err);
        return -1;
    }
    return 0;
}

JNIEXPORT jint FN(ackCqEvent)(JNIEnv *env, jobject self, jlong cq, jint count)
{
    (void)env;
    (void)self;
    ibv_ack_cq_events(PTR(struct ibv_cq *, cq), (unsigned int)count);
    return 0;
}

JNIEXPORT jint FN(destroyCompChannel)(JNIEnv *env, jobject self, jlong channel)
{
    (void)env;
    (void)self;
    return -ibv_destroy_comp_channel(PTR(struct ibv_comp_channel *, channel));
}

JNIEXPORT jint FN(deallocPd)(JNIEnv *env, jobject self, jlong pd)
{
    (void)env;
    (void)self;
    return -ibv_dealloc_pd(PTR(struct ibv_pd *, pd));
}

JNIEXPORT jint FN(destroyCQ)(JNIEnv *env, jobject self, jlong cq)
{
    (void)env;
    (void)self;
    return -ibv_destroy_cq(PTR(struct ibv_cq *, cq));
}

JNIEXPORT jlong FN(getContext)(JNIEnv *env, jobject self, jlong id)
{
    (void)self;
    struct ibv_context *context = PTR(struct rdma_cm_id *, id)->verbs;
    if (context == NULL) {
        throw_io(env, "rdma_cm_id is not bound to a device");
        return -1;
    }
    return JPTR(context);
}

JNIEXPORT jint FN(getQpNum)(JNIEnv *env, jobject self, jlong qp)
{
    (void)env;
    (void)self;
    return (jint)PTR(struct ibv_qp *, qp)->qp_num;
}

JNIEXPORT jint FN(getContextFd)(JNIEnv *env, jobject self, jlong context)
{
    (void)env;
    (void)self;
    return PTR(struct ibv_context *, context)->cmd_fd;
}

JNIEXPORT jint FN(getContextNumCompVectors)(JNIEnv *env, jobject self, jlong context)
{
    (void)env;
    (void)self;
    return PTR(struct ibv_context *, context)->num_comp_vectors;
}

JNIEXPORT jint FN(getPdHandle)(JNIEnv *env, jobject self, jlong pd)
{
    (void)env;
    (void)self;
    return (jint)PTR(struct ibv_pd *, pd)->handle;
}

/* ---------------------------------------------------------------- layout checks */

JNIEXPORT jint FN(getSockAddrInSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct sockaddr_in);
}

JNIEXPORT jint FN(getIbvRecvWRSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_recv_wr);
}

JNIEXPORT jint FN(getIbvSendWRSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_send_wr);
}

JNIEXPORT jint FN(getIbvSgeSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_sge);
}

JNIEXPORT jint FN(getIbvWCSize)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)sizeof(struct ibv_wc);
}

JNIEXPORT jint FN(getRemoteAddressOffset)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)offsetof(struct ibv_send_wr, wr.rdma.remote_addr);
}

JNIEXPORT jint FN(getRKeyOffset)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return (jint)offsetof(struct ibv_send_wr, wr.rdma.rkey);
}

JNIEXPORT jint FN(getVersion)(JNIEnv *env, jobject self)
{
    (void)env;
    (void)self;
    return DISNI_JVERBS_VERSION;
}

/* ---------------------------------------------------------------- NativeAffinity */

/* Binds the calling thread to the CPUs of the mask's set bits (CPUs 0 to 63). */
JNIEXPORT void JNICALL Java_com_ibm_disni_util_NativeAffinity__1setAffinity(JNIEnv *env, jclass cls, jlong mask)
{
    (void)cls;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu = 0; cpu < 64; cpu++) {
        if ((uint64_t)mask & (UINT64_C(1) << cpu)) {
            CPU_SET(cpu, &set);
        }
    }
    if (sched_setaffinity(0, sizeof set, &set)) {
        throw_errno(env, "sched_setaffinity", errno);
    }
}

/* The calling thread's CPUs 0 to 63 as a bit mask; -1 on failure. */
JNIEXPORT jlong JNICALL Java_com_ibm_disni_util_NativeAffinity__1getAffinity(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set)) {
        return -1;
    }
    uint64_t mask = 0;
    for (int cpu = 0; cpu < 64; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            mask |= UINT64_C(1) << cpu;
        }
    }
    return (jlong)mask;
}
