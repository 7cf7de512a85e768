#!/usr/bin/env bash
# A long fault-injection soak (the build runs a 90 s one): 64 bulk sessions at a time on the
# simulated fabric with connection resets, receiver-not-ready, delayed completions and failed
# registrations, every message checked, leaks checked at the end (bundles/bulk SoakTest).
#
#   tools/soak.sh [seconds] [sessions] [seed]        default: 3600 64 20261121
#
# Progress every 15 s and the final figures go to
# bundles/bulk/target/surefire-reports/org.smbdirect.bulk.internal.SoakTest-output.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-3600}; sessions=${2:-64}; seed=${3:-20261121}
mvn -B -pl bundles/bulk -am verify -Dtest=SoakTest -Dsurefire.failIfNoSpecifiedTests=false -DskipITs -DskipFuzz \
    -Dsoak.seconds="$seconds" -Dsoak.sessions="$sessions" -Dsoak.seed="$seed"
grep '^soak' bundles/bulk/target/surefire-reports/org.smbdirect.bulk.internal.SoakTest-output.txt | tail -1
