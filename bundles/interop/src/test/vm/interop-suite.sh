#!/usr/bin/env bash
# interop-suite.sh OUT_DIR - the Linux interoperability run, inside the QEMU guest
# (tools/rdma-vm/run-in-vm.sh with RDMA_VM_TRANSPORT=rxe or siw): loads the kernel's SMB Direct
# peers (ksmbd.ko, cifs.ko built by tools/rdma-vm/build-linux-peers.sh), then runs the JUnit
# classes of org.smbdirect.interop.guest, which start ksmbd and mount cifs themselves through
# linux-peers.sh. Started by LinuxPeersGuestIT, which writes OUT_DIR/guest.env first:
#   JAVA, TEST_CLASSPATH, NATIVE_DIR (libdisni.so), LAUNCHER (JUnit console), PEERS_SCRIPT, TRANSPORT,
#   JVM_EXTRA, SELECT, EXCLUDE
# Writes OUT_DIR/reports (JUnit XML), junit.log, dmesg.txt; exits with the launcher's status.
set -u
OUT=${1:?usage: interop-suite.sh OUT_DIR}
# shellcheck source=/dev/null
. "$OUT/guest.env"

echo "interop-suite: $TRANSPORT device ${RDMA_VM_DEVICE:-?} on ${RDMA_VM_IP:-?}"
if ! bash "$PEERS_SCRIPT" load > "$OUT/peers-load.log" 2>&1; then
  cat "$OUT/peers-load.log"
  echo "interop-suite: loading the Linux peers FAILED"
fi

# TCG: start-up and JIT are slow, so favour the quick compiler and the small collector.
JVM_OPTS=(--enable-native-access=ALL-UNNAMED "-Djava.library.path=$NATIVE_DIR" -XX:+UseSerialGC
          -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xmx768m "-XX:ErrorFile=$OUT/hs_err_pid%p.log"
          "-Dinterop.peers=$PEERS_SCRIPT" "-Dinterop.out=$OUT" "-Dinterop.transport=$TRANSPORT")
# extra JVM options (-Dinterop.jvmOpts on the host, e.g. -Dinterop.trace=true) and a narrower
# selection (-Dinterop.select, a JUnit console selector such as --select-class=...KsmbdServerTest)
read -r -a EXTRA_OPTS <<< "${JVM_EXTRA:-}"
JVM_OPTS+=("${EXTRA_OPTS[@]}")
SELECT=${SELECT:---select-package=org.smbdirect.interop.guest}
# classes left out on this transport (-Dinterop.benchTransports: the benchmark runs on one)
EXCLUDE_OPTS=()
if [ -n "${EXCLUDE:-}" ]; then EXCLUDE_OPTS=("$EXCLUDE"); fi
# shellcheck source=../../../../../tools/rdma-vm/watchdog.sh
. "$(dirname "$0")/../../../../../tools/rdma-vm/watchdog.sh"
start=$(date +%s)
# a hang shows its threads before the guest's 20 minutes are up (JUNIT_WATCHDOG_SECONDS)
run_watched "${JUNIT_WATCHDOG_SECONDS:-1080}" "$OUT" \
  "$JAVA" "${JVM_OPTS[@]}" -jar "$LAUNCHER" execute --class-path "$TEST_CLASSPATH" \
  "$SELECT" "${EXCLUDE_OPTS[@]}" --reports-dir "$OUT/reports" \
  '--config=junit.jupiter.testclass.order.default=org.junit.jupiter.api.ClassOrderer$OrderAnnotation' \
  --details=testfeed --disable-banner --disable-ansi-colors > "$OUT/junit.log" 2>&1
rc=$?
tail -n 30 "$OUT/junit.log"
dmesg > "$OUT/dmesg.txt" 2>&1
echo "interop-suite: JUnit exited $rc after $(( $(date +%s) - start )) s"
exit $rc
