#!/usr/bin/env bash
# linux-peers.sh - run Linux's own SMB Direct peers (ksmbd server, cifs client) inside the
# run-in-vm.sh guest, as references for the project's tests.
#
# Usage (in the guest, as root; call it or source it and call linux_peers SUBCOMMAND ...):
#   linux-peers.sh load                       modprobe the stock dependencies, insmod ksmbd.ko and
#                                             cifs.ko from $RDMA_VM_PEERS (build-linux-peers.sh);
#                                             smbdirect.ko first when it is there (Linux 7.x,
#                                             build-linux7-peers.sh: ksmbd and cifs share it)
#   linux-peers.sh ksmbd-start SHAREDIR [USER PASS]
#                                             write a config and user database under
#                                             $LINUX_PEERS_STATE (/tmp/linux-peers; /etc is
#                                             read-only), one share "share" = SHAREDIR writable by
#                                             USER (default smbtest / smbtest-pass), start
#                                             ksmbd.mountd; prints "ksmbd: rdma port N"
#   linux-peers.sh ksmbd-port [DEVICE]        the port ksmbd's SMB Direct listener uses. 6.x: 5445
#                                             when an iWARP device exists when ksmbd starts, else
#                                             445. 7.x: 5445 for an iWARP DEVICE, 445 for IB/RoCE
#                                             (DEVICE: default $RDMA_VM_DEVICE, else any device)
#   linux-peers.sh ksmbd-debug on|off [COMP]  toggle ksmbd debug output into dmesg (COMP: all,
#                                             smb, auth, vfs, oplock, ipc, conn, rdma; default all)
#   linux-peers.sh ksmbd-stop                 stop ksmbd.mountd and the kernel server
#   linux-peers.sh ksmbd-share-remove [NAME]  delete share NAME (default share) from the running
#                                             server's configuration and reload it: new tree
#                                             connects to it fail with BAD_NETWORK_NAME
#   linux-peers.sh cifs-mount //IP/share MOUNTPOINT [EXTRA,OPTIONS]
#                                             mount with rdma,nodfs,vers=3.0 (unless OPTIONS name
#                                             another vers=) and the user of ksmbd-start
#                                             (LINUX_PEERS_USER/_PASS override)
#   linux-peers.sh cifs-mount-tcp //IP/share MOUNTPOINT [EXTRA,OPTIONS]
#                                             the same over TCP (port 445), without rdma
#   linux-peers.sh cifs-umount MOUNTPOINT
#   linux-peers.sh cifs-debugdata             print /proc/fs/cifs/DebugData (SMB Direct parameters
#                                             of mounted RDMA sessions)
#   linux-peers.sh dmesg-mark                 remember where the kernel log is now: dmesg-check
#                                             looks only at what follows
#   linux-peers.sh dmesg-since-mark           print the kernel log since the mark
#   linux-peers.sh dmesg-check                print the kernel's ksmbd/cifs/SMB Direct lines since
#                                             the mark; exit 1 if one of them reports an SMB Direct
#                                             error or the kernel warned or oopsed
#
# Environment: RDMA_VM_PEERS (module directory), RDMA_VM_IP, RDMA_VM_DEVICE, LINUX_PEERS_STATE,
# LINUX_PEERS_USER, LINUX_PEERS_PASS, LINUX_PEERS_TCP_PORT (ksmbd's TCP port, default 445).
#
# ksmbd-tools: the guest's own (/usr/sbin/ksmbd.*), unless RDMA_VM_PEERS has a sidroot (a
# build-linux7-peers.sh output): then ksmbd-tools 3.5 of that Debian unstable root, run on the
# guest's (the host's) root through unstable's own loader,
#   SIDROOT/lib64/ld-linux-x86-64.so.2 --library-path SIDROOT/lib/x86_64-linux-gnu:... \
#     --argv0 ksmbd.mountd SIDROOT/usr/libexec/ksmbd.tools ARGS
# (one binary; argv[0] names the tool). ksmbd 7.x needs 3.5: with 3.4.7 every tree connect fails.
# 3.5 spells the options otherwise (-C CONF, -P PWDDB, the user a plain argument); lp_ksmbd_tool
# and the subcommands here take care of both.
#
# Facts (Linux 6.1, ksmbd-tools 3.4.7): ksmbd's RDMA port is not configurable: 445 on IB/RoCE,
# 5445 as soon as an iWARP device was present when ksmbd's RDMA transport started (ksmbd.mountd
# starting the server). The cifs client with "rdma" and no port= tries 5445, then 445.
# Linux 7.x (shared smbdirect module): ksmbd listens on 445 for IB/RoCE only and on 5445 for iWARP
# only; cifs tries 5445 (iWARP only), then 445 (IB/RoCE only).
# ksmbd-tools adds the IPC$ share by itself; USER must also be a Unix user of the guest (ksmbd
# maps the session to its uid/gid), so ksmbd-start maps SMB users onto "root" with
# "force user = root" and the share stays writable.

