#!/usr/bin/env bash
# End-to-end tests of the ncclscan CLI: user rules, exit codes, and the
# bad-input matrix (every row: a clear message, the documented exit code, the
# other inputs still scanned, valid JSON).
#
# usage: cli_test.sh NCCLSCAN REPO_ROOT
set -u
NS=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
T=$(mktemp -d /tmp/ncclscan_cli.XXXXXX)
chmod 755 "$T"
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
pass=0
fail=0
PY=/usr/bin/python3

ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

# run NAME EXPECTED_RC CMD...: runs CMD, stdout -> $T/out, stderr -> $T/err.
run() {
  local name=$1 want=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  if [ "$rc" != "$want" ]; then
    bad "$name" "exit $rc, want $want; stderr: $(head -c 300 "$T/err")"
    return 1
  fi
  return 0
}
json_ok() { "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" 2>/dev/null; }
json_get() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/out" "$1"; }

GOOD="$T/good.log"
cat >"$GOOD" <<'EOF'
gpu-a17:48213:48213 [0] NCCL INFO Using network IB
gpu-a17:48213:48290 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.4<39275> failed : Connection refused
EOF

# --- basics -------------------------------------------------------------------
run version 0 "$NS" --version && grep -q '^ncclscan [0-9]' "$T/out" && ok version
run help 0 "$NS" --help && grep -q 'examples:' "$T/out" && ok help
run bad_flag 2 "$NS" --no-such-flag && grep -q '^ncclscan: error:' "$T/err" && ok bad_flag
run bad_format 2 "$NS" --format xml "$GOOD" && grep -q "unknown --format 'xml'" "$T/err" && ok bad_format
run stdin 0 sh -c "printf 'n1:1:1 [0] NCCL INFO Using network IB\n' | '$NS' --format json" &&
  [ "$(json_get 'd["input"]["lines"]')" = 1 ] && ok stdin
# Regression: chunk boundaries followed pipe timing, and with them which rank a
# continuation line was attributed to: the same bytes must give the same JSON.
two='[rank3]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 3] Process group watchdog thread terminated\n Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n'
run pipe_fast 1 sh -c "printf '$two' | '$NS' --format json" && cp "$T/out" "$T/fast.json"
run pipe_slow 1 sh -c "(printf '$two' | head -1; sleep 0.3; printf '$two' | tail -1) | '$NS' --format json" &&
  cmp -s "$T/out" "$T/fast.json" && ok stdin_result_independent_of_pipe_timing
run fail_on_default 1 "$NS" "$GOOD" && ok fail_on_default_error_exit_1
run fail_on_never 0 "$NS" --fail-on never "$GOOD" && ok fail_on_never
run fail_on_critical 0 "$NS" --fail-on critical "$GOOD" && ok fail_on_critical
run markdown 1 "$NS" --format markdown "$GOOD" && grep -q '^## ncclscan: FAIL' "$T/out" && ok markdown

# --- rules ----------------------------------------------------------------------
run rules_check 0 "$NS" rules --check && grep -q '^ok: ' "$T/out" && ok rules_check
run rules_list 0 "$NS" rules --list && grep -q 'DIVERGENT-RANK' "$T/out" && ok rules_list
run explain 0 "$NS" explain DIVERGENT-RANK && grep -q 'kind:      correlation (extreme)' "$T/out" && ok explain
run explain_unknown 2 "$NS" explain NO-SUCH-RULE && grep -q "no rule with id 'NO-SUCH-RULE'" "$T/err" && ok explain_unknown

mkdir -p "$T/myrules"
cat >"$T/myrules/site.yaml" <<'EOF'
rules:
  - id: SITE-FLAKY-SWITCH
    title: Known flaky switch port
    category: ib
    family: nccl
    pattern: 'Using network (?P<net>IB)'
    finding:
      severity: critical
      explanation: "Rank {ranks} uses {net} through the switch we know is flaky."
      remediation: Drain the node.
    examples:
      match: ["n1:1:1 [0] NCCL INFO Using network IB"]
      no_match: ["n1:1:1 [0] NCCL INFO Using network Socket"]
