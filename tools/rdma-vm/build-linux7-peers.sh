#!/usr/bin/env bash
# build-linux7-peers.sh - build the Linux 7.x SMB Direct peers (smbdirect.ko, ksmbd.ko, cifs.ko) and
# SoftiWARP (siw.ko) for Debian unstable's current 7.x kernel, from STOCK (unpatched) sources, and
# lay out that kernel so that run-in-vm.sh can boot it (the second peer generation beside the
# Linux 6.1 one of build-linux-peers.sh).
#
# Usage: tools/rdma-vm/build-linux7-peers.sh [--check] [--force] [--refresh]
#
# Needs root (debootstrap, chroot, mount) and Debian's package mirror; nothing of the host's own
# apt configuration is changed. What it does, each step cached under
# ${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}:
#   1. looks up Debian unstable (sid) with a separate apt configuration (linux7-sid/apt/: one
#      "deb MIRROR sid main" line, MIRROR being the Debian mirror the host's apt uses) and picks
#      the newest 7.x kernel for which sid has, at one common package version, the image
#      (linux-image-<kver> and what it depends on: linux-binary-<kver> holds vmlinuz,
#      linux-modules-<kver> the modules, linux-base-<kver> System.map/config/modules.builtin),
#      linux-headers-<kver> (+ its -common and linux-kbuild-* dependencies) and
#      linux-source-<major.minor>. Never a hard-coded version;
#   2. makes a Debian unstable root (linux7-sid/root-<root recipe>/: debootstrap --variant=minbase
#      plus gcc, make, libelf-dev, bc, flex, bison, libssl-dev, ksmbd-tools 3.5.x and the compiler
#      the headers ask for): the 7.x headers want the compiler the kernel was built with (gcc 16),
#      and ksmbd 7.x wants ksmbd-tools 3.5 (bookworm's 3.4.7 fails every tree connect);
#   3. unpacks (dpkg-deb -x) the headers into that root and the image and modules into the output's
#      kroot/, and runs depmod -b on it;
#   4. builds out of tree, inside the root (chroot, /proc mounted for objtool), without any patch:
#        smbdirect.ko  M=fs/smb/smbdirect CONFIG_SMBDIRECT=m
#        ksmbd.ko      CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y
#        cifs.ko       CONFIG_CIFS=m       CONFIG_CIFS_SMB_DIRECT=y
#                      (both with KBUILD_EXTRA_SYMBOLS=<smbdirect>/Module.symvers and KCFLAGS
#                      -DCONFIG_..=1 -DCONFIG_SMBDIRECT_MODULE=1: the headers' autoconf.h is the
#                      stock kernel's, which has all three off)
#        siw.ko        CONFIG_RDMA_SIW=m
#      from only the needed parts of the linux-source tarball; checks each module's vermagic and
#      strips its debug information.
#
# Output (and cache): ${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}/linux7-peers/<kver>-<pkg version>-<recipe>/
#   smbdirect.ko ksmbd.ko cifs.ko siw.ko   the modules (load order: smbdirect first)
#   kroot/                                 the kernel root: kroot/lib/modules/<kver>/ (depmod done,
#                                          vmlinuz inside it; kroot/lib -> usr/lib)
#   vmlinuz                                symlink to kroot/lib/modules/<kver>/vmlinuz
#   kver                                   one line: the kernel version (uname -r in the guest)
#   sidroot                                symlink to the Debian unstable root (ksmbd-tools 3.5:
#                                          sidroot/usr/libexec/ksmbd.tools, run through
#                                          sidroot/lib64/ld-linux-x86-64.so.2, see linux-peers.sh)
#   stamp                                  kernel=, source=, built=, seconds=, recipe=
#   build.log
# The directory is printed on stdout as the last line; progress (with the time of each step) goes
# to stderr. When the cache holds a complete build of this recipe, that build (the newest kernel
# among them) is returned at once without asking the archive; --refresh asks the archive and builds
# when unstable has a newer kernel. run-in-vm.sh boots kroot/ when RDMA_VM_PEERS names this
# directory; linux-peers.sh loads smbdirect.ko and uses sidroot's ksmbd-tools.
#
#   --check    only verify that a build is cached or can be made: prints the missing packages (or
#              "root") and exits 3 if any are missing, 0 otherwise
#   --force    rebuild even when the cache holds a build (and look up the archive)
#   --refresh  look up the archive even when the cache holds a build; build if it has a newer one
#
# Environment: SMBDIRECT_CACHE, SMBDIRECT_BUILD_JOBS (make -j, default: number of CPUs),
# SMBDIRECT_DEBIAN_MIRROR (default: the Debian mirror of the host's apt, else deb.debian.org).
#
# Exit status: 0 built or cached; 1 build failed; 2 usage; 3 prerequisites missing; 5 Debian
# unstable has no 7.x kernel with image, headers and source at one version (or cannot be reached).
set -euo pipefail

