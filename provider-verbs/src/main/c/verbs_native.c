/*
 * Native methods of org.smbdirect.rdma.verbs.internal.VerbsNative: what SMB Direct needs beyond
 * DiSNI (private data and IRD/ORD, memory windows, send with invalidate, local invalidate,
 * solicited and inline sends, event and completion records, waiting on descriptors).
 * Record layouts are described in VerbsNative.java; all records are in native byte order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "jni_util.h"

#define FN(name) JNICALL Java_org_smbdirect_rdma_verbs_internal_VerbsNative_##name

/* Must match the constants in VerbsNative.java. */
enum {
    WR_ID = 0, WR_OPCODE = 8, WR_FLAGS = 12, WR_REMOTE_ADDR = 16, WR_RKEY = 24, WR_INVALIDATE = 28,
    WR_BIND_MW = 32, WR_BIND_MR = 40, WR_BIND_ADDR = 48, WR_BIND_LENGTH = 56, WR_BIND_RKEY = 64,
    WR_BIND_ACCESS = 68, WR_NUM_SGE = 72, WR_SGE = 80,
    RECV_ID = 0, RECV_NUM_SGE = 8, RECV_SGE = 16,
    SGE_SIZE = 16,
    WC_ID = 0, WC_STATUS = 8, WC_OPCODE = 12, WC_BYTE_LEN = 16, WC_FLAGS = 20, WC_INVALIDATED = 24,
    WC_VENDOR_ERR = 28, WC_SIZE = 32,
    EV_TYPE = 0, EV_STATUS = 4, EV_ID_CONTEXT = 8, EV_ID = 16, EV_LISTEN_CONTEXT = 24,
    EV_RESPONDER_RESOURCES = 32, EV_INITIATOR_DEPTH = 36, EV_PRIVATE_DATA_LEN = 40, EV_PRIVATE_DATA = 48,
    EV_PRIVATE_DATA_MAX = 256,
    OP_SEND = 0, OP_SEND_INV = 1, OP_WRITE = 2, OP_READ = 3, OP_LOCAL_INV = 4, OP_BIND_MW = 5,
    DEV_FIELDS = 15
};

/* Posts of up to this many requests and elements need no heap allocation. */
#define STACK_WRS 4
#define STACK_SGES 32

static inline uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }

static jbyteArray to_byte_array(JNIEnv *env, const void *data, int length)
{
    jbyteArray array = (*env)->NewByteArray(env, length);
    if (array != NULL && length > 0) {
        (*env)->SetByteArrayRegion(env, array, 0, length, (const jbyte *)data);
    }
    return array;
}

/* Copies a Java byte array (may be null) into buf; returns the length, -1 when it does not fit. */
static int from_byte_array(JNIEnv *env, jbyteArray array, unsigned char *buf, int capacity)
{
    if (array == NULL) {
        return 0;
    }
    int length = (*env)->GetArrayLength(env, array);
    if (length > capacity) {
        return -1;
    }
    (*env)->GetByteArrayRegion(env, array, 0, length, (jbyte *)buf);
    return length;
}

/* Builds a socket address from Java's form: 4 address bytes (IPv4) or 16 (IPv6, with the scope
 * identifier of a link-local address). Returns the address length, or 0 with an exception pending. */
static socklen_t to_sockaddr(JNIEnv *env, jbyteArray address, jint scope_id, jint port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    int length = address == NULL ? -1 : (*env)->GetArrayLength(env, address);
    if (port < 0 || port > 65535) {
        throw_errno(env, "socket address (port outside 0..65535)", EINVAL);
        return 0;
    }
    if (length == 4) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons((uint16_t)port);
        (*env)->GetByteArrayRegion(env, address, 0, 4, (jbyte *)&sin->sin_addr);
        return sizeof *sin;
    }
    if (length == 16) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons((uint16_t)port);
        sin6->sin6_scope_id = (uint32_t)scope_id;
        (*env)->GetByteArrayRegion(env, address, 0, 16, (jbyte *)&sin6->sin6_addr);
        return sizeof *sin6;
    }
    throw_errno(env, "socket address (4 or 16 address bytes expected)", EINVAL);
    return 0;
}

/* Java's form of a socket address: address bytes (4 or 16), the port (2 bytes, network order) and,
 * for IPv6, the scope identifier (4 bytes, network order); NULL for another family. */
static jbyteArray from_sockaddr(JNIEnv *env, const struct sockaddr *sa)
{
    unsigned char bytes[22];
    if (sa != NULL && sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
        memcpy(bytes, &sin->sin_addr, 4);
        memcpy(bytes + 4, &sin->sin_port, 2);
        return to_byte_array(env, bytes, 6);
    }
    if (sa != NULL && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
        uint32_t scope = htonl(sin6->sin6_scope_id);
        memcpy(bytes, &sin6->sin6_addr, 16);
        memcpy(bytes + 16, &sin6->sin6_port, 2);
        memcpy(bytes + 18, &scope, 4);
        return to_byte_array(env, bytes, 22);
    }
    return NULL;
}

