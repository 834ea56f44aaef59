#!/usr/bin/env bash
# ncclscan benchmark: whole-process wall time against ripgrep and GNU grep on the
# same files, in one run, interleaved, several repetitions; peak RSS; scaling
# with cores and input size.
#
# usage: bench/run.sh [BUILD_DIR]     (env: SIZE_MB=1024 REPS=5 SCALING=1 SHAPES=1 BENCH_DIR=/tmp/ncclscan-bench)
# The input is a simulated 64-rank / 8-host job (bench/simulate.cc): most lines
# are NCCL INFO COLL lines and application output, with init, env, transport and
# watchdog lines, and one divergent rank.
set -euo pipefail
BUILD=${1:-build}
NS=$BUILD/cli/ncclscan
SIM=$BUILD/bench/ncclscan_simulate
SIZE_MB=${SIZE_MB:-1024}
REPS=${REPS:-5}
SCALING=${SCALING:-1}
SHAPES=${SHAPES:-1}
DIR=${BENCH_DIR:-/tmp/ncclscan-bench}
CORES=$(nproc)
for t in "$NS" "$SIM"; do [ -x "$t" ] || { echo "missing $t: build first (bash .ci/setup.sh)"; exit 2; }; done
command -v rg >/dev/null || { echo "ripgrep missing: apt-get install ripgrep"; exit 2; }

# Patterns comparable to the rule set's prefilter literals (one per rule family).
RG_PATTERNS=(-e 'opCount [0-9a-f]+' -e 'NCCL WARN' -e 'Watchdog caught collective' -e 'Using network'
  -e 'Init (START|COMPLETE)' -e 'via (NET|P2P|SHM)/' -e 'set by environment to' -e 'NCCL version'
  -e 'last completed' -e 'GPU Direct RDMA' -e 'Connection closed' -e 'Got completion' -e 'Cuda failure'
  -e 'cudaDriverVersion' -e 'Bootstrap ?: Using' -e 'coll channels' -e 'ChildFailedError' -e 'exitcode')