check_only=false force=false refresh=false
for a in "$@"; do
  case $a in
    --check) check_only=true;;
    --force) force=true; refresh=true;;
    --refresh) refresh=true;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
    *) echo "build-linux7-peers: unknown argument $a" >&2; exit 2;;
  esac
done

T0=$(date +%s)
log() { echo "build-linux7-peers: [$(( $(date +%s) - T0 ))s] $*" >&2; }
STEP_T=$T0 STEP_NAME=
step() { # name: close the previous step (logging its time), open the next
  local now; now=$(date +%s)
  [ -z "$STEP_NAME" ] || log "step '$STEP_NAME' took $((now - STEP_T)) s"
  STEP_NAME=$1 STEP_T=$now
  [ -z "$1" ] || log "step '$1' ..."
}

# The recipes' versions: raise RECIPE when the module build or the output's layout changes (cached
# builds are then redone), ROOT_RECIPE when the Debian unstable root needs to be made anew.
RECIPE=r1
ROOT_RECIPE=s1
ROOT_PACKAGES="gcc make libelf-dev bc flex bison libssl-dev ksmbd-tools pahole binutils xz-utils"

CACHE_ROOT=${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}
PEERS_CACHE=$CACHE_ROOT/linux7-peers
SID_CACHE=$CACHE_ROOT/linux7-sid
SIDROOT=$SID_CACHE/root-$ROOT_RECIPE
MODULES="smbdirect.ko ksmbd.ko cifs.ko siw.ko"

# complete DIR: a finished build of this recipe whose kernel root and unstable root are in place
complete() {
  local d=$1 m kver
  [ -f "$d/stamp" ] && [ -s "$d/kver" ] || return 1
  for m in $MODULES; do [ -f "$d/$m" ] || return 1; done
  kver=$(cat "$d/kver")
  [ -f "$d/kroot/lib/modules/$kver/modules.dep.bin" ] && [ -f "$d/kroot/lib/modules/$kver/vmlinuz" ] \
    && [ -e "$d/sidroot/lib64/ld-linux-x86-64.so.2" ] \
    && { [ -x "$d/sidroot/usr/libexec/ksmbd.tools" ] || [ -x "$d/sidroot/usr/sbin/ksmbd.tools" ]; }
}