/* ---------------------------------------------------------------- devices */

JNIEXPORT jobjectArray FN(deviceNames)(JNIEnv *env, jclass cls)
{
    (void)cls;
    int count = 0;
    errno = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    if (list == NULL) {
        throw_errno(env, "ibv_get_device_list", errno);
        return NULL;
    }
    jclass string = (*env)->FindClass(env, "java/lang/String");
    jobjectArray names = string == NULL ? NULL : (*env)->NewObjectArray(env, count, string, NULL);
    for (int i = 0; names != NULL && i < count; i++) {
        jstring name = (*env)->NewStringUTF(env, ibv_get_device_name(list[i]));
        if (name == NULL) {
            names = NULL;
            break;
        }
        (*env)->SetObjectArrayElement(env, names, i, name);
        (*env)->DeleteLocalRef(env, name);
    }
    ibv_free_device_list(list);
    return names;
}

/* Whether rdma_cm can bind to an interface address, and the name of the device it then belongs to
 * (written to name); 0 when it cannot. */
static int device_of(const struct sockaddr *address, char *name, size_t size)
{
    struct rdma_cm_id *id;
    if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP)) {
        return 0;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    memcpy(&ss, address, address->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
    ((struct sockaddr_in *)&ss)->sin_port = 0; /* any port; sin6_port lies at the same offset */
    int found = rdma_bind_addr(id, (struct sockaddr *)&ss) == 0 && id->verbs != NULL;
    if (found) {
        snprintf(name, size, "%s", ibv_get_device_name(id->verbs->device));
    }
    rdma_destroy_id(id);
    return found;
}

JNIEXPORT jobjectArray FN(addressDevices)(JNIEnv *env, jclass cls)
{
    (void)cls;
    struct ifaddrs *interfaces;
    if (getifaddrs(&interfaces)) {
        throw_errno(env, "getifaddrs", errno);
        return NULL;
    }
    int capacity = 16, count = 0;
    char **pairs = calloc((size_t)capacity * 2, sizeof(char *));
    for (struct ifaddrs *i = interfaces; pairs != NULL && i != NULL; i = i->ifa_next) {
        if (i->ifa_addr == NULL || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6)
            || (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) {
            continue;
        }
        char device[IBV_SYSFS_NAME_MAX];
        if (!device_of(i->ifa_addr, device, sizeof device)) {
            continue;
        }
        if (count == capacity) {
            char **grown = realloc(pairs, sizeof(char *) * (size_t)capacity * 4);
            if (grown == NULL) {
                break;
            }
            memset(grown + capacity * 2, 0, sizeof(char *) * (size_t)capacity * 2);
            pairs = grown;
            capacity *= 2;
        }
        /* IPv6 as text with its numeric scope ("fe80::1%3"), which InetAddress parses */
        char text[INET6_ADDRSTRLEN + 16];
        if (i->ifa_addr->sa_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, text, sizeof text);
        } else {
            const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)i->ifa_addr;
            inet_ntop(AF_INET6, &sin6->sin6_addr, text, INET6_ADDRSTRLEN);
            if (sin6->sin6_scope_id != 0) {
                snprintf(text + strlen(text), 16, "%%%u", sin6->sin6_scope_id);
            }
        }
        pairs[2 * count] = strdup(text);
        pairs[2 * count + 1] = strdup(device);
        count++;
    }
    freeifaddrs(interfaces);
    if (pairs == NULL) {
        throw_errno(env, "malloc", ENOMEM);
        return NULL;
    }
    jclass string = (*env)->FindClass(env, "java/lang/String");
    jobjectArray result = string == NULL ? NULL : (*env)->NewObjectArray(env, count * 2, string, NULL);
    for (int k = 0; k < count * 2; k++) {
        if (result != NULL && pairs[k] != NULL) {
            jstring s = (*env)->NewStringUTF(env, pairs[k]);
            if (s != NULL) {
                (*env)->SetObjectArrayElement(env, result, k, s);
                (*env)->DeleteLocalRef(env, s);
            }
        }
        free(pairs[k]);
    }
    free(pairs);
    return result;
}

JNIEXPORT jstring FN(deviceName)(JNIEnv *env, jclass cls, jlong context)
{
    (void)cls;
    return (*env)->NewStringUTF(env, ibv_get_device_name(PTR(struct ibv_context *, context)->device));
}

