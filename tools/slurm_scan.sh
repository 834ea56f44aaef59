#!/usr/bin/env bash
#SBATCH --job-name=ncclscan
#SBATCH --output=ncclscan-%j.out
# Scans a very large job's logs with the cluster's own scheduler: every Slurm task
# writes the scan state of its share of the logs to a partial on shared storage
# (`ncclscan partial`), then one `ncclscan merge` prints the diagnosis a single
# `ncclscan INPUT...` would. docs/scaling.md explains the recipe.
#
# usage, as a batch script or inside an allocation (the task count is the job's):
#   sbatch -N 16 --ntasks-per-node=1 tools/slurm_scan.sh [OPTIONS] INPUT...
#   salloc -N 16 --ntasks-per-node=1 tools/slurm_scan.sh [OPTIONS] INPUT...
#   sbatch -n 32 tools/slurm_scan.sh [OPTIONS] INPUT...     (tasks anywhere)
#
# options:
#   --partials DIR   where the partials go, on storage every node sees (default:
#                    ./ncclscan-partials.$SLURM_JOB_ID); must hold no partials yet
#   --local          every task scans INPUT... as its own node sees them (node-local
#                    logs; run one task per node). Default: the files under INPUT...
#                    are listed once here, sorted, and cut into one contiguous share
#                    of about equal bytes per task
#   --name GLOB      share mode: list only files whose name matches GLOB (find -name;
#                    repeatable, any may match)
#   --ncclscan PATH  the ncclscan binary, reachable from every node (default: on PATH)
#   --format F       the report's format: text, json or markdown (default text)
#   -o, --output FILE
#                    write the report to FILE (default: standard output, which is the
#                    job's output file under sbatch)
#   --scan-flag ARG  an argument given to both `partial` and `merge` (repeatable; for
#                    flags that change what is matched: --scan-flag --rules
#                    --scan-flag site-rules/, --scan-flag --disable --scan-flag ID)
#   --merge-flag ARG an argument given to `merge` only (repeatable: --fail-on, --job-id)
#   --batch-bytes N  a task scans its files in batches of at most N bytes of names, one
#                    partial each (default 262144, under any ARG_MAX)
#   -h, --help       this text
#
# Share mode names each file explicitly, and ncclscan reads a file it is given by name
# even where a directory walk would skip it (prose markdown, non-log JSON, binaries): the
# merged diagnosis is exactly that of `ncclscan $(cat DIR/files.list)`, which for a log
# directory is that of `ncclscan INPUT...`; narrow the listing with --name where a log
# directory holds other files.
#
# Exit status: merge's (0 nothing at or above --fail-on, 1 findings at or above it);
# 2 on a usage error, a failed task or a failed merge.
set -uo pipefail

die() {
  echo "slurm_scan: error: $*" >&2
  exit 2
}
usage() { sed -n '/^# usage/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' | sed '$d'; }