newest_cached() { # the complete build of this recipe with the newest kernel, if any
  local d
  for d in $(ls -d "$PEERS_CACHE"/*-"$RECIPE" 2>/dev/null | sort -V -r); do
    if complete "$d"; then echo "$d"; return 0; fi
  done
  return 0
}
# A complete build in the cache needs nothing else (not even root).
if ! $refresh; then
  OUT=$(newest_cached)
  if [ -n "$OUT" ]; then
    if $check_only; then log "ready (cached: $OUT)"; exit 0; fi
    log "cached: $OUT"
    echo "$OUT"
    exit 0
  fi
fi

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_cmd debootstrap debootstrap
need_cmd dpkg-deb dpkg
need_cmd apt-get apt
need_cmd apt-cache apt
need_cmd xz xz-utils
need_cmd tar tar
need_cmd depmod kmod
need_cmd modinfo kmod
need_cmd chroot coreutils
need_cmd mount mount
need_cmd flock util-linux
[ -r /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=("debian-archive-keyring")
[ "$(id -u)" = 0 ] || missing+=("root (debootstrap, chroot and mount need it)")
if [ ${#missing[@]} -gt 0 ]; then
  missing_list=$(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
  log "missing: $(echo "$missing_list" | paste -sd' ' -)"
  echo "$missing_list"
  exit 3
fi
if $check_only; then
  log "ready (cache $CACHE_ROOT)"
  exit 0
fi

mkdir -p "$PEERS_CACHE" "$SID_CACHE"
# One build at a time (the harness may start several); a waiting one then finds the cache filled.
exec 9>"$SID_CACHE/.lock"
if ! flock -n 9; then
  log "another build runs; waiting for it"
  flock 9
  if ! $refresh; then
    OUT=$(newest_cached)
    if [ -n "$OUT" ]; then log "cached: $OUT"; echo "$OUT"; exit 0; fi
  fi
fi

# Clean-up: unmount what was mounted, then remove the temporary directories (never with a mount
# inside them).
MOUNTED=() TEMPS=()
umount_under() { # unmount everything at or below a path, deepest first
  local p=$1 m
  for m in $(awk -v p="$p" '$2 == p || index($2, p "/") == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
}
cleanup() {
  local m t
  rm -f "$SID_CACHE"/apt/cache/*.bin  # apt's binary caches: 100 MB, made anew in a second
  for m in ${MOUNTED[@]+"${MOUNTED[@]}"}; do umount_under "$m"; done
  for t in ${TEMPS[@]+"${TEMPS[@]}"}; do
    umount_under "$t"
    if awk -v p="$t" 'index($2, p "/") == 1 || $2 == p {f=1} END {exit !f}' /proc/mounts; then
      log "not removing $t: something is still mounted in it"
    else
      rm -rf "$t"
    fi
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. Debian unstable's package lists, in an apt configuration of our own.
step "look up Debian unstable"
MIRROR=${SMBDIRECT_DEBIAN_MIRROR:-$(apt-cache policy 2>/dev/null | awk '
  / Packages$/ { uri = $2; next }
  /release / && /o=Debian,/ && /l=Debian,/ && uri != "" { print uri; exit }
  { uri = "" }')}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
APTDIR=$SID_CACHE/apt
mkdir -p "$APTDIR/lists/partial" "$APTDIR/cache/archives/partial"
echo "deb $MIRROR sid main" > "$APTDIR/sources.list"
: > "$APTDIR/status"
APT=(-o "Dir::Etc::sourcelist=$APTDIR/sources.list" -o Dir::Etc::sourceparts=/dev/null
     -o "Dir::State::Lists=$APTDIR/lists" -o "Dir::State::status=$APTDIR/status"
     -o "Dir::Cache=$APTDIR/cache" -o "Dir::Cache::archives=$APTDIR/cache/archives"
     -o "Dir::Cache::pkgcache=$APTDIR/cache/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$APTDIR/cache/srcpkgcache.bin"
     -o Dir::Etc::preferences=/dev/null -o Dir::Etc::preferencesparts=/dev/null
     -o APT::Architecture=amd64 -o APT::Sandbox::User=root -o Acquire::Languages=none)
apt-get "${APT[@]}" -qq update >&2 || { log "apt-get update of $MIRROR sid failed"; exit 5; }

field() { # package field: the candidate's field, on one line
  apt-cache "${APT[@]}" show --no-all-versions "$1" 2>/dev/null \
    | awk -v f="$2:" '$1 == f { sub(/^[^:]*: */, ""); print; exit }'
}
depnames() { # package: names in its Depends (first of each alternative), one a line
  field "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/^ *//; s/ *$//' | grep . || true
}

KVER='' PKGVER='' KMAJ=''
offered=$(apt-cache "${APT[@]}" pkgnames linux-headers-7. 2>/dev/null \
  | grep -E '^linux-headers-7\.[0-9]+\.[0-9]+[^ ]*-amd64$' | grep -v -E -- '-(cloud|rt)-amd64$' | sort -V -r || true)