EOF
run user_rule 1 "$NS" --rules "$T/myrules" --format json --fail-on critical "$GOOD" &&
  [ "$(json_get '[f["rule"] for f in d["findings"]][0]')" = SITE-FLAKY-SWITCH ] && ok user_rule_fires_without_recompiling
run user_rule_check 0 "$NS" rules --check "$T/myrules" && ok user_rule_check

mkdir -p "$T/notyaml"
printf 'rules: [a, b\n  c: {\n' >"$T/notyaml/x.yaml"
run rule_not_yaml 2 "$NS" --rules "$T/notyaml" "$GOOD" && grep -q 'x.yaml:2:4: error: not valid YAML' "$T/err" &&
  grep -q 'nothing was scanned' "$T/err" && ok rule_file_not_yaml

mkdir -p "$T/bigre"
big=$(printf '[a-z]{1000}%.0s' $(seq 1 100))
cat >"$T/bigre/x.yaml" <<EOF
rules:
  - id: HUGE
    title: huge
    category: ib
    family: nccl
    pattern: 'Using network (?P<n>$big)'
    finding: {severity: error, explanation: "x"}
    examples: {match: ["n1:1:1 [0] NCCL INFO Using network IB"], no_match: ["x"]}
EOF
run rule_huge_regex 2 "$NS" rules --check "$T/bigre" && grep -q 'E-REGEX-TOO-BIG' "$T/err" && ok rule_regex_of_catastrophic_size

# --- ncclscan test: a deliberately broken rule fails the corpus with a readable diff
mkdir -p "$T/broken"
cat >"$T/broken/x.yaml" <<'EOF'
correlations:
  - id: DIVERGENT-RANK
    title: Divergent rank (broken on purpose, picks the most advanced rank)
    category: desync
    kind: extreme
    fact: last_completed
    select: max
    require: timeout_seq
    finding: {severity: critical, explanation: "rank {ranks}"}
EOF
case_dir="$ROOT/corpus/sim-divergent_rank-perrank-12r3h"
run corpus_case_passes 0 "$NS" test "$case_dir" --color never && grep -q '^1 passed, 0 failed$' "$T/out" &&
  ok corpus_case_passes
run broken_rule_fails 1 "$NS" test "$case_dir" --rules "$T/broken" --color never &&
  grep -q "^FAIL $case_dir" "$T/out" && grep -q 'primary: expected rule DIVERGENT-RANK, got WATCHDOG-SEQ-SPLIT' "$T/out" &&
  grep -q '^    findings were:' "$T/out" && grep -q '^0 passed, 1 failed$' "$T/out" && ok broken_rule_fails_with_diff

# --- bad-input matrix -------------------------------------------------------------
head -c 20000 /dev/urandom >"$T/binary.bin"
run binary 1 "$NS" --format json "$T/binary.bin" "$GOOD" && json_ok && ok binary_file

printf 'gpu-a17:1:1 [0] NCCL INFO Using \0network Socket\n' >"$T/nul.log"
run nul 0 "$NS" --format json "$T/nul.log" &&
  [ "$(json_get 'd["input"]["lines_unparsed"]["with_nul"]')" = 1 ] &&
  [ "$(json_get 'd["subjects"][0]["facts"].get("network")')" = Socket ] && ok nul_bytes_inside_lines

printf 'gpu-a17:1:1 [0] misc/socket.cc:1 NCCL WARN socketStartConnect: Connect to 10.0.0.1<1> failed : \xff\xfe bad utf8\n' >"$T/utf8.log"
run utf8 1 "$NS" --format json "$T/utf8.log" && json_ok &&
  "$PY" -c 'import sys; b=open(sys.argv[1],"rb").read(); b.decode("utf-8"); sys.exit(0 if b"\xef\xbf\xbd" in b else 1)' "$T/out" &&
  ok invalid_utf8_replaced_in_json

