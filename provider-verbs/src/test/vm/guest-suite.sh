#!/usr/bin/env bash
# guest-suite.sh OUT_DIR - the device test run: JUnit tests that need an RDMA device, then perftest
# and the provider benchmark side by side on the same device.
#
# Runs inside the Soft-RoCE guest (tools/rdma-vm/run-in-vm.sh) or directly on a host with an RDMA
# device; started by SoftRoceGuestIT, which writes OUT_DIR/guest.env first:
#   JAVA            the java launcher
#   TEST_CLASSPATH  the bundle jar, the test classes and the test-scope dependencies
#   NATIVE_DIR      the directory holding libdisni.so
#   SELECTORS_FILE  launcher selectors, one per line (guest-tests.txt)
#   DEVICE, IP      the RDMA device and its address
#   BENCHMARKS      "true" to run perftest and the provider benchmark
# Writes OUT_DIR/reports (JUnit XML), junit.log, perftest.txt, benchmark.txt; exits with the
# launcher's status.
set -u
OUT=${1:?usage: guest-suite.sh OUT_DIR}
# shellcheck source=/dev/null
. "$OUT/guest.env"
export RDMA_VM_DEVICE=$DEVICE RDMA_VM_IP=$IP

# TCG: start-up and JIT are slow, so favour the quick compiler and the small collector.
JVM_OPTS=(--enable-native-access=ALL-UNNAMED "-Djava.library.path=$NATIVE_DIR" -XX:+UseSerialGC
          -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xmx512m "-XX:ErrorFile=$OUT/hs_err_pid%p.log"
          "-Dtck.timeoutFactor=${TCK_TIMEOUT_FACTOR:-5}")
mapfile -t SELECTORS < <(grep -v '^[[:space:]]*\(#\|$\)' "$SELECTORS_FILE")

# shellcheck source=../../../../tools/rdma-vm/watchdog.sh
. "$(dirname "$0")/../../../../tools/rdma-vm/watchdog.sh"

start=$(date +%s)
echo "guest-suite: JUnit on $DEVICE ($IP)"
# a hang shows its threads before the guest's 15 minutes are up (JUNIT_WATCHDOG_SECONDS)
run_watched "${JUNIT_WATCHDOG_SECONDS:-600}" "$OUT" \
  "$JAVA" "${JVM_OPTS[@]}" -jar "$OUT/junit-platform-console-standalone.jar" execute \
  --class-path "$TEST_CLASSPATH" "${SELECTORS[@]}" --reports-dir "$OUT/reports" \
  --details=testfeed --disable-banner --disable-ansi-colors > "$OUT/junit.log" 2>&1
junit_rc=$?
tail -n 20 "$OUT/junit.log"
echo "guest-suite: JUnit exited $junit_rc after $(( $(date +%s) - start )) s"

if [ "${BENCHMARKS:-true}" = true ]; then
  bstart=$(date +%s)
  : > "$OUT/perftest.txt"
  : > "$OUT/benchmark.txt"
  # Emulation is noisy: perftest and the provider take turns, BENCH_ROUNDS (3) times, and the
  # table shows medians. Per round: operation, message size, iterations (Soft-RoCE under TCG moves ~30-50 MiB/s).
  for round in $(seq "${BENCH_ROUNDS:-3}"); do
  while read -r tool size iters; do
    timeout 120 "$tool" -d "$DEVICE" -s "$size" -n "$iters" -F > "$OUT/perftest-server.log" 2>&1 &
    server=$!
    sleep 1
    echo "=== $tool $size $iters" >> "$OUT/perftest.txt"
    timeout 120 "$tool" -d "$DEVICE" -s "$size" -n "$iters" -F "$IP" >> "$OUT/perftest.txt" 2>&1
    echo "=== exit $?" >> "$OUT/perftest.txt"
    wait "$server"
  done <<'RUNS'
ib_write_bw 4096 2000
ib_write_bw 65536 500
ib_write_bw 1048576 40
ib_read_bw 4096 2000
ib_read_bw 65536 500
ib_read_bw 1048576 40
ib_send_bw 4096 2000
ib_send_bw 65536 500
ib_send_bw 1048576 40
ib_send_lat 64 2000
RUNS
  # the quick compiler here too: C2 compiling on two emulated CPUs costs more than it gains
  "$JAVA" "${JVM_OPTS[@]}" -cp "$TEST_CLASSPATH" \
    org.smbdirect.rdma.verbs.device.VerbsBenchmark "$DEVICE" "$IP" >> "$OUT/benchmark.txt" 2>&1
  echo "=== exit $?" >> "$OUT/benchmark.txt"
  done
  echo "guest-suite: perftest and provider benchmark took $(( $(date +%s) - bstart )) s"
fi
exit $junit_rc
