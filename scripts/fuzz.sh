#!/usr/bin/env bash
# Builds and runs a libFuzzer target for a number of seconds: scripts/fuzz.sh decoder|rules [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz.sh decoder|rules [SECONDS]}
seconds=${2:-60}
case "$target" in
  decoder) modules="MobilityModel"; file=fuzz/DecoderFuzz.swift ;;
  rules) modules="MobilityModel RuleLanguage"; file=fuzz/RulesFuzz.swift ;;
  *) echo "unknown target $target" >&2; exit 2 ;;
esac
build=.build-fuzz
for m in $modules; do
  swift build --build-path "$build" --target "$m" -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library >/dev/null
done
objects=("$build"/debug/CSimdJSON.build/*.o)   # MobilityModel's C++ shim over libsimdjson
for m in $modules; do objects+=("$build"/debug/"$m".build/*.o); done
swiftc -sanitize=fuzzer,address -parse-as-library -I "$build/debug/Modules" -Xcc -fmodule-map-file="$build/debug/CSimdJSON.build/module.modulemap" \
  -Xcc -I -Xcc Sources/CSimdJSON/include "$file" "${objects[@]}" -lsimdjson -lstdc++ -o "$build/fuzz-$target" 2>&1 | grep -v "warning: Cannot export local symbol" || true
mkdir -p fuzz/crashes "$build/corpus-$target"
"$build/fuzz-$target" "$build/corpus-$target" "fuzz/corpus/$target" -max_total_time="$seconds" -max_len=4096 \
  -artifact_prefix=fuzz/crashes/ -print_final_stats=1 2>&1 | grep -E "^(#|Done|stat::number_of_executed_units|stat::peak_rss|==|SUMMARY|.*ERROR)" | tail -15
