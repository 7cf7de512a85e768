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

void throw_errno(JNIEnv *env, const char *call, int err)
{
    char text[128];
    if ((*env)->ExceptionCheck(env)) {
        return;
    }
    if (err == 0) {
        /* Some calls fail without setting errno; say so rather than "Success". */
        snprintf(text, sizeof text, "unknown error");
    } else if (strerror_r(err, text, sizeof text) != 0) {
        snprintf(text, sizeof text, "error %d", err);
    }
    /* FindClass from a native method uses the loader of the class that declares it, which is the
     * loader of both our classes and the embedded DiSNI classes. */
    jclass cls = (*env)->FindClass(env, NATIVE_EXCEPTION);
    if (cls != NULL) {
        jmethodID ctor = (*env)->GetMethodID(env, cls, "<init>", "(Ljava/lang/String;ILjava/lang/String;)V");
        if (ctor != NULL) {
            jstring jcall = (*env)->NewStringUTF(env, call);
            jstring jtext = (*env)->NewStringUTF(env, text);
            if (jcall != NULL && jtext != NULL) {
                jobject ex = (*env)->NewObject(env, cls, ctor, jcall, (jint)err, jtext);
                if (ex != NULL) {
                    (*env)->Throw(env, (jthrowable)ex);
                    return;
                }
            }
        }
    }
    (*env)->ExceptionClear(env);
    char message[256];
    snprintf(message, sizeof message, "%s failed: %s (errno %d)", call, text, err);
    throw_io(env, message);
}

int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        return errno;
    }
    return 0;
}
