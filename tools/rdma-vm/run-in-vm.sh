#!/usr/bin/env bash
# run-in-vm.sh - run one command inside a throw-away QEMU guest that has a software RDMA device
# (Soft-RoCE rdma_rxe by default, SoftiWARP siw with RDMA_VM_TRANSPORT=siw).
#
# Usage: tools/rdma-vm/run-in-vm.sh [--check] [--] COMMAND [ARG...]
#
# The guest boots the host's Debian kernel (linux-image-amd64, which ships rdma_rxe as a module),
# or the Linux 7.x kernel of a build-linux7-peers.sh output (see RDMA_VM_PEERS, RDMA_VM_KROOT),
# under TCG emulation, mounts the host's root file system read-only over virtio-9p, loads
# rdma_rxe, creates a dummy network interface with an IPv4 address and a Soft-RoCE device on it
# ("rdma link add"), then runs COMMAND as root in the current directory. The script's exit status
# is COMMAND's. rdma_cm does not resolve 127.0.0.1 over rxe, hence the dummy interface.
#
#   --check   only verify that everything the guest needs is installed; prints what is missing
#             and exits 3 when something is, 0 otherwise.
#
# Exit status: COMMAND's; 3 = prerequisites missing; 124 = timeout; 125 = the guest did not report
# a status (boot failure).
#
# Environment (all optional):
#   RDMA_VM_RW        space-separated absolute host directories shared read-write at the same path
#                     (default: the current directory); everything else is read-only in the guest,
#                     except the guest's own tmpfs on /tmp, /run, /var/tmp and /dev/shm
#   RDMA_VM_RO        space-separated absolute host directories shared read-only at the same path,
#                     mounted before RDMA_VM_RW: needed for what lies under /tmp, /run or /var/tmp
#                     (the guest's tmpfs hides the host's), e.g. a workspace checked out in /tmp
#   RDMA_VM_IP        address of the dummy interface and the RDMA device (10.99.0.1)
#   RDMA_VM_IP6       its IPv6 address (fd99::1; /64, no duplicate address detection)
#   RDMA_VM_TRANSPORT rxe (default: Soft-RoCE, stock module rdma_rxe) or siw (SoftiWARP: siw.ko
#                     from RDMA_VM_PEERS, which build-linux-peers.sh builds)
#   RDMA_VM_DEVICE    name of the RDMA device (rxe0 with rxe, siw0 with siw)
#   RDMA_VM_PEERS     directory with the out-of-tree ksmbd.ko, cifs.ko and siw.ko of
#                     build-linux-peers.sh (default: its cache directory for the booted kernel, if
#                     built); exported into the guest, as are RDMA_VM_TRANSPORT and RDMA_VM_IP.
#                     A build-linux7-peers.sh output (it has a kroot/) also names the kernel: the
#                     guest then boots that Linux 7.x kernel instead of the host's
#   RDMA_VM_KROOT     a kernel root to boot instead of the host's kernel: KROOT/lib/modules/KVER/
#                     holds the modules (depmod -b done) and vmlinuz (or KROOT/boot/vmlinuz-KVER);
#                     default: RDMA_VM_PEERS/kroot when that exists. The initramfs takes its modules
#                     from there (modprobe -d KROOT), and the guest mounts a tmpfs over
#                     /usr/lib/modules with KROOT/lib/modules/KVER bind-mounted into it, so that
#                     modprobe works as usual; RDMA_VM_PEERS defaults to the newest
#                     build-linux7-peers.sh output for that kernel
#   RDMA_VM_CPU       the emulated CPU model under TCG: max for Linux 6.x, max,-pcid,-invpcid for
#                     7.x and later (JVMs crashed in JIT-compiled code in 7.2 guests with max; the
#                     cure recorded then was to drop PCID. QEMU 7.2's TCG offers neither pcid nor
#                     invpcid, so there the two models give the guest the same CPU flags)
#   RDMA_VM_MEM       guest memory in MiB (2048);  RDMA_VM_CPUS  virtual CPUs (2)
#   RDMA_VM_TIMEOUT   seconds before the guest is killed (900)
#   RDMA_VM_ACCEL     tcg (default) or kvm; a stock kernel does not boot on every /dev/kvm
#   RDMA_VM_CLOCK     tsc (default with tcg) or kernel (default with kvm): the guest's clock source.
#                     Under TCG the kernel does not trust the TSC (the emulated AMD CPU has no
#                     constant_tsc flag, and such a machine with two CPUs is assumed unsynchronized)
#                     and runs on the HPET, which has no vDSO: every clock_gettime (Java's
#                     System.nanoTime) is a system call and an emulated MMIO read, about 0.8 us in
#                     the guest against 0.1 us on the TSC. tsc=reliable overrides the assumption;
#                     TCG's TSC is in step across vCPUs (tools/rdma-vm/README.md).
#   RDMA_VM_KVER      kernel version to boot (default: newest non-cloud *-amd64 in /lib/modules,
#                     or with a kernel root its kver file / newest version in KROOT/lib/modules)
#   RDMA_VM_ENV       extra variable names to pass into the guest (PATH, JAVA_HOME, HOME, LANG,
#                     JAVA_TOOL_OPTIONS, CI always are)
# In the guest, RDMA_VM_KERNEL is the booted kernel's version (uname -r) and RDMA_VM_KROOT the
# kernel root (empty for the host's kernel).
set -euo pipefail

