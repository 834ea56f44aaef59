#!/usr/bin/env bash
# The Slurm recipe of docs/scaling.md, run for real: starts munged, slurmctld and
# slurmd on localhost (one node, 2 CPUs, state and logs under a temporary
# directory, free ports, no systemd), checks the plumbing (the node goes idle,
# `srun -N1 -n2` runs two tasks that see SLURM_PROCID / SLURM_NTASKS and each
# write a file), then runs tools/slurm_scan.sh as a batch job (sbatch --wait) and
# under salloc with 2 tasks over a corpus case's logs split between them (and
# once with --local, one task per node scanning the logs it sees), and
# compares the merged JSON with one `ncclscan --format json` over the same logs,
# byte for byte.
#
# usage: slurm_test.sh NCCLSCAN REPO_ROOT
# Exit 0 passed, 1 failed, 77 skipped (CTest SKIP_RETURN_CODE): not root, Slurm
# or munge not installed, the daemons do not start, or ncclscan has no `partial`
# subcommand yet (after the plumbing is checked). The daemons are stopped on
# every exit.
set -u
NS=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
CASE=${SLURM_TEST_CASE:-sim-divergent_rank-perrank-12r3h}
T=$(mktemp -d /tmp/ncclscan_slurm.XXXXXX)
PIDS=()

