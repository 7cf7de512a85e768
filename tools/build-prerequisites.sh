#!/bin/sh
# Printed at the start of `mvn verify` (root pom, validate phase): which parts of the test suite
# this machine runs and which it skips, and why. A JDK and Maven run everything else; `.ci/run`
# installs all of it, so CI skips nothing. Informational only: each skipped test also says so.
cd "$(dirname "$0")/.."
jdk25=${1:-/usr/lib/jvm/temurin-25-jdk-amd64}
row() { printf '[INFO]   %-48s %s\n' "$1" "$2"; }

echo "[INFO] ---- smbdirect: what this machine runs of the test suite (.ci/run installs everything) ----"
if native=$(sh provider-verbs/src/main/c/build-native.sh --check 2>&1); then
  row "verbs JNI library, native tests" "run ($native)"
  native_ok=true
else
  row "verbs JNI library, native tests" "SKIPPED: $native"
  native_ok=false
fi
if ! $native_ok; then
  row "verbs provider on Soft-RoCE (SoftRoceGuestIT)" "SKIPPED: needs the JNI library (above)"
  guest_ok=false
elif vm=$(tools/rdma-vm/run-in-vm.sh --check 2>&1); then
  row "verbs provider on Soft-RoCE (SoftRoceGuestIT)" "run (${vm#run-in-vm: })"
  guest_ok=true
else
  row "verbs provider on Soft-RoCE (SoftRoceGuestIT)" "SKIPPED: $(printf '%s' "$vm" | sed 's/^run-in-vm: //' | paste -sd ';' -)"
  guest_ok=false
fi
if ! $guest_ok; then
  row "perftest comparison (in the guest)" "SKIPPED: needs the guest (above)"
elif command -v ib_send_bw >/dev/null 2>&1; then
  row "perftest comparison (in the guest)" "run"
else
  row "perftest comparison (in the guest)" "SKIPPED: no ib_send_bw (package perftest)"
fi
if command -v tshark >/dev/null 2>&1; then
  row "capture dissection (CaptureCheckTest)" "run"
else
  row "capture dissection (CaptureCheckTest)" "SKIPPED: no tshark (package tshark)"
fi
if [ -x "$jdk25/bin/java" ]; then
  row "demo and shell session on Temurin 25" "run ($jdk25)"
else
  row "demo and shell session on Temurin 25" "SKIPPED: no JDK at $jdk25 (-Dit.jdk25=DIR)"
fi
row "everything else (unit, fuzz, soak, itest, Karaf)" "run (needs only the JDK and Maven)"
exit 0