check_only=false
if [ "${1:-}" = "--check" ]; then check_only=true; shift; fi
if [ "${1:-}" = "--" ]; then shift; fi

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$1 (package $2)"); }
need_cmd qemu-system-x86_64 qemu-system-x86
need_cmd cpio cpio
need_cmd modprobe kmod
need_cmd modinfo kmod
BUSYBOX=""
for b in /bin/busybox /usr/bin/busybox; do
  if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then BUSYBOX=$b; break; fi
done
[ -n "$BUSYBOX" ] || missing+=("a statically linked busybox (package busybox-static)")
CACHE=${SMBDIRECT_CACHE:-$HOME/.cache/smbdirect}
PEERS=${RDMA_VM_PEERS:-}
# The kernel: the host's, or that of a kernel root (build-linux7-peers.sh's kroot/)
KROOT=${RDMA_VM_KROOT:-}
if [ -z "$KROOT" ] && [ -n "$PEERS" ] && [ -d "$PEERS/kroot" ]; then KROOT=$PEERS/kroot; fi
if [ -n "$KROOT" ]; then
  KROOT=$(cd "$KROOT" 2>/dev/null && pwd -P) || { echo "run-in-vm: no kernel root ${RDMA_VM_KROOT:-$PEERS/kroot}" >&2; exit 3; }
  KVER=${RDMA_VM_KVER:-}
  if [ -z "$KVER" ] && [ -n "$PEERS" ] && [ "$KROOT" = "$(cd "$PEERS/kroot" 2>/dev/null && pwd -P)" ]; then
    KVER=$(cat "$PEERS/kver" 2>/dev/null || true)
  fi
  KVER=${KVER:-$(ls "$KROOT/lib/modules" 2>/dev/null | sort -V | tail -n 1 || true)}
  VMLINUZ=$KROOT/lib/modules/$KVER/vmlinuz
  [ -r "$VMLINUZ" ] || VMLINUZ=$KROOT/boot/vmlinuz-$KVER
  MODPROBE_BASE=(-d "$KROOT")
  MODINFO_BASE=(-b "$KROOT")
  if [ -z "$KVER" ] || [ ! -r "$VMLINUZ" ]; then
    missing+=("a kernel in $KROOT (lib/modules/<version>/vmlinuz; tools/rdma-vm/build-linux7-peers.sh makes one)")
  elif [ ! -f "$KROOT/lib/modules/$KVER/modules.dep.bin" ]; then
    missing+=("the module index of $KROOT/lib/modules/$KVER (depmod -b $KROOT $KVER)")
  elif ! modinfo "${MODINFO_BASE[@]}" -k "$KVER" -n rdma_rxe >/dev/null 2>&1; then
    missing+=("module rdma_rxe in $KROOT for kernel $KVER")
  fi
else
  KVER=${RDMA_VM_KVER:-$(ls /lib/modules 2>/dev/null | grep -- '-amd64$' | grep -v -- '-cloud-' | sort -V | tail -n 1 || true)}
  VMLINUZ=/boot/vmlinuz-$KVER
  MODPROBE_BASE=() MODINFO_BASE=()
  if [ -z "$KVER" ] || [ ! -r "$VMLINUZ" ]; then
    missing+=("a readable kernel image /boot/vmlinuz-<version>-amd64 (package linux-image-amd64)")
  elif ! modinfo -k "$KVER" -n rdma_rxe >/dev/null 2>&1; then
    missing+=("module rdma_rxe for kernel $KVER (the -cloud flavour lacks it; package linux-image-amd64)")
  fi
