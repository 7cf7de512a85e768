/*
 * Native methods of org.smbdirect.rdma.verbs.internal.VerbsNative: what SMB Direct needs beyond
 * DiSNI (private data and IRD/ORD, memory windows, send with invalidate, local invalidate,
 * solicited and inline sends, event and completion records, waiting on descriptors).
 * Record layouts are described in VerbsNative.java; all records are in native byte order.
 * This file: the shared conversions and the devices; the rest in verbs_cm.c, verbs_post.c and
 * verbs_cq.c (verbs_native.h).
 */
#include "verbs_native.h"

jbyteArray to_byte_array(JNIEnv *env, const void *data, int length)
{
    jbyteArray array = (*env)->NewByteArray(env, length);
    if (array != NULL && length > 0) {
        (*env)->SetByteArrayRegion(env, array, 0, length, (const jbyte *)data);
    }
    return array;
}

/* Copies a Java byte array (may be null) into buf; returns the length, -1 when it does not fit. */
int from_byte_array(JNIEnv *env, jbyteArray array, unsigned char *buf, int capacity)
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
socklen_t to_sockaddr(JNIEnv *env, jbyteArray address, jint scope_id, jint port, struct sockaddr_storage *ss)
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
jbyteArray from_sockaddr(JNIEnv *env, const struct sockaddr *sa)
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
