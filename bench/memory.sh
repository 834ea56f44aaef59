#!/usr/bin/env bash
# ncclscan memory benchmark: peak RSS and wall time on inputs whose *content*, not
# size, drives memory: one million distinct processes, one million distinct ranks,
# 200,000 communicators, each plain and zstd-compressed; then peak RSS at -j1, -j2
# and -j16 on one ~300 MB simulated job (bench/simulate.cc, as bench/run.sh).
#
# usage: bench/memory.sh [BUILD_DIR]
#   env: PROCS=1000000 RANKS=1000000 COMMS=200000 SIM_MB=300 (0: no -j runs) VMEM_KB=4194304
#        TIMEOUT_S=900 BENCH_DIR=(a new temporary directory, removed at the end)
# Every run is `ncclscan --format json --fail-on never INPUT` under /usr/bin/time, in a
# subshell with `ulimit -v $VMEM_KB` (4 GiB) and a timeout, so that a runaway run ends
# in its own bad_alloc instead of taking the machine; a failed run is a row of the
# table with its exit status and first error line, and the table goes on.
set -uo pipefail
BUILD=${1:-build}
NS=$(readlink -f "$BUILD/cli/ncclscan")
SIM=$(readlink -f "$BUILD/bench/ncclscan_simulate")
PROCS=${PROCS:-1000000}
RANKS=${RANKS:-1000000}
COMMS=${COMMS:-200000}
SIM_MB=${SIM_MB:-300}
VMEM_KB=${VMEM_KB:-4194304}
TIMEOUT_S=${TIMEOUT_S:-900}
for t in "$NS" "$SIM"; do [ -x "$t" ] || { echo "missing $t: build first (bash .ci/setup.sh)"; exit 2; }; done
[ -x /usr/bin/time ] || { echo "/usr/bin/time missing: apt-get install time"; exit 2; }
HAVE_ZSTD=1
command -v zstd >/dev/null || HAVE_ZSTD=0
if [ -n "${BENCH_DIR:-}" ]; then
  D=$BENCH_DIR
  mkdir -p "$D"
else
  D=$(mktemp -d /tmp/ncclscan-memory.XXXXXX)
  trap 'rm -rf "$D"' EXIT
fi

# The inputs. Each line is one the scanner attributes to a subject of its own:
# - procs: an NCCL header with a distinct host per line (host:pid is the subject);
# - ranks: PyTorch's ProcessGroupNCCL options line, which a rule matches, with a
#   distinct global rank in its [rankN]: prefix (the rank becomes the subject);
# - comms: Init COMPLETE lines of one process, each with its own comm pointer and
#   commId (nranks 1, so no communicator is incomplete).
gen() {
  case $1 in
    procs) awk -v n="$PROCS" 'BEGIN { for (i = 0; i < n; i++) printf "h%d:1:1 [0] NCCL INFO x\n", i }' ;;
    ranks) awk -v n="$RANKS" 'BEGIN { for (i = 0; i < n; i++)
             printf "[rank%d]:[I1122 09:41:02.000000000 ProcessGroupNCCL.cpp:940] ProcessGroupNCCL initialization options: size: %d, global rank: %d, TIMEOUT(ms): 600000\n", i, n, i }' ;;
    comms) awk -v n="$COMMS" 'BEGIN { for (i = 1; i <= n; i++)
             printf "h0:1:1 [0] NCCL INFO comm 0x55aa%08x rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x%08x%08x - Init COMPLETE\n", i, i * 7919 % 2147483647, i }' ;;
  esac
}

# measure LABEL JOBS INPUT: one table row.
measure() {
  local label=$1 jobs=$2 in=$3 rc wall kb size err
  size=$(du -sb "$in" | cut -f1)
  (
    ulimit -v "$VMEM_KB"
    exec timeout "$TIMEOUT_S" /usr/bin/time -f '%e %M' -o "$D/time" "$NS" --format json --fail-on never -j "$jobs" "$in" \
      >"$D/out.json" 2>"$D/err"
  )
  rc=$?
  read -r wall kb < <(tail -1 "$D/time" 2>/dev/null)
  # What the report saw: the distinct subjects the input was made of.
  local seen=-
  if [ "$rc" = 0 ]; then
    seen=$(python3 -c '
import json, sys
i = json.load(open(sys.argv[1]))["input"]
print("%d hosts, %d ranks, %d comms" % (len(i["hosts"]), i["ranks"]["count"], len(i.get("communicators", []))))' "$D/out.json" 2>/dev/null || echo "?")
  fi
  err=""
  if [ "$rc" != 0 ]; then
    err=$(grep -m1 -v '^Command' "$D/err" | cut -c1-60)
    [ "$rc" = 124 ] && err="timed out after ${TIMEOUT_S}s"
  fi
  printf '%-14s %4s %10s %9s %9s %6s  %s\n' "$label" "-j$jobs" \
    "$(awk -v b="$size" 'BEGIN { if (b >= 1e6) printf "%.1f MB", b / 1e6; else printf "%.0f KB", b / 1e3 }')" \
    "$(awk -v k="${kb:-0}" 'BEGIN { printf "%.0f MiB", k / 1024 }')" "${wall:-?} s" "$rc" "${err:-$seen}"
  rm -f "$D/out.json" "$D/time"
}

echo "ncclscan memory benchmark: $(date -u +%F), $(nproc) cores, ncclscan $("$NS" --version 2>/dev/null | head -1)"
echo "each run: ncclscan --format json --fail-on never -j N INPUT, ulimit -v $VMEM_KB KiB, timeout ${TIMEOUT_S}s"
printf '%-14s %4s %10s %9s %9s %6s  %s\n' input jobs size "peak RSS" wall status "seen in the report (or the error)"
JOBS=$(nproc)
for kind in procs ranks comms; do
  gen "$kind" >"$D/$kind.log"
  n=$(wc -l <"$D/$kind.log")
  measure "$kind $(awk -v n="$n" 'BEGIN { if (n >= 1e6) printf "%gM", n / 1e6; else printf "%gk", n / 1e3 }')" "$JOBS" "$D/$kind.log"
  if [ "$HAVE_ZSTD" = 1 ]; then
    zstd -q --rm -T0 "$D/$kind.log" -o "$D/$kind.log.zst"
    measure "$kind.zst" "$JOBS" "$D/$kind.log.zst"
    rm -f "$D/$kind.log.zst"
  else
    echo "$kind.zst: skipped (no zstd command)"
    rm -f "$D/$kind.log"
  fi
done

[ "$SIM_MB" = 0 ] && exit 0
"$SIM" --out "$D/sim" --ranks 64 --hosts 8 --size-mb "$SIM_MB" --fault divergent_rank --culprit 13 --seed 1 >/dev/null 2>&1 ||
  { echo "ncclscan_simulate failed"; exit 1; }
find "$D/sim" -type f -name '*.log' -exec cat {} + >/dev/null  # warm the page cache
for j in 1 2 16; do measure "sim ${SIM_MB}MB" "$j" "$D/sim"; done
