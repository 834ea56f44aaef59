#!/usr/bin/env bash
# A test of tests/cli_test.sh: it must pass against the real binary and fail
# against broken copies of it, so that its checks are known to be able to fail.
#
# usage: cli_test_mutants.sh NCCLSCAN REPO_ROOT
#
# Binary mutants are small wrapper scripts that run the real binary with the
# same arguments and stdin, transform its output, and exit with its exit code:
#   no_stdout   stdout emptied
#   digits      every digit on stdout changed (tr 0-9 1-90)
#   rule_ids    every rule id on stdout (NCCL-CONNECT-FAILED, DIVERGENT-RANK, ...) renamed
#   no_stderr   stderr emptied
# A pass-through wrapper (identity) must pass, so that the mutants fail because
# of what they change and not because a wrapper cannot stand in for the binary.
# Script mutants are copies of cli_test.sh that skip work, run against the real binary:
#   skipped_check  one check's block deleted         (a check that never reports)
#   early_exit     "exit 0" before the rules section (the script stops early)
# Every run must end with the closing line "N passed, N failed". Prints one line
# per case and the closing line "N passed, N failed"; exits 1 if any case failed.
# shellcheck disable=SC2016  # the wrapper bodies below expand when the wrapper runs
set -u
NS=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
CLI=$(dirname "$(readlink -f "$0")")/cli_test.sh
D=$(mktemp -d /tmp/ncclscan_mutants.XXXXXX)
# cli_test.sh runs the binary as nobody for its permission check: the wrappers must be reachable.
chmod 755 "$D"
trap 'rm -rf "$D"' EXIT
pass=0
fail=0

# wrapper NAME BODY: an executable $D/NAME running BODY with $REAL the real binary.
wrapper() {
  {
    echo '#!/usr/bin/env bash'
    printf 'REAL=%q\n' "$NS"
    echo "$2"
  } >"$D/$1"
  chmod 755 "$D/$1"
}
wrapper identity 'exec "$REAL" "$@"'
wrapper no_stdout '"$REAL" "$@" >/dev/null'
wrapper digits '"$REAL" "$@" | tr 0-9 1-90; exit "${PIPESTATUS[0]}"'
wrapper rule_ids '"$REAL" "$@" | sed -E "s/[A-Z][A-Z0-9]*-[A-Z0-9-]*[A-Z0-9]/RENAMED/g"; exit "${PIPESTATUS[0]}"'
wrapper no_stderr '"$REAL" "$@" 2>/dev/null'

sed '/^check empty_file /,/^end$/d' "$CLI" >"$D/skipped_check.sh"
sed 's/^# --- rules ---.*/exit 0/' "$CLI" >"$D/early_exit.sh"
if cmp -s "$CLI" "$D/skipped_check.sh" || cmp -s "$CLI" "$D/early_exit.sh"; then
  echo "FAIL setup: a script mutant is identical to cli_test.sh (its anchors moved?)"
  fail=$((fail + 1))
fi

# case NAME WANT SCRIPT BINARY: runs SCRIPT against BINARY; WANT is pass or fail.
case_() {
  local name=$1 want=$2 script=$3 bin=$4
  bash "$script" "$bin" "$ROOT" >"$D/$name.log" 2>&1
  local rc=$?
  local last
  last=$(tail -1 "$D/$name.log")
  local failed_checks
  failed_checks=$(grep -c '^FAIL ' "$D/$name.log")
  if ! [[ $last =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]]; then
    fail=$((fail + 1))
    echo "FAIL $name: closing line is '$last', not 'N passed, N failed' (exit $rc)"
  elif [ "$want" = pass ] && [ "$rc" = 0 ] && [[ $last =~ \ 0\ failed$ ]]; then
    pass=$((pass + 1))
    echo "PASS $name: cli_test.sh passes ($last)"
  elif [ "$want" = fail ] && [ "$rc" != 0 ] && ! [[ $last =~ \ 0\ failed$ ]]; then
    pass=$((pass + 1))
    echo "PASS $name: cli_test.sh fails, exit $rc ($last; first: $(grep -m1 '^FAIL ' "$D/$name.log" | head -c 160))"
  else
    fail=$((fail + 1))
    echo "FAIL $name: want cli_test.sh to $want, got exit $rc ($last, $failed_checks FAIL lines)"
    sed 's/^/    /' "$D/$name.log" | grep -v '^    PASS ' | head -20
  fi
}

# The real binary's run is the `cli` test itself; identity shows a wrapper can stand in for it.
case_ identity pass "$CLI" "$D/identity"
# A binary mutant need only make one check fail: the script stops there (8 full runs took 8 minutes).
for m in no_stdout digits rule_ids no_stderr; do
  CLI_TEST_STOP_AT_FIRST_FAILURE=1 case_ "$m" fail "$CLI" "$D/$m"
done
case_ skipped_check fail "$D/skipped_check.sh" "$NS"
case_ early_exit fail "$D/early_exit.sh" "$NS"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