# The same patterns as one ERE alternation for GNU grep.
pats=()
for ((i = 1; i < ${#RG_PATTERNS[@]}; i += 2)); do pats+=("${RG_PATTERNS[i]}"); done
GREP_RE=$(IFS='|'; echo "${pats[*]}")

gen() {  # gen DIR SIZE_MB
  if [ ! -f "$1/.size_$2" ]; then
    rm -rf "$1"
    "$SIM" --out "$1" --ranks 64 --hosts 8 --size-mb "$2" --fault divergent_rank --culprit 13 --seed 1 >/dev/null
    touch "$1/.size_$2"
  fi
  find "$1" -type f -name '*.log' -exec cat {} + >/dev/null  # warm the page cache
}

# time_cmd OUTFILE CMD... -> appends "seconds maxrss_kb" to OUTFILE
time_cmd() {
  local out=$1
  shift
  # Output goes to a file, not /dev/null: GNU grep stops at the first match when
  # it sees /dev/null as its output, which would time nothing.
  /usr/bin/time -f '%e %M' -o "$out.one" "$@" >"$out.stdout" 2>&1 || true
  tail -1 "$out.one" >>"$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
max_col2() { awk 'BEGIN{m=0} {if ($2>m) m=$2} END{print m}'; }

run_set() {  # run_set LABEL DIR JOBS REPS -> prints a result line
  local label=$1 d=$2 jobs=$3 reps=$4 tmp
  tmp=$(mktemp -d)
  # ncclscan and rg alternate which goes first, so that neither always runs
  # right after grep's long run (or after the other).
  for i in $(seq "$reps"); do
    if [ "$label" = main ]; then time_cmd "$tmp/grep" grep -rcE "$GREP_RE" "$d"; fi
    if [ $((i % 2)) = 1 ]; then
      time_cmd "$tmp/ns" "$NS" --format json -j "$jobs" --fail-on never "$d"
      time_cmd "$tmp/rg" rg -c -z -j "$jobs" "${RG_PATTERNS[@]}" "$d"
    else
      time_cmd "$tmp/rg" rg -c -z -j "$jobs" "${RG_PATTERNS[@]}" "$d"
      time_cmd "$tmp/ns" "$NS" --format json -j "$jobs" --fail-on never "$d"
    fi
  done
  local bytes lines ns rg ratio
  # What the tools read: the logs' own bytes and lines (a .zst's decompressed).
  bytes=$(find "$d" -type f \( -name '*.log' -o -name '*.log.zst' \) -exec zstdcat -f {} + | wc -c)
  lines=$(find "$d" -type f \( -name '*.log' -o -name '*.log.zst' \) -exec zstdcat -f {} + | wc -l)
  ns=$(cut -d' ' -f1 "$tmp/ns" | median)
  rg=$(cut -d' ' -f1 "$tmp/rg" | median)
  ratio=$(awk -v a="$ns" -v b="$rg" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')
  printf '%-8s %7.0f MB  -j%-2s  ncclscan %6.2f s (%5.2f GB/s, %5.1f M lines/s, peak RSS %4.0f MiB)  rg %6.2f s  ratio %s' \
    "$label" "$(awk -v b="$bytes" 'BEGIN{print b/1e6}')" "$jobs" "$ns" \
    "$(awk -v b="$bytes" -v t="$ns" 'BEGIN{print (t>0? b/t/1e9 : 0)}')" \
    "$(awk -v l="$lines" -v t="$ns" 'BEGIN{print (t>0? l/t/1e6 : 0)}')" \
    "$(max_col2 <"$tmp/ns" | awk '{print $1/1024}')" "$rg" "$ratio"
  if [ -f "$tmp/grep" ]; then printf '  grep %6.2f s' "$(cut -d' ' -f1 "$tmp/grep" | median)"; fi
  echo
  rm -rf "$tmp"
}

# The determinism property on the bench input: the JSON at -j1, -j2 and -j8 is
# byte-identical (a failure ends the run with status 1).
same_json() {  # same_json LABEL DIR
  local h1 h2 h8
  h1=$("$NS" --format json -j 1 --fail-on never "$2" | sha256sum)
  h2=$("$NS" --format json -j 2 --fail-on never "$2" | sha256sum)
  h8=$("$NS" --format json -j 8 --fail-on never "$2" | sha256sum)
  if [ "$h1" = "$h2" ] && [ "$h1" = "$h8" ]; then
    echo "$1: JSON byte-identical at -j1/-j2/-j8 (${h1:0:16})"
  else
    echo "$1: JSON DIFFERS between -j1/-j2/-j8"
    DETERMINISM_FAILED=1
  fi
}
DETERMINISM_FAILED=0

# ncclscan redact (a copy safe to share) against the scan of the same input, in
# one run: its throughput must stay at least half the scan's (ratio <= 2).
redact_set() {  # redact_set DIR JOBS REPS
  local d=$1 jobs=$2 reps=$3 tmp ns rd
  tmp=$(mktemp -d)
  for _ in $(seq "$reps"); do
    time_cmd "$tmp/ns" "$NS" --format json -j "$jobs" --fail-on never "$d"
    rm -rf "$tmp/out"
    time_cmd "$tmp/rd" "$NS" redact -q -j "$jobs" --key bench -o "$tmp/out" "$d"
  done
  ns=$(cut -d' ' -f1 "$tmp/ns" | median)
  rd=$(cut -d' ' -f1 "$tmp/rd" | median)
  printf 'redact   -j%-2s  ncclscan redact %6.2f s  scan %6.2f s  ratio %s (<= 2: at least half the scan'"'"'s throughput)\n' \
    "$jobs" "$rd" "$ns" "$(awk -v a="$rd" -v b="$ns" 'BEGIN {printf "%.2f", (b > 0 ? a / b : 0)}')"
  rm -rf "$tmp"
}

echo "ncclscan benchmark: $(date -u +%F), $CORES cores, $REPS repetitions (medians), input: simulated 64 ranks / 8 hosts"
gen "$DIR/x1" "$SIZE_MB"
run_set main "$DIR/x1" "$CORES" "$REPS"
same_json main "$DIR/x1"
redact_set "$DIR/x1" "$CORES" "$REPS"
if [ "$SHAPES" = 1 ]; then
  # The shapes users bring, each against rg -c -z on the same bytes in the same run:
  # one `srun -l` file with every rank interleaved (the same simulated job, seed and
  # size), a WARN storm (an IB error storm on every rank), the per-rank files
  # zstd-compressed, the real posted logs of the corpus concatenated (every line
  # an interesting one), and a wide job (2048 ranks interleaved).
  echo "-- shapes"
  sh_dir=$DIR/shapes-$SIZE_MB
  if [ ! -f "$sh_dir/.done" ]; then
    rm -rf "$sh_dir"
    mkdir -p "$sh_dir"
    "$SIM" --out "$sh_dir/srun" --ranks 64 --hosts 8 --size-mb "$SIZE_MB" --fault divergent_rank --culprit 13 --seed 1 \
      --layout interleaved --wrapper srun >/dev/null
    "$SIM" --out "$sh_dir/storm" --ranks 64 --hosts 8 --size-mb "$SIZE_MB" --fault ib_error_storm --seed 1 >/dev/null
    mkdir -p "$sh_dir/zst"
    (cd "$DIR/x1" && find . -name '*.log' -print0 | while IFS= read -r -d '' f; do
      mkdir -p "$sh_dir/zst/$(dirname "$f")" && zstd -q -3 -o "$sh_dir/zst/$f.zst" "$f"; done)
    mkdir -p "$sh_dir/real"
    real_mb=$((SIZE_MB / 4))
    here=$(cd "$(dirname "$0")/.." && pwd)
    while [ "$(du -sm "$sh_dir/real" | cut -f1)" -lt "$real_mb" ]; do
      find "$here/corpus" -name '*.log' -path '*incidents*' -o -name '*.log' -path '*real-*' | sort |
        xargs cat >>"$sh_dir/real/real.log"
    done
    touch "$sh_dir/.done"
  fi
  if [ ! -f "$sh_dir/wide/.done" ]; then
    # A wide job: 2048 ranks on 256 hosts in one srun -l file (per-rank state and
    # cross-rank checks that grow with the rank count show here, not at 64).
    rm -rf "$sh_dir/wide"
    "$SIM" --out "$sh_dir/wide" --ranks 2048 --hosts 256 --size-mb $((SIZE_MB / 4)) --fault divergent_rank --culprit 13 \
      --seed 1 --layout interleaved --wrapper srun >/dev/null
    touch "$sh_dir/wide/.done"
  fi
  for shape in srun storm zst real wide; do run_set "$shape" "$sh_dir/$shape" "$CORES" "$REPS"; done
fi
if [ "$SCALING" = 1 ]; then
  echo "-- scaling with cores"
  run_set cores "$DIR/x1" 1 3
  [ "$CORES" -gt 1 ] && run_set cores "$DIR/x1" "$CORES" 3
  echo "-- scaling with input size"
  q=$((SIZE_MB / 4))
  gen "$DIR/x025" "$q"
  run_set size "$DIR/x025" "$CORES" 3
  run_set size "$DIR/x1" "$CORES" 3
  gen "$DIR/x4" $((SIZE_MB * 4))
  run_set size "$DIR/x4" "$CORES" 1
  rm -rf "$DIR/x4" "$DIR/x025"
fi
exit "$DETERMINISM_FAILED"
