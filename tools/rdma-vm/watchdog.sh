#!/usr/bin/env bash
# watchdog.sh - sourced by the guest suites: run_watched SECONDS OUT_DIR COMMAND... runs a JVM
# command and, when it has not ended after SECONDS, has it print its threads (SIGQUIT: the JVM
# writes a thread dump to its standard output), keeps the kernel log's end in
# OUT_DIR/dmesg-at-hang.txt, and kills it (status 124). A hung test then says where it hung
# instead of ending in the guest's timeout with nothing to read.
run_watched() {
  local limit=${1:?usage: run_watched SECONDS OUT_DIR COMMAND...} out=${2:?out dir}
  shift 2
  "$@" &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$limit" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "watchdog: still running after $limit s: thread dump, kernel log in $out/dmesg-at-hang.txt, then killed" >&2
    kill -QUIT "$pid" 2>/dev/null
    sleep 5
    dmesg 2>&1 | tail -n 200 > "$out/dmesg-at-hang.txt"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    return 124
  fi
  wait "$pid"
}