LINUX_PEERS_STATE=${LINUX_PEERS_STATE:-/tmp/linux-peers}
LINUX_PEERS_USER=${LINUX_PEERS_USER:-smbtest}
LINUX_PEERS_PASS=${LINUX_PEERS_PASS:-smbtest-pass}

lp_log() { echo "linux-peers: $*" >&2; }

# The ksmbd-tools binary in the Debian unstable root of a build-linux7-peers.sh output, if
# RDMA_VM_PEERS is one
lp_sidroot_tools() {
  local r=${RDMA_VM_PEERS:-}/sidroot t
  [ -n "${RDMA_VM_PEERS:-}" ] && [ -e "$r/lib64/ld-linux-x86-64.so.2" ] || return 1
  for t in "$r/usr/libexec/ksmbd.tools" "$r/usr/sbin/ksmbd.tools"; do
    [ -x "$t" ] && { echo "$t"; return 0; }
  done
  return 1
}

# lp_ksmbd_tool NAME ARGS...: run the ksmbd-tools program NAME (ksmbd.mountd, ksmbd.adduser, ...)
lp_ksmbd_tool() {
  local name=$1 tools root
  shift
  if tools=$(lp_sidroot_tools); then
    root=$RDMA_VM_PEERS/sidroot
    "$root/lib64/ld-linux-x86-64.so.2" --inhibit-cache \
      --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
      --argv0 "$name" "$tools" "$@"
  else
    "$name" "$@"
  fi
}

# ksmbd-tools 3.5 and later: -C CONF, -P PWDDB (3.4: -c, -u/-i)
lp_ksmbd_tools35() {
  [ -n "${LP_KSMBD_TOOLS35:-}" ] || {
    if lp_ksmbd_tool ksmbd.mountd --help 2>&1 | grep -q -- '--pwddb'; then LP_KSMBD_TOOLS35=yes; else LP_KSMBD_TOOLS35=no; fi
  }
  [ "$LP_KSMBD_TOOLS35" = yes ]
}

