#!/usr/bin/env bash
# Runs the benchmarks (short version, under 10 minutes on 2 cores) and prints one table:
# figure, ours, baseline, ratio, goal. Pass --long for the long version.
set -euo pipefail
cd "$(dirname "$0")/../.."
mvn -B -q -pl bundles/bench -am package -DskipTests
exec java -cp "bundles/bench/target/classes:bundles/bench/target/lib/*" org.smbdirect.bench.BenchMain "$@"