for h in $offered; do
  kv=${h#linux-headers-}
  v=$(field "$h" Version)
  maj=$(echo "$kv" | cut -d. -f1,2)
  reasons=()
  srcv=$(field "linux-source-$maj" Version)
  [ "$srcv" = "$v" ] || reasons+=("linux-source-$maj is ${srcv:-missing}")
  img=$(field "linux-image-$kv" Version)
  [ "$img" = "$v" ] || reasons+=("linux-image-$kv is ${img:-missing}")
  for p in $(depnames "linux-image-$kv" | grep -F -- "$kv" | grep "^linux-" || true); do
    pv=$(field "$p" Version)
    [ "$pv" = "$v" ] || reasons+=("$p is ${pv:-missing}")
  done
  if [ ${#reasons[@]} -eq 0 ]; then KVER=$kv PKGVER=$v KMAJ=$maj; break; fi
  log "skipping $kv ($v): ${reasons[*]}"
done
if [ -z "$KVER" ]; then
  log "Debian unstable ($MIRROR) offers no 7.x amd64 kernel with image, headers and source at one" \
      "version (headers offered: ${offered:-none})"
  exit 5
fi
OUT=$PEERS_CACHE/$KVER-$PKGVER-$RECIPE
log "kernel $KVER, package version $PKGVER, linux-source-$KMAJ, mirror $MIRROR"
if ! $force && complete "$OUT"; then
  step ""
  log "cached: $OUT"
  echo "$OUT"
  exit 0
fi

# The packages: the image and what it depends on of this kernel (vmlinuz, modules, System.map and
# modules.builtin: in unstable linux-image-<kver> is a meta package over linux-binary-, linux-modules-
# and linux-base-<kver>); the headers and their -common and linux-kbuild- packages; the source.
KPKGS=("linux-image-$KVER")
for p in $(depnames "linux-image-$KVER" | grep -F -- "$KVER" | grep "^linux-" || true); do KPKGS+=("$p"); done
HPKGS=("linux-headers-$KVER")
for p in $(depnames "linux-headers-$KVER" | grep -E '^linux-(headers|kbuild)-' || true); do HPKGS+=("$p"); done
# what else the headers need in the build root (the kernel's compiler: gcc-16-for-host; pahole)
HDEPS=$(for p in "${HPKGS[@]}"; do depnames "$p"; done | grep -v -E '^linux-' | sort -u | tr '\n' ' ')
log "image: ${KPKGS[*]}; headers: ${HPKGS[*]} (needing ${HDEPS:-nothing else})"

# 2. Download.
step "download"
DEBS=$(mktemp -d "$SID_CACHE/.debs.XXXXXX")
TEMPS+=("$DEBS")
(cd "$DEBS" && apt-get "${APT[@]}" -qq download "${KPKGS[@]}" "${HPKGS[@]}" "linux-source-$KMAJ") >&2 \
  || { log "downloading the kernel packages failed"; exit 5; }
deb() { ls "$DEBS/$1"_*.deb; }

# 3. The Debian unstable root (made once per ROOT_RECIPE).
step "Debian unstable root"
root_ok() {
  [ -f "$SIDROOT/.smbdirect-root" ] && [ -e "$SIDROOT/lib64/ld-linux-x86-64.so.2" ] \
    && { [ -x "$SIDROOT/usr/libexec/ksmbd.tools" ] || [ -x "$SIDROOT/usr/sbin/ksmbd.tools" ]; }
}
if root_ok; then
  log "cached: $SIDROOT"
else
  NEWROOT=$(mktemp -d "$SID_CACHE/.root.XXXXXX")
  TEMPS+=("$NEWROOT")
  log "debootstrap --variant=minbase sid $MIRROR (+ $ROOT_PACKAGES $HDEPS)"
  include=$(echo "$ROOT_PACKAGES $HDEPS" | tr -s ' ' '\n' | grep . | sort -u | paste -sd, -)
  if ! debootstrap --variant=minbase --include="$include" sid "$NEWROOT" "$MIRROR" >"$SID_CACHE/debootstrap.log" 2>&1; then
    log "debootstrap failed; the end of $SID_CACHE/debootstrap.log:"
    tail -n 30 "$SID_CACHE/debootstrap.log" >&2
    exit 1
  fi
  umount_under "$NEWROOT"
  chroot "$NEWROOT" dpkg-query -W ksmbd-tools gcc >&2
  rm -rf "$NEWROOT"/var/cache/apt/archives/*.deb
  echo "recipe=$ROOT_RECIPE mirror=$MIRROR made=$(date -u +%Y-%m-%dT%H:%M:%SZ) packages=$include" > "$NEWROOT/.smbdirect-root"
  rm -rf "$SIDROOT"
  mv -T "$NEWROOT" "$SIDROOT"
  log "made $SIDROOT"
fi
# the headers' own needs, when a later kernel wants more than the root was made with
need=()
for p in $HDEPS; do
  chroot "$SIDROOT" dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing into the root: ${need[*]}"
  cp -L /etc/resolv.conf "$SIDROOT/etc/resolv.conf" 2>/dev/null || true
  echo "deb $MIRROR sid main" > "$SIDROOT/etc/apt/sources.list"
  chroot "$SIDROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get -qq update && apt-get -qq install -y --no-install-recommends ${need[*]}" >&2 \
    || { log "installing ${need[*]} into $SIDROOT failed"; exit 1; }
fi

# 4. Unpack: the headers into the root, the kernel into the output's kroot/.
step "unpack kernel and headers"
mkdir -p "$PEERS_CACHE"
TMP=$(mktemp -d "$PEERS_CACHE/.build.XXXXXX")
TEMPS+=("$TMP")
mkdir -p "$TMP/out/kroot"
BUILDLOG=$TMP/out/build.log
for p in "${HPKGS[@]}"; do dpkg-deb -x "$(deb "$p")" "$SIDROOT"; done
KDIR=/usr/src/linux-headers-$KVER
[ -f "$SIDROOT$KDIR/Makefile" ] || { log "no $KDIR/Makefile after unpacking ${HPKGS[*]}"; exit 1; }
KROOT=$TMP/out/kroot
for p in "${KPKGS[@]}"; do dpkg-deb -x "$(deb "$p")" "$KROOT"; done
rm -rf "${KROOT:?}/usr/share"
[ -e "$KROOT/lib" ] || ln -s usr/lib "$KROOT/lib"
MODDIR=$KROOT/lib/modules/$KVER
[ -f "$MODDIR/vmlinuz" ] || { [ -f "$KROOT/boot/vmlinuz-$KVER" ] && ln -s "../../../boot/vmlinuz-$KVER" "$MODDIR/vmlinuz"; } \
  || { log "none of ${KPKGS[*]} holds vmlinuz"; exit 1; }
depmod -b "$KROOT" "$KVER"
modinfo -b "$KROOT" -k "$KVER" -n rdma_rxe >/dev/null || { log "the kernel $KVER has no rdma_rxe module"; exit 1; }

# 5. Extract only what the modules need from the source tarball (inside the root: the build runs
#    there).
step "extract source"
BUILD=$(mktemp -d "$SIDROOT/tmp/peers.XXXXXX")
TEMPS+=("$BUILD")
B=${BUILD#"$SIDROOT"}  # the same directory as the chroot sees it
TARBALL=./usr/src/linux-source-$KMAJ.tar.xz
dpkg-deb --fsys-tarfile "$(deb "linux-source-$KMAJ")" | tar -xO "$TARBALL" > "$BUILD/src.tar.xz"
top=$(tar -tJf "$BUILD/src.tar.xz" 2>/dev/null | head -n 1 | cut -d/ -f1) || true
top=${top:-linux-source-$KMAJ}
tar -xJf "$BUILD/src.tar.xz" -C "$BUILD" --wildcards \
  "$top/fs/smb" "$top/fs/nls" "$top/fs/internal.h" "$top/drivers/infiniband/sw/siw" \
  "$top/scripts/asn1_compiler.c" "$top/include/linux/asn1*.h"
rm -f "$BUILD/src.tar.xz"
SRC=$B/$top

# 6. Build in the root, with /proc mounted there (objtool reads the stack limit from it).
step "build modules"
mount -t proc proc "$SIDROOT/proc"
MOUNTED+=("$SIDROOT/proc")
JOBS=${SMBDIRECT_BUILD_JOBS:-$(nproc)}
in_root() { chroot "$SIDROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
build() { # dir, make variables...
  local dir=$1; shift
  echo "== make M=$dir $*"
  in_root make -C "$KDIR" M="$dir" -j"$JOBS" "$@" modules
}
SYMVERS=$SRC/fs/smb/smbdirect/Module.symvers
build_all() { # (errexit does not hold in a function called with ||: each step checks)
  local f s
  echo "== $(date -u) kernel $KVER, linux-source-$KMAJ $PKGVER, headers $KDIR, $(in_root gcc --version | head -n 1), make -j$JOBS"
  # The headers package has no scripts/asn1_compiler: build it and generate the ASN.1 parsers of
  # ksmbd and cifs, so that kbuild finds them up to date (its rule for them needs the compiler).
  in_root gcc -O2 -I"$SRC/include" -o "$B/asn1_compiler" "$SRC/scripts/asn1_compiler.c" || return 1
  for f in "$BUILD/$top"/fs/smb/server/*.asn1 "$BUILD/$top"/fs/smb/client/*.asn1; do
    [ -e "$f" ] || continue
    f=${f#"$SIDROOT"}
    in_root "$B/asn1_compiler" "$f" "${f%.asn1}.asn1.c" "${f%.asn1}.asn1.h" || return 1
    echo "generated ${f%.asn1}.asn1.[ch]"
  done
  s=$(date +%s)
  build "$SRC/fs/smb/smbdirect" CONFIG_SMBDIRECT=m KCFLAGS="-DCONFIG_SMBDIRECT_MODULE=1" || return 1
  echo "== smbdirect.ko: $(( $(date +%s) - s )) s"; s=$(date +%s)
  build "$SRC/fs/smb/server" CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y CONFIG_SMBDIRECT=m \
    KBUILD_EXTRA_SYMBOLS="$SYMVERS" KCFLAGS="-DCONFIG_SMB_SERVER_SMBDIRECT=1 -DCONFIG_SMBDIRECT_MODULE=1" || return 1
  echo "== ksmbd.ko: $(( $(date +%s) - s )) s"; s=$(date +%s)
  build "$SRC/fs/smb/client" CONFIG_CIFS=m CONFIG_CIFS_SMB_DIRECT=y CONFIG_SMBDIRECT=m \
    KBUILD_EXTRA_SYMBOLS="$SYMVERS" KCFLAGS="-DCONFIG_CIFS_SMB_DIRECT=1 -DCONFIG_SMBDIRECT_MODULE=1" || return 1
  echo "== cifs.ko: $(( $(date +%s) - s )) s"; s=$(date +%s)
  build "$SRC/drivers/infiniband/sw/siw" CONFIG_RDMA_SIW=m || return 1
  echo "== siw.ko: $(( $(date +%s) - s )) s"
}
build_all >>"$BUILDLOG" 2>&1 || { log "build failed, see the end of the log:"; tail -n 40 "$BUILDLOG" >&2; exit 1; }
grep -E '^== [a-z]+\.ko: ' "$BUILDLOG" | sed 's/^== /build-linux7-peers:   /' >&2
umount_under "$SIDROOT/proc"

step "check and strip"
S=$BUILD/$top
cp "$S/fs/smb/smbdirect/smbdirect.ko" "$S/fs/smb/server/ksmbd.ko" "$S/fs/smb/client/cifs.ko" \
   "$S/drivers/infiniband/sw/siw/siw.ko" "$TMP/out/"
# without debug information the modules are a tenth of the size (faster to load over 9p)
cp -r "$TMP/out/"*.ko "$BUILD/"
in_root strip --strip-debug $(for m in $MODULES; do echo "$B/$m"; done)
for m in $MODULES; do
  cp "$BUILD/$m" "$TMP/out/$m"
  vm=$(modinfo -F vermagic "$TMP/out/$m")
  [ "${vm%% *}" = "$KVER" ] || { log "$m has the wrong vermagic: $vm"; exit 1; }
done
log "vermagic $(modinfo -F vermagic "$TMP/out/ksmbd.ko"); depends: ksmbd: $(modinfo -F depends "$TMP/out/ksmbd.ko")," \
    "cifs: $(modinfo -F depends "$TMP/out/cifs.ko"), smbdirect: $(modinfo -F depends "$TMP/out/smbdirect.ko")," \
    "siw: $(modinfo -F depends "$TMP/out/siw.ko")"

ln -s "kroot/lib/modules/$KVER/vmlinuz" "$TMP/out/vmlinuz"
ln -s "$SIDROOT" "$TMP/out/sidroot"
echo "$KVER" > "$TMP/out/kver"
secs=$(( $(date +%s) - T0 ))
{
  echo "kernel=$KVER"
  echo "source=linux-source-$KMAJ $PKGVER"
  echo "image=${KPKGS[*]}"
  echo "headers=${HPKGS[*]}"
  echo "compiler=$(in_root gcc --version | head -n 1)"
  echo "ksmbd-tools=$(chroot "$SIDROOT" dpkg-query -W -f '${Version}' ksmbd-tools)"
  echo "sidroot=$SIDROOT"
  echo "recipe=$RECIPE (stock sources, no patch; smbdirect.ko shared by ksmbd and cifs; root $ROOT_RECIPE)"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "seconds=$secs"
} > "$TMP/out/stamp"
echo "== done in $secs s" >> "$BUILDLOG"
step ""

# 7. Move into place atomically.
if [ -e "$OUT" ]; then rm -rf "$OUT.old" && mv "$OUT" "$OUT.old"; fi
mv -T "$TMP/out" "$OUT"
rm -rf "$OUT.old"
log "built in $secs s: $OUT"
echo "$OUT"