# is ksmbd.mountd running? (through unstable's loader its command name is the loader's: ask the
# lock file ksmbd.mountd keeps its pid in as well)
lp_mountd_running() {
  local pid
  pgrep -x ksmbd.mountd >/dev/null && return 0
  pid=$(cat /run/ksmbd.lock 2>/dev/null | head -n 1)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

lp_load() {
  local m d deps mods="ksmbd cifs"
  [ -n "${RDMA_VM_PEERS:-}" ] && [ -f "$RDMA_VM_PEERS/ksmbd.ko" ] \
    || { lp_log "RDMA_VM_PEERS (${RDMA_VM_PEERS:-unset}) holds no ksmbd.ko; run build-linux-peers.sh"; return 3; }
  # Linux 7.x: ksmbd and cifs share the SMB Direct code of smbdirect.ko, built beside them
  [ -f "$RDMA_VM_PEERS/smbdirect.ko" ] && mods="smbdirect $mods"
  for m in $mods; do
    grep -q "^$m " /proc/modules && continue
    deps=
    for d in $(modinfo -F depends "$RDMA_VM_PEERS/$m.ko" | tr , ' '); do
      # a dependency built beside it (smbdirect) is loaded from there, in the order above
      [ -f "$RDMA_VM_PEERS/$d.ko" ] || deps="$deps $d"
    done
    # iw_cm and rdma_ucm are not hard dependencies but make iWARP and user-space rdma_cm work
    modprobe -a $deps iw_cm rdma_ucm || { lp_log "modprobe$deps failed"; return 1; }
    insmod "$RDMA_VM_PEERS/$m.ko" || { lp_log "insmod $m.ko failed"; return 1; }
  done
  lp_log "loaded $(echo $mods | sed 's/\([a-z]*\)/\1.ko/g; s/ /, /g') from $RDMA_VM_PEERS"
}

lp_ksmbd_port() {
  local dev=${1:-${RDMA_VM_DEVICE:-}}
  # Linux 7.x: one listener per transport (445 IB/RoCE only, 5445 iWARP only): the device decides
  if [ "$(uname -r | cut -d. -f1)" -ge 7 ] 2>/dev/null && [ -n "$dev" ] && [ -r "/sys/class/infiniband/$dev/node_type" ]; then
    case $(cat "/sys/class/infiniband/$dev/node_type") in 4:*|*RNIC*) echo 5445;; *) echo 445;; esac
    return 0
  fi
  if rdma link show 2>/dev/null | grep -q . && ls /sys/class/infiniband 2>/dev/null | grep -q . ; then
    local d
    for d in /sys/class/infiniband/*; do
      # node_type: "1: CA" for IB/RoCE, "4: RNIC" for iWARP
      case $(cat "$d/node_type" 2>/dev/null) in 4:*|*RNIC*) echo 5445; return 0;; esac
    done
  fi
  echo 445
}

lp_ksmbd_start() {
  local dir=${1:?usage: ksmbd-start SHAREDIR [USER PASS]}
  local user=${2:-$LINUX_PEERS_USER} pass=${3:-$LINUX_PEERS_PASS}
  local conf=$LINUX_PEERS_STATE/ksmbd.conf db=$LINUX_PEERS_STATE/ksmbdpwd.db
  grep -q '^ksmbd ' /proc/modules || lp_load || return
  mkdir -p "$LINUX_PEERS_STATE" "$dir"
  cat > "$conf" <<CONF
[global]
	netbios name = RDMA-VM
	workgroup = WORKGROUP
	tcp port = ${LINUX_PEERS_TCP_PORT:-445}
	server min protocol = SMB2_10
	server signing = auto
	map to guest = never
	restrict anonymous = 0
	server multi channel support = no
[share]
	path = $dir
	read only = no
	browseable = yes
	valid users = $user
	force user = root
	force group = root
	create mask = 0666
	directory mask = 0777
CONF
  rm -f "$db"
  if lp_ksmbd_tools35; then
    lp_ksmbd_tool ksmbd.adduser -C "$conf" -P "$db" -a -p "$pass" "$user" >/dev/null \
      || { lp_log "ksmbd.adduser failed"; return 1; }
    lp_ksmbd_tool ksmbd.mountd -C "$conf" -P "$db" || { lp_log "ksmbd.mountd failed"; return 1; }
  else
    ksmbd.adduser -c "$conf" -i "$db" -a "$user" -p "$pass" >/dev/null \
      || { lp_log "ksmbd.adduser failed"; return 1; }
    ksmbd.mountd -c "$conf" -u "$db" || { lp_log "ksmbd.mountd failed"; return 1; }
  fi
  echo "$user" > "$LINUX_PEERS_STATE/user"; echo "$pass" > "$LINUX_PEERS_STATE/pass"
  # the server is up once the kernel listens on the TCP port
  local i
  for i in $(seq 1 50); do
    ss -ltn 2>/dev/null | grep -q ":${LINUX_PEERS_TCP_PORT:-445} " && break
    sleep 0.2
  done
  echo "ksmbd: share //${RDMA_VM_IP:-10.99.0.1}/share = $dir, user $user, rdma port $(lp_ksmbd_port), tcp port ${LINUX_PEERS_TCP_PORT:-445}"
}

lp_ksmbd_debug() {
  local want=${1:-on} comp=${2:-all} state
  state=$(cat /sys/class/ksmbd-control/debug 2>/dev/null)
  # ksmbd.control -d toggles; the sysfs file shows enabled components in brackets
  case "$want:$state" in
    on:*"[$comp]"*|off:*) ;;
  esac
  if [ "$want" = on ]; then
    case $state in *"[$comp]"*) ;; *) lp_ksmbd_tool ksmbd.control -d "$comp" >/dev/null;; esac
  else
    case $state in *"[$comp]"*) lp_ksmbd_tool ksmbd.control -d "$comp" >/dev/null;; esac
  fi
  cat /sys/class/ksmbd-control/debug 2>/dev/null
}

lp_ksmbd_stop() {
  lp_ksmbd_tool ksmbd.control -s >/dev/null 2>&1
  local i
  for i in $(seq 1 25); do lp_mountd_running || break; sleep 0.2; done
  lp_log "ksmbd stopped"
}

lp_ksmbd_share_remove() {
  local name=${1:-share} conf=$LINUX_PEERS_STATE/ksmbd.conf
  if lp_ksmbd_tools35; then
    lp_ksmbd_tool ksmbd.addshare -C "$conf" -d "$name" >/dev/null || { lp_log "ksmbd.addshare -d $name failed"; return 1; }
  else
    ksmbd.addshare -c "$conf" -d "$name" >/dev/null || { lp_log "ksmbd.addshare -d $name failed"; return 1; }
  fi
  lp_ksmbd_tool ksmbd.control -r >/dev/null || { lp_log "ksmbd.control -r failed"; return 1; }
  lp_log "share $name removed, configuration reloaded"
}

lp_cifs_mount() { lp_cifs_mount_over rdma "$@"; }

# the same share over TCP (port 445): the control for what the RDMA transport changes
lp_cifs_mount_tcp() { lp_cifs_mount_over tcp "$@"; }

lp_cifs_mount_over() {
  local rdma=
  [ "$1" = rdma ] && rdma=rdma,
  shift
  local unc=${1:?usage: cifs-mount[-tcp] //IP/share MOUNTPOINT [options]} mnt=${2:?mount point}
  local extra=${3:-}
  local user pass
  user=${LINUX_PEERS_USER_OVERRIDE:-$(cat "$LINUX_PEERS_STATE/user" 2>/dev/null || echo "$LINUX_PEERS_USER")}
  pass=${LINUX_PEERS_PASS_OVERRIDE:-$(cat "$LINUX_PEERS_STATE/pass" 2>/dev/null || echo "$LINUX_PEERS_PASS")}
  grep -q '^cifs ' /proc/modules || lp_load || return
  mkdir -p "$mnt"
  # SMB 3.0 unless the options name a dialect
  local vers=vers=3.0,
  case ",$extra," in *,vers=*) vers=;; esac
  mount -t cifs "$unc" "$mnt" \
    -o "${rdma}nodfs,${vers}username=$user,password=$pass,noperm${extra:+,$extra}"
}

lp_cifs_umount() { umount "${1:?usage: cifs-umount MOUNTPOINT}"; }

lp_cifs_debugdata() { cat /proc/fs/cifs/DebugData; }

# the kernel log since the last dmesg-mark (all of it without a mark)
lp_dmesg_since_mark() {
  local mark
  mark=$(cat "$LINUX_PEERS_STATE/dmesg-mark" 2>/dev/null || echo 0)
  dmesg | tail -n +$((mark + 1))
}

# the same with each line's level (dmesg -x: "kern  :err   : [...] text"), to tell errors from chatter
lp_dmesg_since_mark_levels() {
  local mark
  mark=$(cat "$LINUX_PEERS_STATE/dmesg-mark" 2>/dev/null || echo 0)
  dmesg -x | tail -n +$((mark + 1))
}

lp_dmesg_mark() {
  mkdir -p "$LINUX_PEERS_STATE"
  dmesg | wc -l > "$LINUX_PEERS_STATE/dmesg-mark"
}

lp_dmesg_check() {
  local lines log errors
  log=$(lp_dmesg_since_mark)
  lines=$(echo "$log" | grep -E -i 'ksmbd|cifs|smbd|smb_direct|smbdirect|siw|rxe' )
  [ -n "$lines" ] && echo "$lines"
  # Only what the kernel logged as an error or warning can report one: with ksmbd's debug output on,
  # Linux 7's shared module narrates every connection's end at the info level ("status=DISCONNECTED
  # first_error=-ECONNRESET" when the peer disconnects), and that is no error.
  errors=$(lp_dmesg_since_mark_levels | grep -E '^[a-z]+ *:(emerg|alert|crit|err|warn) *: ' \
    | sed -E 's/^[a-z]+ *:[a-z]+ *: //' | grep -E -i 'ksmbd|cifs|smbd|smb_direct|smbdirect|siw|rxe')
  # errors of the SMB Direct code of either side (not the chatter of debug output). Expected and
  # not an error: on IB/RoCE, cifs without port= tries 5445 first ("rdma_connect failed
  # port=5445"), then 445, where ksmbd listens; Linux 7.x says "_smbd_get_connection:N connect to
  # IP:5445 failed: -ENODEV" (5445 is for iWARP devices only; "[IPv6]:5445/0%0" over IPv6). Nor is the kernel's note that the
  # out-of-tree smbdirect.ko (7.x) is unsigned.
  # Expected too, after a mount that failed (CifsClientTest: the engine is no SMB2 server): cifs's
  # smbd_post_send_credits work, queued by the last receive, checks that the transport is still
  # connected and then posts a receive; when cifs's own teardown moves the queue pair to the error
  # state in between, the post fails with -ENOTCONN (-107) and both functions log it (seen on siw).
  # On rxe the same race can end with -ENOMEM (-12) instead: the teardown's drain has put its
  # receive in the queue, which cifs sizes to exactly its receive credits, so the credits work's
  # receive finds it full (seen once on rxe, 2026-11-26). Or with -EINVAL (-22), when the teardown
  # has already destroyed the queue pair (rxe_post_recv refuses a queue pair that is no longer valid;
  # seen once on rxe, 2026-11-26, night). A race inside cifs (fs/smb/client/smbdirect.c, 6.1);
  # ignored only after "cifs_mount failed".
  local teardown='^$'
  if echo "$lines" | grep -q 'cifs_mount failed'; then
    teardown='smbd_post_recv:[0-9]+ ib_post_recv failed rc=-(107|12|22)$|smbd_post_send_credits:[0-9]+ post_recv failed rc=-(107|12|22)$'
    if echo "$lines" | grep -q -E "$teardown"; then
      echo "linux-peers: known cifs teardown race after a failed mount (post_recv failed rc=-107, -12 or -22), ignored" >&2
    fi
  fi
  # Expected as well at an unmount (LinuxControlTest, Linux on both sides, seen on rxe): cifs sizes
  # its receive queue to exactly its receive credits (see the drain warning below); its credits
  # work, racing the teardown, posts one receive too many, rxe refuses it with -ENOMEM (-12), and
  # both functions log it, milliseconds before ksmbd logs the disconnect. Ignored only within 1 s
  # before such a disconnect.
  local unmounting
  unmounting=$(echo "$lines" | awk '
    function stamp(l) { sub(/^\[ */, "", l); sub(/\].*/, "", l); return l + 0 }
    /ksmbd: smb_direct: disconnected/ { disc[++n] = stamp($0) }
    /(smbd_post_recv:[0-9]+ ib_post_recv|smbd_post_send_credits:[0-9]+ post_recv) failed rc=-12$/ {
      cand[++m] = stamp($0); text[m] = $0 }
    END { for (i = 1; i <= m; i++) for (j = 1; j <= n; j++)
            if (disc[j] >= cand[i] && disc[j] - cand[i] <= 1.0) { print text[i]; break } }')
  if [ -n "$unmounting" ]; then
    echo "linux-peers: known cifs race at unmount (post_recv failed rc=-12 just before the disconnect), ignored" >&2
  fi
  local rc=0
  if echo "$errors" | grep -E -i 'smb_?direct|smbd_|rdma' \
       | grep -E -i 'error|fail|disconnect.*(err|-[0-9])|cannot|invalid|timed? ?out|refused|reject' \
       | grep -v -E 'ksmbd: (smb_direct|rdma).*negotiate' \
       | grep -v -E 'rdma_connect failed port=5445' \
       | grep -v -E '_smbd_get_connection:[0-9]+ connect to [^ ]+:5445(/[^ ]*)? failed: -ENODEV$' \
       | grep -v -E 'module verification failed: signature|loading out-of-tree module taints' \
       | grep -v -F -x -e "${unmounting:-no line is this one}" \
       | grep -v -E "$teardown" ; then
    echo "linux-peers: dmesg shows SMB Direct errors (lines above)" >&2
    rc=1
  fi
  # A kernel oops or warning in any module fails the check too, but one: cifs's smbd_destroy
  # warns "failed to drain recv queue: -12" (WARNING in __ib_drain_rq) on rxe at unmount, with
  # Linux on both sides as well (the control test): cifs sizes its receive queue to exactly its
  # receive credits, so the drain's extra receive finds the queue full. Not ours to fix; reported.
  if echo "$log" | grep -q 'WARNING: CPU: .* __ib_drain_rq'; then
    echo "linux-peers: known kernel warning (cifs smbd_destroy: failed to drain recv queue), ignored" >&2
  fi
  # And one oops, also cifs's own race after a failed mount (seen once on rxe, 2026-11-27): the
  # demultiplex thread, which cifs_put_tcp_session has sent SIGKILL, runs smbd_destroy, whose
  # wait for the DISCONNECTED event is interruptible and so returns at once; the teardown goes on
  # while the transport still counts as connected, and the disconnect work that the flushed
  # receives queued runs after rdma_destroy_id: rdma_disconnect on the freed identifier, a NULL
  # pointer dereference in the cifs workqueue (fs/smb/client/smbdirect.c, 6.1). Ignored only after
  # "cifs_mount failed", and only when every oops of the log is that one.
  local oopses known_oopses oops_filter='^$'
  oopses=$(echo "$log" | grep -c 'Oops: ')
  known_oopses=$(echo "$log" | grep -c -E 'Workqueue: smbd_[0-9a-f]+ smbd_disconnect_rdma_work \[cifs\]')
  if [ "$oopses" -gt 0 ] && [ "$oopses" = "$known_oopses" ] && echo "$lines" | grep -q 'cifs_mount failed' \
       && [ "$(echo "$log" | grep -c 'RIP: 0010:rdma_disconnect+')" -ge "$oopses" ]; then
    echo "linux-peers: known cifs teardown race after a failed mount (oops in smbd_disconnect_rdma_work:" \
         "rdma_disconnect on a destroyed identifier; a Linux 6.1 cifs bug), ignored" >&2
    oops_filter='BUG: kernel NULL pointer dereference|Oops: '
  fi
  if echo "$log" | grep -E 'BUG: |Oops: |WARNING: CPU: |general protection fault' | grep -v '__ib_drain_rq' \
       | grep -v -E "$oops_filter" ; then
    echo "linux-peers: dmesg shows a kernel oops or warning (lines above)" >&2
    rc=1
  fi
  return $rc
}

linux_peers() {
  local cmd=${1:-}; shift || true
  case $cmd in
    load) lp_load "$@";;
    ksmbd-start) lp_ksmbd_start "$@";;
    ksmbd-port) lp_ksmbd_port "$@";;
    ksmbd-debug) lp_ksmbd_debug "$@";;
    ksmbd-stop) lp_ksmbd_stop;;
    ksmbd-share-remove) lp_ksmbd_share_remove "$@";;
    cifs-mount) lp_cifs_mount "$@";;
    cifs-mount-tcp) lp_cifs_mount_tcp "$@";;
    cifs-umount) lp_cifs_umount "$@";;
    cifs-debugdata) lp_cifs_debugdata;;
    dmesg-mark) lp_dmesg_mark;;
    dmesg-since-mark) lp_dmesg_since_mark;;
    dmesg-check) lp_dmesg_check;;
    *) sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; return 2;;
  esac
}

# Called rather than sourced: run the subcommand.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  linux_peers "$@"
fi