JNIEXPORT jlongArray FN(queryDevice)(JNIEnv *env, jclass cls, jlong context_ptr)
{
    (void)cls;
    struct ibv_context *context = PTR(struct ibv_context *, context_ptr);
    struct ibv_device_attr attr;
    struct ibv_port_attr port;
    int err = ibv_query_device(context, &attr);
    if (err) {
        throw_errno(env, "ibv_query_device", err);
        return NULL;
    }
    err = ibv_query_port(context, 1, &port);
    if (err) {
        throw_errno(env, "ibv_query_port", err);
        return NULL;
    }
    jlong values[DEV_FIELDS] = {
        (jlong)(attr.max_mr_size > INT64_MAX ? INT64_MAX : attr.max_mr_size),
        attr.max_qp_wr, attr.max_sge, attr.max_sge_rd, attr.max_cqe, attr.max_qp_rd_atom, attr.max_qp_init_rd_atom,
        (jlong)attr.device_cap_flags, attr.max_mw, context->device->transport_type, port.link_layer, port.state,
        attr.vendor_id, port.active_speed, port.active_width
    };
    jlongArray result = (*env)->NewLongArray(env, DEV_FIELDS);
    if (result != NULL) {
        (*env)->SetLongArrayRegion(env, result, 0, DEV_FIELDS, values);
    }
    return result;
}

/* Creates a throw-away queue pair asking for 'inline' bytes; returns the granted inline size, -1
 * when the device refuses. */
static int try_inline(struct ibv_pd *pd, struct ibv_cq *cq, int inline_size)
{
    struct ibv_qp_init_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.send_cq = cq;
    attr.recv_cq = cq;
    attr.qp_type = IBV_QPT_RC;
    attr.cap.max_send_wr = 1;
    attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.cap.max_inline_data = (uint32_t)inline_size;
    struct ibv_qp *qp = ibv_create_qp(pd, &attr);
    if (qp == NULL) {
        return -1;
    }
    int granted = (int)attr.cap.max_inline_data;
    ibv_destroy_qp(qp);
    return granted < inline_size ? inline_size : granted;
}

JNIEXPORT jint FN(probeMaxInline)(JNIEnv *env, jclass cls, jlong context_ptr, jint limit)
{
    (void)cls;
    struct ibv_context *context = PTR(struct ibv_context *, context_ptr);
    struct ibv_pd *pd = ibv_alloc_pd(context);
    if (pd == NULL) {
        throw_errno(env, "ibv_alloc_pd", errno);
        return -1;
    }
    struct ibv_cq *cq = ibv_create_cq(context, 2, NULL, NULL, 0);
    if (cq == NULL) {
        int err = errno;
        ibv_dealloc_pd(pd);
        throw_errno(env, "ibv_create_cq", err);
        return -1;
    }
    int best = try_inline(pd, cq, 0);
    if (best < 0) {
        ibv_destroy_cq(cq);
        ibv_dealloc_pd(pd);
        throw_errno(env, "ibv_create_qp", errno);
        return -1;
    }
    /* Binary search for the largest accepted request in (best, limit]. */
    int lo = best, hi = limit + 1;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        int granted = try_inline(pd, cq, mid);
        if (granted >= 0) {
            lo = granted > mid ? (granted < hi ? granted : hi - 1) : mid;
        } else {
            hi = mid;
        }
    }
    ibv_destroy_cq(cq);
    ibv_dealloc_pd(pd);
    return lo > limit ? limit : lo;
}

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

/* ---------------------------------------------------------------- completion queues */

JNIEXPORT jint FN(pollCq)(JNIEnv *env, jclass cls, jlong cq_ptr, jlong records, jint max)
{
    (void)cls;
    struct ibv_cq *cq = PTR(struct ibv_cq *, cq_ptr);
    unsigned char *out = PTR(unsigned char *, records);
    struct ibv_wc wc[16];
    int total = 0;
    while (total < max) {
        int want = max - total < 16 ? max - total : 16;
        int n = ibv_poll_cq(cq, want, wc);
        if (n < 0) {
            throw_errno(env, "ibv_poll_cq", -n);
            return -1;
        }
        for (int i = 0; i < n; i++, out += WC_SIZE) {
            put64(out + WC_ID, wc[i].wr_id);
            put32(out + WC_STATUS, (uint32_t)wc[i].status);
            put32(out + WC_OPCODE, (uint32_t)wc[i].opcode);
            put32(out + WC_BYTE_LEN, wc[i].byte_len);
            put32(out + WC_FLAGS, wc[i].wc_flags);
            put32(out + WC_INVALIDATED, wc[i].invalidated_rkey);
            put32(out + WC_VENDOR_ERR, wc[i].vendor_err);
        }
        total += n;
        if (n < want) {
            break;
        }
    }
    return total;
}

