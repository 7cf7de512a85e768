#!/usr/bin/env bash
# build-linux-peers.sh - build the Linux SMB Direct peers (ksmbd.ko, cifs.ko) and SoftiWARP (siw.ko)
# for the kernel that run-in-vm.sh boots, out of tree from Debian's linux-source package.
#
# Usage: tools/rdma-vm/build-linux-peers.sh [--check] [--force]
#
# Debian's kernel ships ksmbd and cifs without SMB Direct and has no siw at all. This script
# extracts only the needed parts of /usr/src/linux-source-<major.minor>.tar.xz and builds
#   ksmbd.ko  CONFIG_SMB_SERVER=m     CONFIG_SMB_SERVER_SMBDIRECT=y
#   cifs.ko   CONFIG_CIFS=m           CONFIG_CIFS_SMB_DIRECT=y  (the rest as the stock kernel has it)
#   siw.ko    CONFIG_RDMA_SIW=m
# against /usr/src/linux-headers-<kernel version>. Module signatures are not enforced by the
# stock kernel, so the modules load with insmod once their stock dependencies are loaded
# (tools/rdma-vm/linux-peers.sh load does that in the guest).
#
# Output (and cache): ${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}/linux-peers/<kver>-<source pkg version>/
# holding the three modules, build.log and a stamp file. A second run finds it and returns at once.
# The directory is printed on stdout as the last line; progress goes to stderr.
#
#   --check   only verify the prerequisites; prints the missing packages and exits 3 if any are
#             missing, 0 otherwise
#   --force   rebuild even when the cache holds a build
#
# Environment: RDMA_VM_KVER (kernel version; default the one run-in-vm.sh boots), SMBDIRECT_CACHE,
# SMBDIRECT_BUILD_JOBS (make -j, default: number of CPUs).
#
# Exit status: 0 built or cached; 2 usage; 3 prerequisites missing; 4 version mismatch; 1 build failed.
set -euo pipefail

check_only=false force=false
for a in "$@"; do
  case $a in
    --check) check_only=true;;
    --force) force=true;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "build-linux-peers: unknown argument $a" >&2; exit 2;;
  esac
done

log() { echo "build-linux-peers: $*" >&2; }