fi
need_cmd rdma iproute2
ls /usr/lib/*/libibverbs/librxe-* >/dev/null 2>&1 || missing+=("the rxe user-space driver (package ibverbs-providers)")
TRANSPORT=${RDMA_VM_TRANSPORT:-rxe}
if [ -z "$PEERS" ] && [ -n "$KVER" ]; then
  # the newest build of build-linux-peers.sh (build-linux7-peers.sh with a kernel root) for this
  # kernel, if there is one
  PEERS=$(ls -d "$CACHE/$([ -n "$KROOT" ] && echo linux7-peers || echo linux-peers)/$KVER"-* 2>/dev/null \
    | grep -v "\.old$" | sort -V | tail -n 1 || true)
fi
case $TRANSPORT in
  rxe) ;;
  siw)
    ls /usr/lib/*/libibverbs/libsiw-* >/dev/null 2>&1 || missing+=("the siw user-space driver (package ibverbs-providers)")
    if [ -z "$PEERS" ] || [ ! -f "$PEERS/siw.ko" ]; then
      missing+=("siw.ko in RDMA_VM_PEERS (${PEERS:-unset}); build it with tools/rdma-vm/build-linux-peers.sh (build-linux7-peers.sh for 7.x)")
    fi;;
  *) echo "run-in-vm: RDMA_VM_TRANSPORT must be rxe or siw, not $TRANSPORT" >&2; exit 3;;
esac
if [ ${#missing[@]} -gt 0 ]; then
  printf 'run-in-vm: missing: %s\n' "${missing[@]}" >&2
  exit 3
fi
$check_only && { echo "run-in-vm: ready (kernel $KVER${KROOT:+ from $KROOT}, busybox $BUSYBOX, transport $TRANSPORT${PEERS:+, peers $PEERS})"; exit 0; }
[ $# -gt 0 ] || { echo "run-in-vm: no command given" >&2; exit 125; }

IP=${RDMA_VM_IP:-10.99.0.1}
IP6=${RDMA_VM_IP6:-fd99::1}
DEV=${RDMA_VM_DEVICE:-${TRANSPORT}0}
MEM=${RDMA_VM_MEM:-2048}
CPUS=${RDMA_VM_CPUS:-2}
TIMEOUT=${RDMA_VM_TIMEOUT:-900}
ACCEL=${RDMA_VM_ACCEL:-tcg}
case ${RDMA_VM_CLOCK:-$([ "$ACCEL" = kvm ] && echo kernel || echo tsc)} in
  tsc) clock_args=" clocksource=tsc tsc=reliable";;
  kernel) clock_args="";;
  *) echo "run-in-vm: RDMA_VM_CLOCK must be tsc or kernel, not $RDMA_VM_CLOCK" >&2; exit 3;;
