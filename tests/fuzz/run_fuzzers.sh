#!/usr/bin/env bash
# Runs every fuzzer for a bounded time, seeded from the corpus and the rule files.
# Crashers are kept as regression inputs in tests/fuzz/regressions/<fuzzer>/.
# usage: run_fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
BUILD=$1
SECS=${2:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/ncclscan_fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lines" "$WORK/yaml" "$WORK/json" "$WORK/fr"
# Seeds: lines of corpus logs in small batches; rule files; docker lines.
find "$ROOT/corpus" -type f ! -name '*.json' ! -name '*.md' ! -name '*.gz' ! -name '*.zst' | sort | sed -n '1,200p' |
  while read -r f; do split -l 20 -a 4 "$f" "$WORK/lines/$(basename "$f")."; done
cp "$ROOT"/rules/*.yaml "$WORK/yaml/"
printf '"gpu-a17:1:1 [3] NCCL INFO Using network IB\\n","stream":"stdout","time":"2024-11-22T10:15:32.1Z"}' >"$WORK/json/a"
# Flight Recorder dumps (pickle and JSON) of the corpus, named by case.
for f in "$ROOT"/corpus/fr-*/nccl_trace_rank_*; do
  if [ -f "$f" ]; then cp "$f" "$WORK/fr/$(basename "$(dirname "$f")")-$(basename "$f")"; fi
done
# Partial bodies: the bytes inside the zstd frame of partials of a few corpus
# cases (magic and version varint first: 18 bytes), made by the fuzzed build's
# own engine through the ncclscan binary beside the fuzzers.
mkdir -p "$WORK/partial"
for c in case-torch-oom-rank3-torchrun real-dev-shm-exhausted-2node-socket fr-missing-rank-text-oom \
  cons-coll-count-mismatch-4r real-h1-nccl-1634-net-plugin-on-some-nodes; do
  "$BUILD/cli/ncclscan" partial -o "$WORK/$c.partial" "$ROOT/corpus/$c" &&
    tail -c +19 "$WORK/$c.partial" | zstd -dq >"$WORK/partial/$c"
done
status=0
# determinism_fuzz scans each input at -j1, at -j4 and as one partial per file
# merged (tests/differential.h): any difference in the JSON is a crash. Its seeds
# are the corpus lines, as line_parser_fuzz's.
for f in line_parser_fuzz:lines docker_json_fuzz:json rule_loader_fuzz:yaml flight_recorder_fuzz:fr partial_fuzz:partial determinism_fuzz:lines; do
  name=${f%%:*}
  seeds=$WORK/${f##*:}
  reg="$ROOT/tests/fuzz/regressions/$name"
  mkdir -p "$WORK/out-$name"
  args=("$WORK/out-$name" "$seeds")
  [ -d "$reg" ] && args+=("$reg")
  echo "-- $name for ${SECS}s"
  if ! "$BUILD/tests/fuzz/$name" -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$WORK/" -print_final_stats=1 "${args[@]}" 2>"$WORK/$name.log"; then
    status=1
    tail -40 "$WORK/$name.log"
    mkdir -p "$reg"
    cp "$WORK"/crash-* "$WORK"/leak-* "$WORK"/timeout-* "$reg/" 2>/dev/null || true
  fi
  grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "$WORK/$name.log" | tail -2
done
exit $status