# One Slurm task: scans its files into one partial or more (several when the share's
# file names would not fit on one command line: merge takes any grouping). It runs
# from this function's text (declare -f), not from this file: sbatch runs a copy of
# the script that exists only on the batch node.
#   slurm_scan_task MODE PARTIALS NCCLSCAN JOBS BATCH_BYTES NFLAGS FLAG... [INPUT...]
slurm_scan_task() {
  local mode=$1 dir=$2 ns=$3 jobs=$4 batch_bytes=$5 nflags=$6
  shift 6
  local flags=("${@:1:nflags}")
  shift "$nflags"
  local id=${SLURM_PROCID:?not a Slurm task (no SLURM_PROCID)}
  local tag
  tag=$(printf 'part-%06d' "$id")
  local files=()
  if [ "$mode" = local ]; then
    [ $# -gt 0 ] || { echo "task $id: no input" >&2; return 2; }
    # Node-local logs share path names across nodes: the host goes into the tag.
    tag="$tag-$(hostname -s)"
    files=("$@")
  else
    [ -f "$dir/share-$id.list" ] || { echo "task $id: $dir/share-$id.list missing" >&2; return 2; }
    mapfile -d '' files <"$dir/share-$id.list"
  fi
  if [ ${#files[@]} = 0 ]; then
    echo "task $id on $(hostname -s): no files in its share" >&2
    : >"$dir/$tag.done"
    return 0
  fi
  local jflag=()
  [ "$jobs" != 0 ] && jflag=(-j "$jobs")
  # Batches of file names of at most BATCH_BYTES (256 KiB; ARG_MAX is 2 MiB or more).
  local batch=() bytes=0 n=0 f
  run_batch() {
    local out
    out=$(printf '%s-%04d.partial' "$tag" "$n")
    "$ns" partial "${jflag[@]}" "${flags[@]}" -o "$dir/$out.tmp" "${batch[@]}" </dev/null ||
      { echo "task $id: ncclscan partial failed ($?) on ${#batch[@]} files" >&2; return 2; }
    # Renamed only once complete: merge never sees a partial a task is still writing.
    mv -f "$dir/$out.tmp" "$dir/$out" || return 2
    n=$((n + 1))
    batch=()
    bytes=0
  }
  for f in "${files[@]}"; do
    if [ ${#batch[@]} -gt 0 ] && [ $((bytes + ${#f} + 1)) -gt "$batch_bytes" ]; then run_batch || return 2; fi
    batch+=("$f")
    bytes=$((bytes + ${#f} + 1))
  done
  run_batch || return 2
  : >"$dir/$tag.done"
}

# Cuts the sorted, NUL-separated list "size<TAB>path" on stdin into NTASKS contiguous
# shares of about equal bytes: a file goes to the task whose byte range holds its
# middle byte (whole files only; contiguous, so a host's logs stay together).
write_shares() {
  local dir=$1 ntasks=$2 total=0 i=0 rec size path k
  local sizes=() paths=()
  while IFS= read -r -d '' rec; do
    # In KiB, rounded up: (2 * bytes before) * tasks stays far below 2^63 for a
    # petabyte over 100,000 tasks.
    size=${rec%%$'\t'*}
    size=$(((size + 1023) / 1024))
    path=${rec#*$'\t'}
    sizes+=("$size")
    paths+=("$path")
    total=$((total + size))
  done
  for ((k = 0; k < ntasks; k++)); do : >"$dir/share-$k.list"; done
  local before=0 count=${#paths[@]}
  for ((i = 0; i < count; i++)); do
    if [ "$total" -gt 0 ]; then
      k=$(((2 * before + sizes[i]) * ntasks / (2 * total)))
      [ "$k" -lt "$ntasks" ] || k=$((ntasks - 1))
    else
      k=$((i * ntasks / count))
    fi
    printf '%s\0' "${paths[i]}" >>"$dir/share-$k.list"
    before=$((before + sizes[i]))
  done
  printf '%s\0' "${paths[@]}" | tr '\0' '\n' >"$dir/files.list"
  echo "$count"
}

main() {
  local dir="" mode=share ns=ncclscan format=text output="" names=() scan_flags=() merge_flags=() batch_bytes=262144
  while [ $# -gt 0 ]; do
    case $1 in
      --partials) dir=${2:?--partials needs a directory}; shift 2 ;;
      --local) mode=local; shift ;;
      --name) names+=("${2:?--name needs a glob}"); shift 2 ;;
      --ncclscan) ns=${2:?--ncclscan needs a path}; shift 2 ;;
      --format) format=${2:?--format needs text, json or markdown}; shift 2 ;;
      -o | --output) output=${2:?--output needs a file}; shift 2 ;;
      --scan-flag) scan_flags+=("${2?--scan-flag needs an argument}"); shift 2 ;;
      --merge-flag) merge_flags+=("${2?--merge-flag needs an argument}"); shift 2 ;;
      --batch-bytes) batch_bytes=${2:?--batch-bytes needs a number}; shift 2 ;;
      -h | --help) usage; exit 0 ;;
      --) shift; break ;;
      -*) die "unknown option $1 (--help lists them)" ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || die "no INPUT (--help shows the usage)"
  [ -n "${SLURM_JOB_ID:-}" ] || die "not inside a Slurm job: run it with sbatch, or under salloc"
  command -v srun >/dev/null || die "srun not found"
  case $format in text | json | markdown) ;; *) die "--format $format: text, json or markdown" ;; esac
  if [[ $ns == */* ]]; then ns=$(readlink -f "$ns"); else ns=$(command -v "$ns") || die "ncclscan not on PATH (--ncclscan PATH)"; fi
  [ -x "$ns" ] || die "$ns is not executable"

  dir=${dir:-ncclscan-partials.$SLURM_JOB_ID}
  mkdir -p "$dir" || die "cannot create $dir"
  dir=$(readlink -f "$dir")
  if compgen -G "$dir/*.partial" >/dev/null; then die "$dir already holds partials: give a fresh --partials DIR"; fi
  rm -f "$dir"/*.done "$dir"/*.partial.tmp "$dir"/share-*.list "$dir"/probe.*
  # An older ncclscan takes `partial` for a file name (and `--help` for help):
  # only writing a partial of an empty log proves the subcommand is there.
  : >"$dir/probe.log"
  "$ns" partial -o "$dir/probe.partial" "$dir/probe.log" </dev/null >/dev/null 2>&1 && [ -s "$dir/probe.partial" ] ||
    { rm -f "$dir"/probe.*; die "$ns has no partial subcommand (an older ncclscan)"; }
  rm -f "$dir"/probe.*

  # The step's task count: the job's, else one per node.
  local ntasks=${SLURM_NTASKS:-${SLURM_NNODES:-${SLURM_JOB_NUM_NODES:-1}}}
  local srun_args=(--ntasks="$ntasks" --kill-on-bad-exit=0)
  local task_inputs=()
  if [ "$mode" = local ]; then
    local nnodes=${SLURM_NNODES:-${SLURM_JOB_NUM_NODES:-1}}
    ntasks=$nnodes
    srun_args=(--nodes="$nnodes" --ntasks="$nnodes" --ntasks-per-node=1 --kill-on-bad-exit=0)
    task_inputs=("$@")
    echo "slurm_scan: $ntasks tasks, one per node, each scanning its node's $*" >&2
  else
    local name_args=() g
    for g in "${names[@]}"; do
      [ ${#name_args[@]} -gt 0 ] && name_args+=(-o)
      name_args+=(-name "$g")
    done
    [ ${#name_args[@]} -gt 0 ] && name_args=('(' "${name_args[@]}" ')')
    local count
    # Sorted by path in bytes (LC_ALL=C), the order a directory scan reads them in.
    count=$(find -L "$@" -type f "${name_args[@]}" -printf '%s\t%p\0' | LC_ALL=C sort -z -t $'\t' -k2 |
      write_shares "$dir" "$ntasks") || die "listing $* failed"
    [ "$count" -gt 0 ] || die "no files under $*"
    echo "slurm_scan: $count files in $ntasks shares (lists in $dir/share-*.list)" >&2
  fi

  local jobs=${SLURM_CPUS_PER_TASK:-0}
  srun "${srun_args[@]}" bash -c "$(declare -f slurm_scan_task); slurm_scan_task \"\$@\"" slurm_scan_task \
    "$mode" "$dir" "$ns" "$jobs" "$batch_bytes" "${#scan_flags[@]}" "${scan_flags[@]}" "${task_inputs[@]}"
  local rc=$?
  local done_count
  done_count=$(compgen -G "$dir/*.done" | wc -l)
  if [ "$rc" != 0 ] || [ "$done_count" -lt "$ntasks" ]; then
    die "srun exited $rc, $done_count of $ntasks tasks finished: no merge (partials kept in $dir)"
  fi
  local partials=()
  mapfile -t partials < <(compgen -G "$dir/*.partial" | LC_ALL=C sort)
  [ ${#partials[@]} -gt 0 ] || die "no partial written in $dir"
  echo "slurm_scan: merging ${#partials[@]} partials from $dir" >&2
  if [ -n "$output" ]; then
    "$ns" merge --format "$format" "${scan_flags[@]}" "${merge_flags[@]}" "${partials[@]}" >"$output"
  else
    "$ns" merge --format "$format" "${scan_flags[@]}" "${merge_flags[@]}" "${partials[@]}"
  fi
}

main "$@"