printf 'gpu-a17:1:1 [0] NCCL INFO Using network Socket\r\n' >"$T/crlf.log"
run crlf 0 "$NS" --format json "$T/crlf.log" && [ "$(json_get 'd["subjects"][0]["facts"]["network"]')" = Socket ] &&
  ok crlf

"$PY" -c 'import sys; sys.stdout.write("x" * 100_000_000 + "\n")' >"$T/huge.log"
cat "$GOOD" >>"$T/huge.log"
run huge_line 1 /usr/bin/time -f '%M' -o "$T/rss" "$NS" --format json "$T/huge.log" && json_ok &&
  [ "$(json_get 'd["input"]["lines_unparsed"]["overlong_cut"]')" = 1 ] &&
  [ "$(json_get 'd["input"]["lines"]')" = 3 ] && [ "$(tail -1 "$T/rss")" -lt 262144 ] && ok single_100MB_line
rm -f "$T/huge.log"

printf 'gpu-a17:1:1 [0] NCCL INFO Using network Socket' >"$T/nonl.log"
run no_newline 0 "$NS" --format json "$T/nonl.log" && [ "$(json_get 'd["subjects"][0]["facts"]["network"]')" = Socket ] &&
  ok file_without_trailing_newline

: >"$T/empty.log"
run empty_file 0 "$NS" --format json "$T/empty.log" && [ "$(json_get 'd["input"]["lines"]')" = 0 ] && ok empty_file

mkdir -p "$T/emptydir"
run empty_dir 2 "$NS" "$T/emptydir" && grep -q 'no readable input' "$T/err" && ok empty_directory

gzip -c "$GOOD" >"$T/full.gz"
head -c 40 "$T/full.gz" >"$T/trunc.log.gz"
run truncated_gz 1 "$NS" --format json "$T/trunc.log.gz" "$GOOD" && json_ok &&
  grep -q "cannot read $T/trunc.log.gz: truncated gzip stream" "$T/err" &&
  [ "$(json_get 'd["input"]["unreadable_files"]')" = 1 ] && ok truncated_gz

printf '\x28\xb5\x2f\xfdgarbage-not-zstd-at-all' >"$T/corrupt.log.zst"
run corrupt_zst 1 "$NS" --format json "$T/corrupt.log.zst" "$GOOD" && json_ok &&
  grep -q "cannot read $T/corrupt.log.zst: corrupt zstd data" "$T/err" && ok corrupt_zst

run missing 1 "$NS" --format json "$T/missing.log" "$GOOD" && json_ok &&
  grep -q "^ncclscan: error: cannot read $T/missing.log: No such file or directory" "$T/err" && ok missing_file

cp "$GOOD" "$T/secret.log"
chmod 000 "$T/secret.log"
if [ "$(id -u)" = 0 ]; then
  # root reads anything: run as nobody so the permission check is real.
  chmod 755 "$NS" 2>/dev/null
  run denied 1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$NS" --format json "$T/secret.log" "$GOOD"
else
  run denied 1 "$NS" --format json "$T/secret.log" "$GOOD"
fi && json_ok && grep -q "cannot read $T/secret.log: Permission denied" "$T/err" && ok permission_denied

mkdir -p "$T/loop/a"
ln -s .. "$T/loop/a/up"
cp "$GOOD" "$T/loop/a/x.log"
run symlink_loop 1 "$NS" --format json "$T/loop" && json_ok && grep -q 'symbolic link loop' "$T/err" &&
  [ "$(json_get 'd["input"]["lines"]')" = 2 ] && ok directory_symlink_loop

mkfifo "$T/fifo"
(cat "$GOOD" >"$T/fifo" &)
run fifo_stdin 1 sh -c "'$NS' --format json < '$T/fifo'" && json_ok && [ "$(json_get 'd["input"]["lines"]')" = 2 ] &&
  ok fifo_on_stdin

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
