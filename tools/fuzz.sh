#!/usr/bin/env bash
# Long fuzzing runs with Jazzer's standalone runner (the build itself fuzzes each target for 40 s).
#
#   tools/fuzz.sh <target> <seconds>
#
# targets: wire    - every wire decoder of the protocol bundle (WireDecoderFuzzTest)
#          engine  - the engine's receive path through the sim provider, both roles (EngineFuzzTest)
#          bulk    - the bulk layer's control-message decoder (ControlMessageFuzzTest)
# Findings are written to target/fuzz/<target>/; copy one into the fuzz test's Inputs directory
# under src/test/resources to keep it as a regression test once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: wire, engine or bulk}; seconds=${2:-3600}
case $target in
  wire)   module=bundles/protocol; class=org.smbdirect.protocol.wire.internal.WireDecoderFuzzTest ;;
  engine) module=bundles/protocol; class=org.smbdirect.protocol.internal.EngineFuzzTest ;;
  bulk)   module=bundles/bulk;     class=org.smbdirect.bulk.internal.ControlMessageFuzzTest ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
mvn -B -q -pl "$module" -am package -DskipTests dependency:build-classpath \
    -Dmdep.includeScope=test -Dmdep.outputFile=target/fuzz.classpath
out="target/fuzz/$target"; mkdir -p "$out/corpus"
seeds="$module/src/test/resources/$(echo "$class" | tr . /)Inputs"
cp -r "$seeds"/*/* "$out/corpus/" 2>/dev/null || true
exec java -Xmx2g -XX:MaxDirectMemorySize=2g -cp "$module/target/test-classes:$module/target/classes:$(cat "$module/target/fuzz.classpath")" \
    com.code_intelligence.jazzer.Jazzer --target_class="$class" --reproducer_path="$out" \
    -artifact_prefix="$out/" -max_total_time="$seconds" -print_final_stats=1 "$out/corpus"
