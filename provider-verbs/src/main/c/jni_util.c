#include "jni_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#define NATIVE_EXCEPTION "org/smbdirect/rdma/verbs/internal/NativeException"

void throw_io(JNIEnv *env, const char *message)
{
    if ((*env)->ExceptionCheck(env)) {
        return;
    }
    jclass io = (*env)->FindClass(env, "java/io/IOException");
    if (io != NULL) {
        (*env)->ThrowNew(env, io, message);
    }
}

/* Throws NativeException(call, err, text, posted), or an IOException where that class is missing. */
static void throw_native(JNIEnv *env, const char *call, int err, const char *detail, int posted)
{
    char text[192];
    if ((*env)->ExceptionCheck(env)) {
        return;
    }
    if (err == 0) {
        /* Some calls fail without setting errno; say so rather than "Success". */
        snprintf(text, sizeof text, "unknown error");
    } else if (strerror_r(err, text, sizeof text) != 0) {
        snprintf(text, sizeof text, "error %d", err);
    }
    if (detail != NULL) {
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s", detail);
    }
    /* FindClass from a native method uses the loader of the class that declares it, which is the
     * loader of both our classes and the embedded DiSNI classes. */
    jclass cls = (*env)->FindClass(env, NATIVE_EXCEPTION);
    if (cls != NULL) {
        jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(Ljava/lang/String;ILjava/lang/String;I)V");
        if (ctor != NULL) {
            jstring jcall = (*env)->NewStringUTF(env, call);
            jstring jtext = (*env)->NewStringUTF(env, text);
            if (jcall != NULL && jtext != NULL) {
                jobject ex = (*env)->NewObject(env, cls, ctor, jcall, (jint)err, jtext, (jint)posted);
                if (ex != NULL) {
                    (*env)->Throw(env, (jthrowable)ex);
                    return;
                }
            }
        }
    }
    (*env)->ExceptionClear(env);
    char message[320];
    snprintf(message, sizeof message, "%s failed: %s (errno %d)", call, text, err);
    throw_io(env, message);
}

void throw_errno(JNIEnv *env, const char *call, int err)
{
    throw_native(env, call, err, NULL, 0);
}

void throw_post_error(JNIEnv *env, const char *call, int err, int posted, int count)
{
    char detail[64];
    if (count > 1) {
        snprintf(detail, sizeof detail, "; request %d of %d refused, %d posted", posted + 1, count, posted);
    } else {
        detail[0] = 0;
    }
    throw_native(env, call, err, detail, posted);
}

int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return errno;
    }
    return 0;
}