JNIEXPORT jint FN(resizeCq)(JNIEnv *env, jclass cls, jlong cq_ptr, jint cqe)
{
    (void)cls;
    struct ibv_cq *cq = PTR(struct ibv_cq *, cq_ptr);
    int err = ibv_resize_cq(cq, cqe);
    if (err) {
        throw_errno(env, "ibv_resize_cq", err);
        return -1;
    }
    return cq->cqe;
}

JNIEXPORT jint FN(cqEntries)(JNIEnv *env, jclass cls, jlong cq)
{
    (void)env;
    (void)cls;
    return PTR(struct ibv_cq *, cq)->cqe;
}

JNIEXPORT jint FN(compChannelFd)(JNIEnv *env, jclass cls, jlong channel)
{
    (void)cls;
    int fd = PTR(struct ibv_comp_channel *, channel)->fd;
    int err = set_nonblocking(fd);
    if (err) {
        throw_errno(env, "fcntl(O_NONBLOCK)", err);
        return -1;
    }
    return fd;
}

JNIEXPORT jint FN(asyncFd)(JNIEnv *env, jclass cls, jlong context)
{
    (void)cls;
    int fd = PTR(struct ibv_context *, context)->async_fd;
    int err = set_nonblocking(fd);
    if (err) {
        throw_errno(env, "fcntl(O_NONBLOCK)", err);
        return -1;
    }
    return fd;
}

JNIEXPORT jboolean FN(getAsyncEvent)(JNIEnv *env, jclass cls, jlong context, jlongArray out)
{
    (void)cls;
    if (out == NULL || (*env)->GetArrayLength(env, out) < 2) {
        throw_errno(env, "ibv_get_async_event (result array of 2 expected)", EINVAL);
        return JNI_FALSE;
    }
    struct ibv_async_event event;
    if (ibv_get_async_event(PTR(struct ibv_context *, context), &event)) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return JNI_FALSE;
        }
        throw_errno(env, "ibv_get_async_event", errno);
        return JNI_FALSE;
    }
    jlong values[2] = { event.event_type, 0 };
    switch (event.event_type) {
    case IBV_EVENT_CQ_ERR:
        values[1] = JPTR(event.element.cq);
        break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        values[1] = JPTR(event.element.qp);
        break;
    default:
        break;
    }
    ibv_ack_async_event(&event);
    (*env)->SetLongArrayRegion(env, out, 0, 2, values);
    return JNI_TRUE;
}

/* ---------------------------------------------------------------- waiting */

JNIEXPORT jint FN(eventFd)(JNIEnv *env, jclass cls)
{
    (void)cls;
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
        throw_errno(env, "eventfd", errno);
    }
    return fd;
}

JNIEXPORT void FN(signalEventFd)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env;
    (void)cls;
    uint64_t one = 1;
    ssize_t ignored = write(fd, &one, sizeof one);
    (void)ignored;
}

JNIEXPORT void FN(drainEventFd)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env;
    (void)cls;
    uint64_t value;
    ssize_t ignored = read(fd, &value, sizeof value);
    (void)ignored;
}

JNIEXPORT void FN(closeFd)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env;
    (void)cls;
    close(fd);
}

JNIEXPORT jint FN(poll)(JNIEnv *env, jclass cls, jintArray fds, jint count, jint timeout, jintArray ready_out)
{
    (void)cls;
    if (fds == NULL || ready_out == NULL || count < 0 || count > (*env)->GetArrayLength(env, fds)
        || count > (*env)->GetArrayLength(env, ready_out)) {
        throw_errno(env, "poll (descriptor count larger than its arrays)", EINVAL);
        return -1;
    }
    struct pollfd stack[16];
    struct pollfd *p = count > 16 ? malloc(sizeof *p * (size_t)count) : stack;
    jint values[16];
    jint *v = count > 16 ? malloc(sizeof *v * (size_t)count) : values;
    if (p == NULL || v == NULL) {
        if (p != stack) free(p);
        if (v != values) free(v);
        throw_errno(env, "poll (descriptor memory)", ENOMEM);
        return -1;
    }
    (*env)->GetIntArrayRegion(env, fds, 0, count, v);
    if ((*env)->ExceptionCheck(env)) {
        if (p != stack) free(p);
        if (v != values) free(v);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        p[i].fd = v[i];
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    int n = poll(p, (nfds_t)count, timeout);
    int err = errno;
    if (n >= 0) {
        for (int i = 0; i < count; i++) {
            v[i] = p[i].revents;
        }
        (*env)->SetIntArrayRegion(env, ready_out, 0, count, v);
    }
    if (p != stack) free(p);
    if (v != values) free(v);
    if (n < 0) {
        if (err == EINTR) {
            return 0;
        }
        throw_errno(env, "poll", err);
        return -1;
    }
    return n;
}
