/*
 * What the source files of the VerbsNative methods share: the record layouts of VerbsNative.java
 * (all records in native byte order), reading and writing them, and the conversions of byte arrays
 * and socket addresses. One file per concern: verbs_native.c (devices), verbs_cm.c (rdma_cm and
 * queue pairs), verbs_post.c (posting and registrations), verbs_cq.c (completions and waiting).
 */
#ifndef VERBS_NATIVE_H
#define VERBS_NATIVE_H

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

jbyteArray to_byte_array(JNIEnv *env, const void *data, int length);
int from_byte_array(JNIEnv *env, jbyteArray array, unsigned char *buf, int capacity);
socklen_t to_sockaddr(JNIEnv *env, jbyteArray address, jint scope_id, jint port, struct sockaddr_storage *ss);
jbyteArray from_sockaddr(JNIEnv *env, const struct sockaddr *sa);

#endif
