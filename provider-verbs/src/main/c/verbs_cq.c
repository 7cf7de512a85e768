/* VerbsNative methods: completion queues, channels, asynchronous events and waiting on descriptors (verbs_native.h). */
#include "verbs_native.h"

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