# Same choice of kernel as run-in-vm.sh.
KVER=${RDMA_VM_KVER:-$(ls /lib/modules 2>/dev/null | grep -- '-amd64$' | grep -v -- '-cloud-' | sort -V | tail -n 1 || true)}
pkgver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || true; }
pkg_installed() { dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_cmd make make
need_cmd gcc gcc
need_cmd strip binutils
need_cmd xz xz-utils
need_cmd tar tar
need_cmd dpkg-query dpkg
[ -r /usr/include/stdio.h ] || missing+=("libc6-dev")
if [ -z "$KVER" ]; then
  missing+=("linux-image-amd64")
  KMAJ=6.1
else
  pkg_installed "linux-image-$KVER" || missing+=("linux-image-$KVER (or linux-image-amd64)")
  [ -r "/usr/src/linux-headers-$KVER/Makefile" ] || missing+=("linux-headers-$KVER")
  KMAJ=$(echo "$KVER" | cut -d. -f1,2)
fi
SRCPKG=linux-source-$KMAJ
TARBALL=/usr/src/$SRCPKG.tar.xz
[ -r "$TARBALL" ] || missing+=("$SRCPKG")
if [ ${#missing[@]} -gt 0 ]; then
  log "missing packages: ${missing[*]}"
  printf '%s\n' "${missing[@]}"
  exit 3
fi

# The source must be the very version the image was built from.
IMGVER=$(pkgver "linux-image-$KVER")
SRCVER=$(pkgver "$SRCPKG")
if [ "$IMGVER" != "$SRCVER" ]; then
  log "version mismatch: linux-image-$KVER is $IMGVER but $SRCPKG is ${SRCVER:-not installed};" \
      "install $SRCPKG=$IMGVER (or the kernel matching $SRCPKG $SRCVER)"
  exit 4
fi
if $check_only; then
  log "ready (kernel $KVER, $SRCPKG $SRCVER, linux-headers-$KVER)"
  exit 0
fi

# The recipe's version: raise it when the build below changes, so that cached modules are rebuilt.
RECIPE=r6
CACHE=${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}/linux-peers
OUT=$CACHE/$KVER-$SRCVER-$RECIPE
MODULES="ksmbd.ko cifs.ko siw.ko"
complete() { [ -f "$OUT/stamp" ] && for m in $MODULES; do [ -f "$OUT/$m" ] || return 1; done; }
if ! $force && complete; then
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
BUILDLOG=$TMP/out/build.log
mkdir -p "$TMP/out"
start=$(date +%s)
KDIR=/usr/src/linux-headers-$KVER
JOBS=${SMBDIRECT_BUILD_JOBS:-$(nproc)}

# 1. Extract only what the three modules need (decompressing the tarball is most of the time).
top=$(tar -tJf "$TARBALL" 2>/dev/null | head -n 1 | cut -d/ -f1) || true
top=${top:-$SRCPKG}
log "extracting from $TARBALL ..."
tar -xJf "$TARBALL" -C "$TMP" --wildcards \
  "$top/fs/smb" "$top/fs/internal.h" "$top/drivers/infiniband/sw/siw" \
  "$top/scripts/asn1_compiler.c" "$top/include/linux/asn1*.h"
SRC=$TMP/$top

# 1b-1c. Two fixes to Debian's 6.1.192 ksmbd, without which it cannot run at all. Each finds its
#     anchor (a piece of a line) on exactly COUNT lines, else the source is not what this recipe
#     knows and the build stops; MODE "after-next" inserts TEXT after the line that follows each
#     anchor, "replace" puts TEXT in place of each anchor line. awk expands \t and \n in TEXT.
MARK='smbdirect build-linux-peers.sh'
patch_source() { # file, anchor, count, mode, text
  local file=$1 anchor=$2 count=$3 mode=$4 text=$5 found
  found=$(grep -cF -- "$anchor" "$file" || true)
  [ "$found" = "$count" ] \
    || { log "$file has $found lines with '$anchor', not $count: not what this recipe patches"; exit 1; }
  awk -v a="$anchor" -v m="$mode" -v t="$text" '
    pending { print; print t; pending = 0; next }
    index($0, a) { if (m == "replace") { print t; next } pending = 1 }
    { print }' "$file" > "$file.patched" && mv "$file.patched" "$file"
  [ "$(grep -cF -- "$MARK" "$file")" = "$count" ] || { log "patching $file failed"; exit 1; }
}
KSMBD=$SRC/fs/smb/server

# 1b. Debian's ksmbd-tools (3.4.7) leaves payload_sz of its share configuration answer at 0 while
#     it sends the share's path (NUL-terminated) after the fixed part; the kernel's
#     ipc_validate_msg then rejects the answer and every tree connect, IPC$ included, fails with
#     BAD_NETWORK_NAME. Where payload_sz is 0, take it from the answer's size, which is what the
#     kernel relied on before the check was added.
patch_source "$KSMBD/transport_ipc.c" 'if (entry->msg_sz < sizeof(struct ksmbd_share_config_response))' 1 \
  after-next "\t\tif (!resp->payload_sz) /* ksmbd-tools < 3.5 ($MARK) */\n\t\t\tresp->payload_sz = entry->msg_sz - sizeof(struct ksmbd_share_config_response);"

# 1c. smb2_open calls opinfo_put(opinfo) also when no oplock or lease was granted (opinfo NULL);
#     opinfo_put dereferences it and the kernel oopses in the first CREATE (measured: NULL pointer
#     dereference at opinfo_put+0x5 from smb2_open, then the mount hangs). Later kernels return
#     early on NULL: do the same.
patch_source "$KSMBD/oplock.c" 'void opinfo_put(struct oplock_info *opinfo)' 1 \
  after-next "\tif (!opinfo) /* NULL when smb2_open granted no oplock ($MARK) */\n\t\treturn;"

# Nothing else is patched: the peers run as users run them. ksmbd's signature of READ responses
#     without data (over the 4-byte transport length and the response, smb2_set_sign_rsp) is a
#     defect of every ksmbd from 6.1 to 7.2 that the Java client lives with (bundles/smb
#     ResponseSignatures), so the tests meet it as users do.

# 2. The headers package has no scripts/asn1_compiler: build it and generate the ASN.1 parsers of
#    ksmbd and cifs here, so that kbuild finds them up to date (its pattern rule for them needs the
#    missing compiler and is then simply not used).
{
  echo "== $(date -u) kernel $KVER, $SRCPKG $SRCVER, headers $KDIR, make -j$JOBS"
  gcc -O2 -I"$SRC/include" -o "$TMP/asn1_compiler" "$SRC/scripts/asn1_compiler.c"
  for f in "$SRC"/fs/smb/server/*.asn1 "$SRC"/fs/smb/client/*.asn1; do
    "$TMP/asn1_compiler" "$f" "${f%.asn1}.asn1.c" "${f%.asn1}.asn1.h"
    echo "generated ${f%.asn1}.asn1.[ch]"
  done
} >>"$BUILDLOG" 2>&1 || { log "asn1 generation failed, see $BUILDLOG"; cat "$BUILDLOG" >&2; exit 1; }

# 3. Build. The CONFIG_ variables on the make command line switch the objects on in the
#    subdirectory Makefiles; -D makes the #ifdefs in the code see them (the headers' autoconf.h is
#    the stock kernel's). Everything else stays as the stock kernel is configured.
build() { # dir, make variables...
  local dir=$1; shift
  echo "== make M=$dir $*"
  make -C "$KDIR" M="$dir" -j"$JOBS" "$@" modules
}
{
  build "$SRC/fs/smb/server" CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y \
    KCFLAGS="-DCONFIG_SMB_SERVER_SMBDIRECT=1" &&
  build "$SRC/fs/smb/client" CONFIG_CIFS=m CONFIG_CIFS_SMB_DIRECT=y \
    KCFLAGS="-DCONFIG_CIFS_SMB_DIRECT=1" &&
  build "$SRC/drivers/infiniband/sw/siw" CONFIG_RDMA_SIW=m
} >>"$BUILDLOG" 2>&1 || { log "build failed, see the end of the log:"; tail -n 40 "$BUILDLOG" >&2; exit 1; }

cp "$SRC/fs/smb/server/ksmbd.ko" "$SRC/fs/smb/client/cifs.ko" "$SRC/drivers/infiniband/sw/siw/siw.ko" "$TMP/out/"
# without debug information the modules are a tenth of the size (faster to load over 9p)
strip --strip-debug "$TMP/out/"*.ko
for m in $MODULES; do
  [ "$(modinfo -F vermagic "$TMP/out/$m" | cut -d' ' -f1)" = "$KVER" ] \
    || { log "$m has the wrong vermagic: $(modinfo -F vermagic "$TMP/out/$m")"; exit 1; }
done
secs=$(( $(date +%s) - start ))
{
  echo "kernel=$KVER"
  echo "source=$SRCPKG $SRCVER"
  echo "recipe=$RECIPE (ksmbd: share configuration answers of ksmbd-tools 3.4 accepted, opinfo_put(NULL) returns; nothing else)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "seconds=$secs"
} > "$TMP/out/stamp"
echo "== done in $secs s" >> "$BUILDLOG"

# 4. Move into place atomically (a concurrent build that finished first wins).
if [ -e "$OUT" ]; then
  if $force || ! complete; then rm -rf "$OUT.old" && mv "$OUT" "$OUT.old"; fi
fi
if mv -T "$TMP/out" "$OUT" 2>/dev/null; then
  rm -rf "$OUT.old"
  log "built in $secs s: $OUT"
else
  log "another build finished first; using it"
fi
echo "$OUT"
