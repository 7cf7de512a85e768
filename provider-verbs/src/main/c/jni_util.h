/*
 * Helpers shared by the JNI functions of libdisni.so (DiSNI's native half and the project's own
 * VerbsNative class).
 */
#ifndef SMBDIRECT_JNI_UTIL_H
#define SMBDIRECT_JNI_UTIL_H

#include <jni.h>
#include <stdint.h>

/* A jlong handed to Java as an opaque native pointer, and back. */
#define PTR(type, value) ((type)(intptr_t)(value))
#define JPTR(pointer) ((jlong)(intptr_t)(pointer))

/*
 * Throws org.smbdirect.rdma.verbs.internal.NativeException(call, err, strerror(err)), or a plain
 * java.io.IOException with the same message when that class cannot be found (DiSNI used alone).
 * Does nothing if an exception is already pending.
 */
void throw_errno(JNIEnv *env, const char *call, int err);

/*
 * Throws NativeException(call, err, strerror(err), posted) for a post of 'count' work requests of
 * which the first 'posted' were posted (they will complete) and the rest were not.
 */
void throw_post_error(JNIEnv *env, const char *call, int err, int posted, int count);

/* Throws java.io.IOException with a message. */
void throw_io(JNIEnv *env, const char *message);

/* Makes a descriptor non-blocking; returns 0 or an errno. */
int set_nonblocking(int fd);

#endif
