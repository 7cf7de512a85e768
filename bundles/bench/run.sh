#!/usr/bin/env bash
# Runs the benchmarks (short version, under 10 minutes on 2 cores) and prints one table:
# figure, ours, baseline, ratio, goal. Pass --long for the long version. MAVEN_ARGS (Maven 3.9
# reads it too) adds options to the build, e.g. MAVEN_ARGS="-o -Dmaven.repo.local=/path".
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck disable=SC2086
mvn -B -q ${MAVEN_ARGS:-} -pl bundles/bench -am package -DskipTests
exec java -cp "bundles/bench/target/classes:bundles/bench/target/lib/*" org.smbdirect.bench.BenchMain "$@"