cleanup() {
  local p
  # scancel first: slurmd then kills its job steps itself.
  [ -f "$T/slurm.conf" ] && SLURM_CONF=$T/slurm.conf timeout 5 scancel --user=root >/dev/null 2>&1
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  for f in "$T"/log/*.log; do
    [ -f "$f" ] && { echo "--- last lines of $f"; tail -15 "$f"; }
  done
  exit 1
}

[ "$(id -u)" = 0 ] || skip "not root (slurmd runs as root to launch tasks)"
for c in munged slurmctld slurmd srun sbatch salloc sinfo scancel python3; do
  command -v "$c" >/dev/null || skip "$c not installed (Debian packages slurm-wlm, munge)"
done

# Two free TCP ports (slurmctld, slurmd), so that runs side by side do not collide.
read -r CTLD_PORT SLURMD_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$T/munge" "$T/log" "$T/state" "$T/spool" "$T/run"
chmod 700 "$T/munge"

# munge: a fresh key, its own socket (Slurm finds it through AuthInfo).
if command -v mungekey >/dev/null; then
  mungekey --create --keyfile="$T/munge/munge.key" 2>"$T/log/mungekey.log" || skip "mungekey failed: $(cat "$T/log/mungekey.log")"
else
  dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 status=none
fi
chmod 600 "$T/munge/munge.key"
SOCK=$T/munge/munge.sock
munged -F --force --socket="$SOCK" --key-file="$T/munge/munge.key" --log-file="$T/log/munged.log" \
  --pid-file="$T/run/munged.pid" --seed-file="$T/munge/seed" >>"$T/log/munged.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || skip "munged did not start: $(tail -3 "$T/log/munged.log" | tr '\n' ' ')"

HOST=$(hostname -s)
cat >"$T/slurm.conf" <<EOF
ClusterName=ncclscantest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$SOCK
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/run/slurmctld.pid
SlurmdPidFile=$T/run/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
PlugStackConfig=$T/plugstack.conf
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=2
NodeName=localhost NodeHostname=$HOST NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
: >"$T/plugstack.conf"
export SLURM_CONF=$T/slurm.conf
# Nothing from a surrounding allocation leaks into the test's jobs.
for v in $(compgen -v SLURM_); do [ "$v" = SLURM_CONF ] || unset "$v"; done

slurmctld -D -c -f "$SLURM_CONF" >>"$T/log/slurmctld.out" 2>&1 &
PIDS+=($!)
slurmd -D -N localhost -f "$SLURM_CONF" >>"$T/log/slurmd.out" 2>&1 &
PIDS+=($!)
state=""
for _ in $(seq 150); do
  state=$(sinfo -h -N -n localhost -o %t 2>/dev/null)
  [ "$state" = idle ] && break
  for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || break 2; done
  sleep 0.2
done
if [ "$state" != idle ]; then
  echo "the node is '${state:-not reported}' after 30 s; daemon logs:"
  for f in "$T"/log/*; do echo "--- $f"; tail -8 "$f"; done
  skip "the Slurm daemons did not start on this machine (node state '${state:-none}')"
fi
echo "slurmctld and slurmd up (ports $CTLD_PORT, $SLURMD_PORT); node localhost idle"

# The plumbing: two tasks in one step, each knows its rank and writes a file.
out=$(timeout 30 srun -N1 -n2 --chdir="$T" bash -c \
  'echo "$SLURM_PROCID/$SLURM_NTASKS on $(hostname -s)" >"task.$SLURM_PROCID"; echo "task $SLURM_PROCID of $SLURM_NTASKS"' 2>&1) ||
  fail "srun -N1 -n2 failed: $out"
echo "$out" | sed 's/^/srun: /'
[ "$(cat "$T/task.0" 2>/dev/null)" = "0/2 on $HOST" ] || fail "task 0 wrote '$(cat "$T/task.0" 2>/dev/null)'"
[ "$(cat "$T/task.1" 2>/dev/null)" = "1/2 on $HOST" ] || fail "task 1 wrote '$(cat "$T/task.1" 2>/dev/null)'"
echo "srun plumbing: 2 tasks saw SLURM_PROCID 0 and 1 of SLURM_NTASKS 2 and wrote their files"

: >"$T/probe.log"
# An older ncclscan takes `partial` for a file name: only a written partial proves it.
"$NS" partial -o "$T/probe.partial" "$T/probe.log" </dev/null >/dev/null 2>&1 && [ -s "$T/probe.partial" ] || skip "ncclscan has no partial subcommand (Slurm plumbing checked: daemons up, srun ran 2 tasks)"

# The logs of one corpus case (without its expected.json, truth.json and golden.json), and the single scan.
mkdir -p "$T/work"
cp -r "$ROOT/corpus/$CASE" "$T/work/logs" || fail "no corpus case $CASE"
rm -f "$T/work/logs/expected.json" "$T/work/logs/truth.json" "$T/work/logs/golden.json"
cd "$T/work" || fail "cd"
"$NS" --format json --fail-on never logs >single.json 2>single.err || fail "single scan failed: $(cat single.err)"

errors=0
# check NAME: the merged report NAME.json equals the single scan, the shares were not
# empty and both tasks wrote a partial.
check() {
  local name=$1
  local n0 n1
  n0=$(tr -cd '\0' <"parts-$name/share-0.list" | wc -c)
  n1=$(tr -cd '\0' <"parts-$name/share-1.list" | wc -c)
  if [ "$n0" = 0 ] || [ "$n1" = 0 ]; then
    echo "FAIL $name: shares of $n0 and $n1 files (each task should scan some)"
    errors=$((errors + 1))
  elif ! ls "parts-$name"/part-000000-*.partial "parts-$name"/part-000001-*.partial >/dev/null 2>&1; then
    echo "FAIL $name: a task wrote no partial: $(ls "parts-$name")"
    errors=$((errors + 1))
  elif ! cmp -s single.json "$name.json"; then
    echo "FAIL $name: merged JSON differs from the single scan"
    diff <(python3 -m json.tool single.json) <(python3 -m json.tool "$name.json") | head -20
    errors=$((errors + 1))
  else
    echo "PASS $name: 2 tasks ($n0 + $n1 files${2:+, $2}), merged JSON byte-identical to the single scan ($(wc -c <single.json) bytes)"
  fi
}

# As a batch script: sbatch copies the script, the tasks run from its text.
timeout 60 sbatch --wait -N1 -n2 -o sbatch.out -e sbatch.err "$ROOT/tools/slurm_scan.sh" \
  --ncclscan "$NS" --partials parts-sbatch --format json -o sbatch.json --merge-flag --fail-on --merge-flag never logs \
  >sbatch.submit 2>&1
rc=$?
[ "$rc" = 0 ] || { cat sbatch.submit sbatch.out sbatch.err 2>/dev/null; fail "sbatch --wait exited $rc"; }
check sbatch

# Inside an allocation, 2 tasks, each scanning its share in batches of a few files (so
# several partials per task, merged in one go: any grouping gives the same report).
timeout 60 salloc -N1 -n2 "$ROOT/tools/slurm_scan.sh" --ncclscan "$NS" --partials parts-salloc --format json \
  --batch-bytes 150 -o salloc.json --merge-flag --fail-on --merge-flag never logs >salloc.out 2>&1
rc=$?
[ "$rc" = 0 ] || { cat salloc.out; fail "salloc exited $rc"; }
nparts=$(find parts-salloc -name '*.partial' | wc -l)
if [ "$nparts" -le 2 ]; then
  echo "FAIL salloc: $nparts partials, expected several per task with --batch-bytes 150"
  errors=$((errors + 1))
fi
check salloc "$nparts partials"

# Node-local mode: one task per node scans the logs as its node sees them (one node here).
timeout 60 salloc -N1 "$ROOT/tools/slurm_scan.sh" --local --ncclscan "$NS" --partials parts-local --format json \
  -o local.json --merge-flag --fail-on --merge-flag never logs >local.out 2>&1
rc=$?
[ "$rc" = 0 ] || { cat local.out; fail "salloc (--local) exited $rc"; }
if ls parts-local/part-000000-*.partial >/dev/null 2>&1 && cmp -s single.json local.json; then
  echo "PASS local: 1 task per node, merged JSON byte-identical to the single scan"
else
  echo "FAIL local: $(ls parts-local); merged JSON differs from the single scan"
  errors=$((errors + 1))
fi

[ "$errors" = 0 ] || exit 1
echo "slurm recipe: passed"