esac
RW=${RDMA_VM_RW:-$PWD}
RO=${RDMA_VM_RO:-}
# The guest's tmpfs hides the host's /tmp, /run and /var/tmp: share a peers directory, a kernel
# root and an unstable root (linux-peers.sh runs its ksmbd-tools) there.
share_ro() {
  local d
  for d in "$@"; do
    [ -n "$d" ] && [ -d "$d" ] || continue
    d=$(cd "$d" && pwd -P)
    case " $RO " in *" $d "*) continue;; esac
    case $d in /tmp/*|/run/*|/var/tmp/*) RO="$RO $d";; esac
  done
}
share_ro "$PEERS"
peers_real=$([ -n "$PEERS" ] && cd "$PEERS" 2>/dev/null && pwd -P || true)
if [ -n "$KROOT" ]; then
  case $KROOT/ in "${peers_real:-/nonexistent}"/*) ;; *) share_ro "$KROOT";; esac
fi
if [ -n "$PEERS" ] && [ -L "$PEERS/sidroot" ]; then share_ro "$PEERS/sidroot"; fi
# where the guest's modprobe looks (/lib is a link to /usr/lib on a merged-/usr system)
MODULES_DIR=$(readlink -f /lib/modules)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rdma-vm.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/ctl" "$WORK/initramfs"

# 1. initramfs: static busybox plus the modules for virtio-pci and 9p (with their dependencies,
#    in load order), and an init that mounts the shares and switches to the host's root.
INITRAMFS=$WORK/initramfs
mkdir -p "$INITRAMFS"/{bin,dev,proc,sys,newroot,modules}
cp "$BUSYBOX" "$INITRAMFS/bin/busybox"
modules=()
for m in virtio_pci 9pnet_virtio 9p; do
  while read -r verb path _; do
    [ "$verb" = insmod ] || continue
    name=$(basename "$path")
    case " ${modules[*]:-} " in *" ${name%%.ko*} "*) continue;; esac
    case "$name" in
      *.ko) cp "$path" "$INITRAMFS/modules/";;
      *.ko.xz) xz -dc "$path" > "$INITRAMFS/modules/${name%.xz}";;
      *.ko.zst) zstd -qdc "$path" > "$INITRAMFS/modules/${name%.zst}";;
      *) echo "run-in-vm: cannot handle module file $path" >&2; exit 125;;
    esac
    modules+=("${name%%.ko*}")
  done < <(modprobe ${MODPROBE_BASE[@]+"${MODPROBE_BASE[@]}"} -S "$KVER" --show-depends "$m")
done
cat > "$INITRAMFS/init" <<INIT
#!/bin/busybox sh
bb=/bin/busybox
\$bb mount -t proc proc /proc
\$bb mount -t sysfs sysfs /sys
\$bb mount -t devtmpfs devtmpfs /dev
die() { echo "rdma-vm init: \$*"; \$bb poweroff -f; }
for m in ${modules[*]}; do \$bb insmod /modules/\$m.ko || die "insmod \$m failed"; done
opts=trans=virtio,version=9p2000.L,msize=512000
\$bb mount -t 9p -o \$opts,ro,cache=loose hostroot /newroot || die "cannot mount the host root"
for d in tmp run var/tmp; do \$bb mount -t tmpfs -o mode=1777 tmpfs /newroot/\$d; done
\$bb mkdir -p /newroot/run/rdma-vm
\$bb mount -t 9p -o \$opts ctl /newroot/run/rdma-vm || die "cannot mount the control share"
# a directory under the guest's tmpfs does not exist there yet (elsewhere mkdir fails harmlessly)
i=0
for dir in \$(\$bb cat /newroot/run/rdma-vm/ro); do
  \$bb mkdir -p /newroot\$dir 2>/dev/null
  \$bb mount -t 9p -o \$opts,ro ro\$i /newroot\$dir || die "cannot mount \$dir"
  i=\$((i + 1))
done
i=0
for dir in \$(\$bb cat /newroot/run/rdma-vm/rw); do
  \$bb mkdir -p /newroot\$dir 2>/dev/null
  \$bb mount -t 9p -o \$opts rw\$i /newroot\$dir || die "cannot mount \$dir"
  i=\$((i + 1))
done
for fs in dev proc sys; do \$bb mount --move /\$fs /newroot/\$fs; done
exec \$bb switch_root /newroot /bin/bash /run/rdma-vm/guest.sh
INIT
chmod 755 "$INITRAMFS/init"
(cd "$INITRAMFS" && find . | cpio -o -H newc --quiet | gzip -1) > "$WORK/initrd.gz"

# 2. The guest's PID 1: set up the Soft-RoCE device, run the command, report its status, power off.
echo "$RW" > "$WORK/ctl/rw"
echo "$RO" > "$WORK/ctl/ro"
{
  echo '#!/bin/bash'
  for v in PATH JAVA_HOME HOME LANG LC_ALL JAVA_TOOL_OPTIONS CI ${RDMA_VM_ENV:-}; do
    if [ -n "${!v:-}" ]; then printf 'export %s=%q\n' "$v" "${!v}"; fi
  done
  cat <<GUEST
export PATH="\$PATH:/usr/sbin:/sbin"
export RDMA_VM_IP=$IP RDMA_VM_IP6=$IP6 RDMA_VM_DEVICE=$DEV RDMA_VM_TRANSPORT=$TRANSPORT
export RDMA_VM_PEERS=$(printf %q "$PEERS")
export RDMA_VM_KERNEL=$(printf %q "$KVER") RDMA_VM_KROOT=$(printf %q "$KROOT")
mkdir -p /dev/pts /dev/shm && mount -t devpts devpts /dev/pts && mount -t tmpfs tmpfs /dev/shm
# what udev would create: bash process substitution needs /dev/fd
ln -sf /proc/self/fd /dev/fd; ln -sf /proc/self/fd/0 /dev/stdin; ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
echo "rdma-vm: guest up after \$(cut -d' ' -f1 /proc/uptime) s"
ulimit -l unlimited
hostname rdma-vm
ip link set lo up
if [ -n "\$RDMA_VM_KROOT" ]; then
  # the kernel root's modules where modprobe looks for them; the host's stay hidden under the tmpfs
  mount -t tmpfs -o mode=755 tmpfs $(printf %q "$MODULES_DIR") && mkdir -p $(printf %q "$MODULES_DIR/$KVER") \
    && mount --bind $(printf %q "$KROOT/lib/modules/$KVER") $(printf %q "$MODULES_DIR/$KVER") \
    || echo "rdma-vm: cannot mount the modules of \$RDMA_VM_KERNEL from \$RDMA_VM_KROOT"
fi
rdma_driver() { # load the kernel driver of the transport
  if [ "\$RDMA_VM_TRANSPORT" = siw ]; then
    # siw is not in Debian's kernel: its stock dependencies first, then the out-of-tree module
    modprobe -a \$(modinfo -F depends "\$RDMA_VM_PEERS/siw.ko" | tr , ' ') \
      && insmod "\$RDMA_VM_PEERS/siw.ko"
  else
    modprobe rdma_rxe
  fi
}
if rdma_driver && ip link add rxedummy0 type dummy && ip addr add $IP/24 dev rxedummy0 \
   && ip -6 addr add $IP6/64 dev rxedummy0 nodad \
   && ip link set rxedummy0 up && rdma link add $DEV type $TRANSPORT netdev rxedummy0; then
  echo "rdma-vm: $DEV ($TRANSPORT) on $IP and $IP6"
else
  echo "rdma-vm: $TRANSPORT set-up FAILED"
fi
cd $(printf %q "$PWD") || cd /
$(printf '%q ' "$@") </dev/null
rc=\$?
echo \$rc > /run/rdma-vm/rc
sync
echo "rdma-vm: command exited with \$rc after \$(cut -d' ' -f1 /proc/uptime) s"
/bin/busybox poweroff -f
GUEST
} > "$WORK/ctl/guest.sh"

# 3. Boot. Under TCG, "-cpu max" gives the guest the instruction set extensions the JVM expects;
#    explicitly without PCID for Linux 7.x and later (see RDMA_VM_CPU above).
if [ "${KVER%%.*}" -ge 7 ] 2>/dev/null; then cpu=max,-pcid,-invpcid; else cpu=max; fi
case $ACCEL in
  kvm) accel=(-accel kvm -cpu host);;
  *) accel=(-accel tcg,thread=multi -cpu "${RDMA_VM_CPU:-$cpu}");;
esac
shares=(-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
        -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
        -fsdev local,id=ctl,path="$WORK/ctl",security_model=none
        -device virtio-9p-pci,fsdev=ctl,mount_tag=ctl)
i=0
for dir in $RO; do
  shares+=(-fsdev "local,id=ro$i,path=$dir,security_model=none,readonly=on,multidevs=remap"
           -device "virtio-9p-pci,fsdev=ro$i,mount_tag=ro$i")
  i=$((i + 1))
done
i=0
for dir in $RW; do
  shares+=(-fsdev "local,id=rw$i,path=$dir,security_model=none,multidevs=remap"
           -device "virtio-9p-pci,fsdev=rw$i,mount_tag=rw$i")
  i=$((i + 1))
done
set +e
# log_buf_len: ksmbd's debug output of a 16 MiB transfer must not push older lines out of the
# kernel log, which the interop tests count (linux-peers.sh dmesg-mark/dmesg-check)
timeout -k 10 "$TIMEOUT" qemu-system-x86_64 "${accel[@]}" -smp "$CPUS" -m "$MEM" \
  -nodefaults -no-user-config -display none -monitor none -serial stdio -nic none -no-reboot \
  -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1 log_buf_len=32M$clock_args" "${shares[@]}" </dev/null | sed -u 's/\r$//'
qemu_rc=${PIPESTATUS[0]}
set -e
if [ -s "$WORK/ctl/rc" ]; then exit "$(cat "$WORK/ctl/rc")"; fi
if [ "$qemu_rc" = 124 ]; then echo "run-in-vm: guest killed after ${TIMEOUT} s" >&2; exit 124; fi
echo "run-in-vm: the guest reported no exit status (qemu exit status $qemu_rc)" >&2
exit 125
