#!/usr/bin/env bash
# Builds and runs a libFuzzer target for a number of seconds: scripts/fuzz.sh decoder|rules [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh decoder|rules [SECONDS]}
seconds=${2:-60}
case "$target" in
  decoder) modules="MobilityModel MobilityWire"; file=fuzz/DecoderFuzz.swift ;;
  rules) modules="MobilityModel RuleLanguage"; file=fuzz/RulesFuzz.swift ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
build=.build-fuzz
for m in $modules; do
  swift build --build-path "$build" --target "$m" -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library >/dev/null
done
objects=() link=()
# Each module's objects by its current sources (a stale object of a moved file would be linked too).
for m in $modules; do for f in Sources/"$m"/*.swift; do objects+=("$build/debug/$m.build/$(basename "$f").o"); done; done
# Only the decoder links C++: MobilityWire's shim over libsimdjson. The rules front end is pure Swift.
if [ "$target" = decoder ]; then
  objects+=("$build"/debug/CSimdJSON.build/*.o)
  link=(-Xcc -fmodule-map-file="$build/debug/CSimdJSON.build/module.modulemap" -Xcc -I -Xcc Sources/CSimdJSON/include -lsimdjson -lstdc++)
fi
# The modules' declarations are `package`: the harness joins the package under the name SwiftPM
# gave it (the checkout directory's name, as SwiftPM derives a root package's identity).
package_name=$(grep -o 'package-name","[^"]*"' "$build/debug.yaml" | head -1 | cut -d'"' -f3)
[ -n "$package_name" ] || { echo "fuzz.sh: no -package-name in $build/debug.yaml" >&2; exit 1; }
swiftc -sanitize=fuzzer,address -parse-as-library -package-name "$package_name" -I "$build/debug/Modules" "${link[@]}" \
  "$file" "${objects[@]}" -o "$build/fuzz-$target" 2>&1 | grep -v "warning: Cannot export local symbol" || true
# Seeds: the decoder's hand-written payloads in fuzz/corpus/decoder; for the rules, the shipped
# rule pack and the diagnostic golden cases themselves (gathered here, so there are no copies to drift).
seeds="$build/seeds-$target"
rm -rf "$seeds" && mkdir -p fuzz/crashes "$build/corpus-$target" "$seeds"
case "$target" in
  decoder) cp fuzz/corpus/decoder/* "$seeds"/ ;;
  rules) cp rules/*.rules Tests/RuleLanguageTests/Golden/*.rules "$seeds"/ ;;
esac
"$build/fuzz-$target" "$build/corpus-$target" "$seeds" -max_total_time="$seconds" -max_len=4096 \
  -artifact_prefix=fuzz/crashes/ -print_final_stats=1 ${FUZZ_SEED:+-seed=$FUZZ_SEED} 2>&1 | grep -E "^(#|Done|stat::number_of_executed_units|stat::peak_rss|==|SUMMARY|.*ERROR)" | tail -15
