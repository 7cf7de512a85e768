#!/bin/sh
# Builds libdisni.so where a C compiler, make and the rdma-core development files are present.
# Elsewhere it prints one line saying what was skipped and how to get it, and the bundle is built
# without native code (the provider then reports "no native library in this build"), so that the
# README's first command needs only a JDK and Maven. Where CI is set, a missing toolchain fails the
# build: CI must not lose the native path.
# Usage (from Maven): build-native.sh OUT_DIR JAVA_HOME
#        build-native.sh --check   only says whether it would build (exit 0) or why not (exit 1)
set -eu
check_only=false
if [ "${1:-}" = "--check" ]; then check_only=true; set -- /nonexistent /nonexistent; fi
out=$1
java_home=$2
cc=${CC:-gcc}
fragment=$out/../native.bnd
hint="Debian/Ubuntu: apt-get install gcc make libibverbs-dev librdmacm-dev; Fedora/RHEL: dnf install gcc make rdma-core-devel"

missing=
if ! "$cc" --version >/dev/null 2>&1; then
  missing="no C compiler ($cc)"
elif ! make --version >/dev/null 2>&1; then
  missing="no make"
else
  # the headers and the libraries the Makefile links against, as one small program
  probe=$(printf '#include <infiniband/verbs.h>\n#include <rdma/rdma_cma.h>\nint main(void) { return ibv_get_device_list(0) == 0 && rdma_create_event_channel() == 0; }\n' \
    | "$cc" -x c -o /dev/null - -libverbs -lrdmacm 2>&1) \
    || missing="no rdma-core headers/libraries ($(printf '%s' "$probe" | grep -m1 -o 'fatal error: [^:]*\|cannot find -l[a-z]*' || echo "$cc failed"))"
fi

if $check_only; then
  if [ -n "$missing" ]; then echo "$missing; $hint"; exit 1; fi
  echo "gcc, make and the rdma-core headers found"; exit 0
fi
mkdir -p "$out"
if [ -n "$missing" ]; then
  rm -f "$out/libdisni.so" "$fragment"
  line="libdisni.so NOT BUILT, $missing: the verbs provider is packaged without its JNI library and offers no RDMA provider; to build it, install gcc, make and the rdma-core headers ($hint) and rebuild"
  if [ -n "${CI:-}" ]; then
    echo "[ERROR] [smbdirect] $line. CI is set, so this fails the build." >&2
    exit 1
  fi
  echo "[WARNING] [smbdirect] $line"
  exit 0
fi

make --no-print-directory -C "$(dirname "$0")" OUT="$out" JAVA_HOME="$java_home"
# read by bnd (see the pom): package the library and declare it
cat > "$fragment" <<BND
-includeresource.native: META-INF/native/linux-x86-64/libdisni.so=$out/libdisni.so
Bundle-NativeCode: META-INF/native/linux-x86-64/libdisni.so;osname=Linux;processor=x86-64, *
BND
