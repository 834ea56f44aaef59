#!/usr/bin/env bash
# End-to-end tests of the ncclscan CLI: user rules, exit codes, and the
# bad-input matrix (every row: a clear message, the documented exit code, the
# other inputs still scanned, valid JSON).
#
# usage: cli_test.sh NCCLSCAN REPO_ROOT
#
# A check is written
#   check NAME EXPECTED_RC CMD...   runs CMD (stdout -> $T/out, stderr -> $T/err)
#   expect CONDITION...             one content condition (a command that must succeed)
#   end                             reports "PASS NAME" or "FAIL NAME: <every condition that failed>"
# A wrong exit code and every failed condition each fail the check. Every check
# is declared in PLAN: one that never reported (the script stopped early, a
# check was skipped) is a failure too. The closing line is "N passed, N failed";
# the exit status is 0 only if every declared check ran and passed.
# tests/cli_test_mutants.sh checks that this script fails against broken copies
# of the binary.
set -u
NS=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
T=$(mktemp -d /tmp/ncclscan_cli.XXXXXX)
chmod 755 "$T"
# A site's rules and the user's config file would change the answers below:
# none are read unless a check sets them (cli/site_config.h).
export NCCLSCAN_SYSTEM_RULES= NCCLSCAN_CONFIG_PATH=
unset NCCLSCAN_RULES
PY=/usr/bin/python3

PLAN=(
  version help bad_flag bad_format stdin stdin_result_independent_of_pipe_timing
  fail_on_default_error_exit_1 fail_on_never fail_on_critical incomplete_exit_0_by_default
  fail_on_unknown_fails_incomplete fail_on_unknown_passes_healthy markdown
  rules_check rules_list explain explain_unknown explain_known_issue version_bound_rule_affected
  version_bound_rule_silent_on_fixed_release user_rule_fires_without_recompiling user_rule_check
  test_unknown_case judge_tables_and_json judge_malformed_truth_is_an_error status_unknown_on_unrecognised_input
  rules_list_json disable_flag disable_unknown_rule test_disable_unknown_rule disable_list_in_rule_file
  disable_list_unknown_rule rule_comparison_with_non_number readme_site_rule_fires_below_18
  readme_site_rule_silent_at_22
  rule_file_not_yaml rule_regex_of_catastrophic_size rule_file_alias_bomb rule_file_too_deep rule_file_too_big
  rule_file_fifo rule_file_dev_zero rule_files_yml_and_every_document rank_that_does_not_fit_is_not_wrapped
  corpus_case_passes broken_rule_fails_with_diff test_update_never_follows_links_out unpinned_primary_fails string_primary_is_its_rule expectation_hosts_string_is_an_error test_walks_link_loops_once
  rule_text_is_escaped_for_the_terminal site_rule_changes_are_listed_in_every_format
  binary_file nul_bytes_inside_lines invalid_utf8_replaced_in_json crlf single_100MB_line
  file_without_trailing_newline empty_file empty_directory truncated_gz corrupt_zst missing_file
  permission_denied directory_symlink_loop fifo_on_stdin
  write_error_dev_full write_error_closed_pipe markdown_escapes_hostile_input ranks_table
  partial_merge_equals_scan partial_needs_output merge_rejects_a_log merge_rejects_truncated_partial
  partial_output_never_writes_through_a_planted_link merge_tells_inputs_apart_by_what_they_are
  merge_memory_is_bounded merge_rejects_values_a_scan_never_makes flight_recorder_memory_is_bounded
  hidden_files_are_counted blank_lines_are_not_recognised command_name_that_is_also_a_path
  many_broken_rules_are_summarised quiet_prints_nothing_and_keeps_the_status short_version
  did_you_mean_a_mistyped_flag empty_no_color_does_not_disable_color progress_on_a_terminal_never_in_pipes
  first_screen_names_the_culprit_in_40_lines verbose_shows_every_finding_in_full headline_names_reporters_as_such
  identity_conflicts_grouped_as_several_jobs named_binary_is_an_error zip_read_member_by_member files_lists_reads_and_skips
  rank_and_host_show_what_one_did context_lines_around_evidence
  redact_needs_output_and_files redact_writes_a_copy_safe_to_share
  site_rules_precedence missing_system_rules_dir_is_silent missing_env_rules_dir_is_an_error
  site_rules_seen_by_rules_and_explain test_reads_no_site_rules_nor_config config_file_gives_default_flags
  config_file_default_locations config_file_errors_name_file_and_line config_rules_seen_by_rules_and_explain
  help_is_short_and_points_to_the_man_page
)
pass=0
fail=0
declare -A reported=()  # check name -> PASS/FAIL
cur=""                  # the open check
cur_why=()              # what failed in it
finished=0

bad() { fail=$((fail + 1)); echo "FAIL $1: $2"; }

# Quotes the words of a condition for a failure message.
show() {
  local a s=""
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./=:-]+$ ]]; then
      s+=" $a"
    elif [[ $a != *"'"* ]]; then
      s+=" '$a'"
    else
      s+=" \"$a\""
    fi
  done
  printf '%s' "${s# }"
}
snippet() { head -c 200 "$1" | tr '\n\0' '|?'; }

# run_cmd EXPECTED_RC CMD...: runs CMD, stdout -> $T/out, stderr -> $T/err; a
# wrong exit code is a failure of the open check.
run_cmd() {
  local want=$1
  shift
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ "$rc" = "$want" ] || cur_why+=("exit $rc, want $want (stderr: $(snippet "$T/err"))")
}

# check NAME EXPECTED_RC CMD...: opens check NAME and runs its command.
check() {
  local name=$1
  [ -z "$cur" ] || { cur_why+=("never ended (check $name opened)"); end; }
  cur=$name
  cur_why=()
  shift
  run_cmd "$@"
}

# also_run EXPECTED_RC CMD...: another command of the open check (replaces $T/out, $T/err).
also_run() { run_cmd "$@"; }

# expect CONDITION...: the condition (a command) must succeed; a failure is
# recorded with the condition's words and the helper's $why.
expect() {
  why=""
  "$@" || cur_why+=("$(show "$@") failed${why:+ ($why)}")
}

# end: reports the open check.
end() {
  local name=$cur
  cur=""
  if [ -n "${reported[$name]+x}" ]; then
    bad "$name" "reported twice"
    return
  fi
  local declared=0 p
  for p in "${PLAN[@]}"; do [ "$p" = "$name" ] && declared=1; done
  [ "$declared" = 1 ] || cur_why+=("not declared in PLAN")
  if [ "${#cur_why[@]}" = 0 ]; then
    pass=$((pass + 1))
    reported[$name]=PASS
    echo "PASS $name"
  else
    local msg
    msg=$(printf '%s; ' "${cur_why[@]}")
    reported[$name]=FAIL
    bad "$name" "${msg%; }"
    # cli_test_mutants.sh needs only to see a mutant fail, not every way it fails.
    if [ -n "${CLI_TEST_STOP_AT_FIRST_FAILURE:-}" ]; then
      echo "stopped at the first failure (CLI_TEST_STOP_AT_FIRST_FAILURE)"
      echo "$pass passed, $fail failed"
      finished=1
      exit 1
    fi
  fi
}

# The closing report: checks that never reported fail; "N passed, N failed".
finish() {
  [ -z "$cur" ] || { cur_why+=("never ended"); end; }
  local p
  for p in "${PLAN[@]}"; do
    [ -n "${reported[$p]+x}" ] || bad "$p" "did not run"
  done
  echo "$pass passed, $fail failed"
  finished=1
}

on_exit() {
  local rc=$?
  # A writer still blocked on the FIFO (its check never ran) gets a reader and ends.
  [ -p "$T/fifo" ] && { exec 3<>"$T/fifo"; exec 3<&-; } 2>/dev/null
  chmod -R u+rwx "$T" 2>/dev/null
  rm -rf "$T"
  if [ "$finished" != 1 ]; then
    echo "FAIL cli_test.sh: stopped before the end (exit $rc)"
    fail=$((fail + 1))
    finish
    exit 1
  fi
}
trap on_exit EXIT

# --- conditions (each sets $why when it fails) ---------------------------------
# lines_at_most N: stdout has at most N lines.
lines_at_most() { local n; n=$(wc -l <"$T/out"); [ "$n" -le "$1" ] || { why="$n lines"; return 1; }; }
# count_is REGEX N: stdout has N lines matching REGEX.
count_is() { local n; n=$(grep -c -- "$1" "$T/out"); [ "$n" = "$2" ] || { why="$n lines match"; return 1; }; }
out_has() { grep -q -- "$1" "$T/out" || { why="stdout: $(snippet "$T/out")"; return 1; }; }
no_err() { [ ! -s "$T/err" ] || { why="stderr: $(snippet "$T/err")"; return 1; }; }
err_has() { grep -q -- "$1" "$T/err" || { why="stderr: $(snippet "$T/err")"; return 1; }; }
out_lacks() { ! grep -q -- "$1" "$T/out" || { why="stdout: $(grep -m1 -- "$1" "$T/out" | head -c 200)"; return 1; }; }
err_lacks() { ! grep -q -- "$1" "$T/err" || { why="stderr: $(snippet "$T/err")"; return 1; }; }
is_json() {
  "$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out" 2>/dev/null ||
    { why="stdout: $(snippet "$T/out")"; return 1; }
}
json_get() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$T/out" "$1"; }
# json_eq EXPR VALUE: EXPR, evaluated on the JSON document d on stdout, prints VALUE.
json_eq() {
  local got
  got=$(json_get "$1" 2>&1)
  [ "$got" = "$2" ] || { why="got '$(printf '%s' "$got" | tail -1 | head -c 200)'"; return 1; }
}
same_out_as() { cmp -s "$T/out" "$1" || { why="stdout differs from $(basename "$1")"; return 1; }; }
# utf8_with_replacement: stdout is valid UTF-8 and holds U+FFFD.
utf8_with_replacement() {
  "$PY" -c 'import sys; b=open(sys.argv[1],"rb").read(); b.decode("utf-8"); sys.exit(0 if b"\xef\xbf\xbd" in b else 1)' \
    "$T/out" 2>/dev/null || { why="no U+FFFD in valid UTF-8 stdout"; return 1; }
}
# rss_below KB: the peak RSS that /usr/bin/time wrote to $T/rss.
rss_below() {
  local kb
  kb=$(tail -1 "$T/rss" 2>/dev/null)
  if [[ $kb =~ ^[0-9]+$ ]] && [ "$kb" -lt "$1" ]; then return 0; fi
  why="peak RSS '$kb' KiB"
  return 1
}

GOOD="$T/good.log"
cat >"$GOOD" <<'EOF'
gpu-a17:48213:48213 [0] NCCL INFO Using network IB
gpu-a17:48213:48290 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.2.4<39275> failed : Connection refused
EOF

# --- basics -------------------------------------------------------------------
check version 0 "$NS" --version
expect out_has '^ncclscan [0-9]'
end
check help 0 "$NS" --help
expect out_has 'examples:'
end
check bad_flag 2 "$NS" --no-such-flag
expect err_has '^ncclscan: error:'
end
check bad_format 2 "$NS" --format xml "$GOOD"
expect err_has "unknown --format 'xml'"
end
check stdin 0 sh -c "printf 'n1:1:1 [0] NCCL INFO Using network IB\n' | '$NS' --format json"
expect json_eq 'd["input"]["lines"]' 1
end
# Regression: chunk boundaries followed pipe timing, and with them which rank a
# continuation line was attributed to: the same bytes must give the same JSON.
two='[rank3]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 3] Process group watchdog thread terminated\n Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n'
check stdin_result_independent_of_pipe_timing 1 sh -c "printf '$two' | '$NS' --format json"
cp "$T/out" "$T/fast.json"
also_run 1 sh -c "(printf '$two' | head -1; sleep 0.3; printf '$two' | tail -1) | '$NS' --format json"
expect same_out_as "$T/fast.json"
end
check fail_on_default_error_exit_1 1 "$NS" "$GOOD"
end
check fail_on_never 0 "$NS" --fail-on never "$GOOD"
end
check fail_on_critical 0 "$NS" --fail-on critical "$GOOD"
end
# A log that stops inside init: INCOMPLETE, exit 0 by default, 1 under --fail-on unknown.
printf 'n1:7:7 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nn1:7:7 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init START\n' >"$T/stopped.log"
check incomplete_exit_0_by_default 0 "$NS" "$T/stopped.log"
expect out_has '^INCOMPLETE '
end
check fail_on_unknown_fails_incomplete 1 "$NS" --fail-on unknown "$T/stopped.log"
end
check fail_on_unknown_passes_healthy 0 "$NS" --fail-on unknown "$ROOT/corpus/sim-healthy-perrank-16r2h"
end
check markdown 1 "$NS" --format markdown "$GOOD"
expect out_has '^## ncclscan: FAIL'
end

# --- rules ----------------------------------------------------------------------
check rules_check 0 "$NS" rules --check
expect out_has '^ok: '
end
check rules_list 0 "$NS" rules --list
expect out_has 'DIVERGENT-RANK'
end
check explain 0 "$NS" explain DIVERGENT-RANK
expect out_has 'kind:      correlation (extreme)'
end
# Known issues (docs/rules.md §2): explain lists them; a version-bound rule fires on an affected
# release and says it is affected, and is silent on a release with the fix.
check explain_known_issue 0 "$NS" explain NCCL-KNOWN-BOOTSTRAP-TAG
expect out_has '^  known:     .*(https://github.com/NVIDIA/nccl/issues/1176): NCCL >=2.19.1,<2.21.5, fixed in NCCL 2.21.5; fires only where'
end
check version_bound_rule_affected 1 "$NS" "$ROOT/corpus/known-issues/bootstrap-tag-2.19.3"
expect out_has "known issue: .*(https://github.com/NVIDIA/nccl/issues/1176), fixed in NCCL 2.21.5; this log's NCCL 2.19.3 is affected"
also_run 1 "$NS" --format json "$ROOT/corpus/known-issues/bootstrap-tag-2.19.3"
expect json_eq '[(k["status"], k["affected_only"], k["fixed_in"]) for f in d["findings"] if f["rule"] == "NCCL-KNOWN-BOOTSTRAP-TAG" for k in f["known_issues"] if k["url"].endswith("/1176")]' "[('affected', True, '2.21.5')]"
end
check version_bound_rule_silent_on_fixed_release 1 "$NS" --format json "$ROOT/corpus/known-issues/bootstrap-tag-2.21.5-not-affected"
expect json_eq '"NCCL-KNOWN-BOOTSTRAP-TAG" in [f["rule"] for f in d["findings"]]' False
expect json_eq '[k["status"] for f in d["findings"] if f["rule"] == "NCCL-BOOTSTRAP-TRUNCATED" for k in f["known_issues"]]' "['fixed', 'fixed']"
end
check explain_unknown 2 "$NS" explain NO-SUCH-RULE
expect err_has "no rule with id 'NO-SUCH-RULE'"
end
check test_unknown_case 2 "$NS" test "$ROOT/corpus" --case no-such-case
expect err_has "no test case named 'no-such-case'"
end
# A directory holding truth.json is judged: the tables follow the closing line,
# -v lists the misses, --judge-json writes the results; a miss is not a failure.
mkdir -p "$T/judge/a"
cp "$ROOT"/corpus/incidents/h2-nccl-1292-plugin-symbol-messages-benign-healthy/* "$T/judge/a/"
check judge_tables_and_json 0 "$NS" test "$T/judge" --color never -v --judge-json "$T/judge.json"
expect out_has '^0 passed, 0 failed$'
expect out_has '^study: 1 case$'
expect out_has '^set aside: 0 cases$'
expect out_has '^  healthy  *1  *0  *-  *-  *0  *1  *[01]$'
expect "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["schema"] == "ncclscan.judge/1"; assert [c["case"] for c in d["cases"]] == ["a"]; assert d["totals"]["study"]["total"]["healthy"] == 1' "$T/judge.json"
end
printf '{"source": "https://example.com/x", "status": "broken"}\n' >"$T/judge/a/truth.json"
check judge_malformed_truth_is_an_error 2 "$NS" test "$T/judge" --color never
expect err_has 'a/truth.json: status: unknown value "broken"'
end
printf 'epoch 1 loss 2.5\nall good\n' >"$T/plain.txt"
check status_unknown_on_unrecognised_input 0 "$NS" --format json "$T/plain.txt"
expect json_eq 'd["verdict"]["status"]' unknown
end

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
check user_rule_fires_without_recompiling 1 "$NS" --rules "$T/myrules" --format json --fail-on critical "$GOOD"
expect json_eq '[f["rule"] for f in d["findings"]][0]' SITE-FLAKY-SWITCH
end
check user_rule_check 0 "$NS" rules --check "$T/myrules"
end

# --- rules a user can bend: --disable, disable:, rules --list --format json, the README's site rule
check rules_list_json 0 "$NS" rules --list --format json
expect is_json
expect json_eq '[(r["kind"], r["source"], r["enabled"]) for r in d["rules"] if r["id"] == "DIVERGENT-RANK"]' \
  "[('extreme', 'rules/correlations.yaml', True)]"
expect json_eq 'sorted(d["rules"][0])' "['category', 'enabled', 'id', 'kind', 'known_issues', 'line', 'references', 'severity', 'source', 'title']"
# Known issues (docs/rules.md §2): each with its url, the versions it affects and the fixing release.
expect json_eq 'all(sorted(k) == ["affected", "affected_only", "component", "fixed_in", "title", "url"] and k["url"] in r["references"] for r in d["rules"] for k in r["known_issues"])' True
end
check disable_flag 0 "$NS" --disable NCCL-CONNECT-FAILED --format json --fail-on never "$GOOD"
expect json_eq '"NCCL-CONNECT-FAILED" in [f["rule"] for f in d["findings"]]' False
also_run 0 "$NS" --format json --fail-on never "$GOOD"
expect json_eq '"NCCL-CONNECT-FAILED" in [f["rule"] for f in d["findings"]]' True
end
check disable_unknown_rule 2 "$NS" --disable NO-SUCH-RULE "$GOOD"
expect err_has "^ncclscan: error: --disable names unknown rule 'NO-SUCH-RULE' \[E-UNKNOWN-RULE\]"
expect err_has 'nothing was scanned'
end
check test_disable_unknown_rule 2 "$NS" test "$ROOT/corpus" --disable NO-SUCH-RULE
expect err_has "unknown rule 'NO-SUCH-RULE'"
end
mkdir -p "$T/offrules"
printf 'disable: [NCCL-CONNECT-FAILED]\n' >"$T/offrules/off.yaml"
check disable_list_in_rule_file 0 "$NS" rules --list --format json --rules "$T/offrules"
expect json_eq '[r["enabled"] for r in d["rules"] if r["id"] == "NCCL-CONNECT-FAILED"]' '[False]'
end
printf 'disable: [NCCL-CONNECT-FAILD]\n' >"$T/offrules/off.yaml"
check disable_list_unknown_rule 2 "$NS" rules --check "$T/offrules"
expect err_has "off.yaml:1:11: error: disable names unknown rule 'NCCL-CONNECT-FAILD' \[E-UNKNOWN-RULE\]"
end
printf 'correlations:\n  - {id: X, title: t, category: env, kind: condition, where: [{fact: network, gt: many}], finding: {explanation: x}}\n' \
  >"$T/offrules/off.yaml"
check rule_comparison_with_non_number 2 "$NS" rules --check "$T/offrules"
expect err_has "'gt' compares numbers; 'many' is not a number \[E-BAD-VALUE\]"
end

# The README's site rule, as printed there (under 15 lines), fires at 14 and not at 22.
mkdir -p "$T/readme_rule"
"$PY" - "$ROOT/README.md" "$T/readme_rule/site.yaml" <<'PYEOF'
import re, sys
text = open(sys.argv[1]).read()
blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "NCCL_IB_TIMEOUT" in b]
open(sys.argv[2], "w").write(blocks[0] if blocks else "")
PYEOF
printf 'gpu-a17:1:1 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 14.\n' >"$T/ibto14.log"
printf 'gpu-a17:1:1 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.\n' >"$T/ibto22.log"
short_rule() {
  local n
  n=$(grep -c . "$T/readme_rule/site.yaml")
  [ "$n" -gt 0 ] && [ "$n" -lt 15 ] || { why="$n lines"; return 1; }
}
check readme_site_rule_fires_below_18 1 "$NS" --rules "$T/readme_rule" --fail-on warning --format json "$T/ibto14.log"
expect short_rule
# (a one-line log also gets RUN-NO-PROGRESS-SHOWN, at info: nothing shows the run's progress)
expect json_eq '[(f["rule"], f["title"]) for f in d["findings"] if f["severity"] != "info"]' "[('SITE-IB-TIMEOUT-LOW', 'NCCL_IB_TIMEOUT set below 18')]"
expect json_eq '[f["explanation"].count("NCCL_IB_TIMEOUT=14") for f in d["findings"] if f["rule"] == "SITE-IB-TIMEOUT-LOW"]' '[1]' 
end
check readme_site_rule_silent_at_22 0 "$NS" --rules "$T/readme_rule" --fail-on warning --format json "$T/ibto22.log"
expect json_eq '[f["rule"] for f in d["findings"] if f["severity"] != "info"]' '[]'
end

# --- for a site: the system rule directory, NCCLSCAN_RULES, the config file ---
# One rule, SITE-FLAKY-SWITCH, in four directories, each with its own severity:
# a later layer replaces it (built-in < system < NCCLSCAN_RULES < --rules).
for layer in sys:warning env1:error env2:critical cmd:info; do
  mkdir -p "$T/layer-${layer%%:*}"
  sed -e "s/severity: critical/severity: ${layer#*:}/" -e "s/Known flaky switch port/from ${layer%%:*}/" \
    "$T/myrules/site.yaml" >"$T/layer-${layer%%:*}/site.yaml"
done
site_rule() { json_eq '[(f["title"], f["severity"]) for f in d["findings"] if f["rule"] == "SITE-FLAKY-SWITCH"]' "$1"; }
check site_rules_precedence 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" "$NS" --format json --fail-on never "$GOOD"
expect site_rule "[('from sys', 'warning')]"
also_run 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" NCCLSCAN_RULES="$T/layer-env1" "$NS" --format json --fail-on never "$GOOD"
expect site_rule "[('from env1', 'error')]"
# ':'-separated, empty entries skipped, the last one wins.
also_run 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" NCCLSCAN_RULES=":$T/layer-env1::$T/layer-env2:" "$NS" --format json --fail-on never "$GOOD"
expect site_rule "[('from env2', 'critical')]"
also_run 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" NCCLSCAN_RULES="$T/layer-env2" "$NS" --rules "$T/layer-cmd" --format json --fail-on never "$GOOD"
expect site_rule "[('from cmd', 'info')]"
# The exit status follows the site's severity like any rule's.
also_run 1 env NCCLSCAN_RULES="$T/layer-env2" "$NS" --fail-on critical "$GOOD"
expect out_has 'SITE-FLAKY-SWITCH'
end
check missing_system_rules_dir_is_silent 1 env NCCLSCAN_SYSTEM_RULES="$T/no-such-dir" "$NS" "$GOOD"
expect no_err
expect out_lacks 'SITE-FLAKY-SWITCH'
end
check missing_env_rules_dir_is_an_error 2 env NCCLSCAN_RULES="$T/layer-env1:$T/no-such-dir" "$NS" "$GOOD"
expect err_has "^ncclscan: error: NCCLSCAN_RULES names '$T/no-such-dir': No such file or directory"
expect out_lacks .
also_run 2 env NCCLSCAN_RULES="$T/no-such-dir" "$NS" rules --list
expect err_has "NCCLSCAN_RULES names '$T/no-such-dir'"
end
check site_rules_seen_by_rules_and_explain 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" NCCLSCAN_RULES="$T/layer-env1" "$NS" rules --check
expect out_has '^ok: '
expect out_has "^site rules: $T/layer-sys (system)$"
expect out_has "^site rules: $T/layer-env1 (NCCLSCAN_RULES)$"
also_run 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" NCCLSCAN_RULES="$T/layer-env1" "$NS" rules --list --format json
expect json_eq '[(r["severity"], r["title"]) for r in d["rules"] if r["id"] == "SITE-FLAKY-SWITCH"]' "[('error', 'from env1')]"
also_run 0 env NCCLSCAN_SYSTEM_RULES="$T/layer-sys" "$NS" explain SITE-FLAKY-SWITCH
expect out_has '^SITE-FLAKY-SWITCH: from sys$'
expect out_has "defined:   $T/layer-sys/site.yaml:2"
end
# test reads neither: the corpus' expectations are the built-in rules'. A site
# rule directory that turns off the case's primary rule and a config file with
# a flag test does not take would both fail it.
mkdir -p "$T/site-off"
printf 'disable: [DIVERGENT-RANK]\n' >"$T/site-off/off.yaml"
printf -- '--format=json\n--no-such-flag\n' >"$T/bad-config"
check test_reads_no_site_rules_nor_config 0 env NCCLSCAN_SYSTEM_RULES="$T/site-off" NCCLSCAN_RULES="$T/site-off" NCCLSCAN_CONFIG_PATH="$T/bad-config" "$NS" test "$ROOT/corpus/sim-divergent_rank-perrank-12r3h" --color never
expect out_has '^1 passed, 0 failed$'
also_run 1 "$NS" test "$ROOT/corpus/sim-divergent_rank-perrank-12r3h" --color never --rules "$T/site-off"
expect out_has '^0 passed, 1 failed$'
end
# The config file: one argument per line, '#' comments, blanks trimmed; the
# command line's flags win; repeatable ones add up (the config file's first).
printf '# my defaults\n\n  --format=json  \n--rules\n%s\n-g\n*.log\n' "$T/layer-env1" >"$T/config"
check config_file_gives_default_flags 0 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" --fail-on never "$GOOD"
expect is_json
expect site_rule "[('from env1', 'error')]"
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" --fail-on never --format text "$GOOD"
expect out_has '^\[1\] '
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" --fail-on never --rules "$T/layer-cmd" "$GOOD"
expect site_rule "[('from cmd', 'info')]"
# -g '*.log' from the config file, then '!good*' from the command line: of a
# walk over good.log and good.txt, nothing is left to read; without the latter, good.log.
mkdir -p "$T/globs"
cp "$GOOD" "$T/globs/good.log"
cp "$GOOD" "$T/globs/good.txt"
also_run 2 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" -g '!good*' "$T/globs"
expect err_has 'no readable input'
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" --fail-on never "$T/globs"
expect json_eq '[f["path"].split("/")[-1] for f in d["input"]["files"]]' "['good.log']"
also_run 1 env NCCLSCAN_CONFIG_PATH="$T/config" "$NS" --no-config "$GOOD"
expect out_has '^FAIL '
expect out_lacks 'SITE-FLAKY-SWITCH'
end
mkdir -p "$T/home/.config/ncclscan" "$T/xdg/ncclscan"
printf -- '--format=json\n' >"$T/home/.config/ncclscan/config"
printf -- '--format=markdown\n' >"$T/xdg/ncclscan/config"
check config_file_default_locations 1 env -u NCCLSCAN_CONFIG_PATH HOME="$T/home" XDG_CONFIG_HOME= "$NS" "$GOOD"
expect is_json
also_run 1 env -u NCCLSCAN_CONFIG_PATH HOME="$T/home" XDG_CONFIG_HOME="$T/xdg" "$NS" "$GOOD"
expect out_has '^## ncclscan: FAIL'
# A relative XDG_CONFIG_HOME is ignored (XDG base directory spec).
also_run 1 env -u NCCLSCAN_CONFIG_PATH HOME="$T/home" XDG_CONFIG_HOME=xdg "$NS" "$GOOD"
expect is_json
# None there: nothing read, nothing said.
also_run 1 env -u NCCLSCAN_CONFIG_PATH HOME="$T/no-such-home" XDG_CONFIG_HOME= "$NS" "$GOOD"
expect out_has '^FAIL '
expect no_err
end
printf '# defaults\n--fromat=json\n' >"$T/typo-config"
printf -- '--format json\n' >"$T/joined-config"
printf -- '--color=never\nlogs/\n' >"$T/path-config"
check config_file_errors_name_file_and_line 2 env NCCLSCAN_CONFIG_PATH="$T/typo-config" "$NS" "$GOOD"
expect err_has "^ncclscan: error: $T/typo-config:2: unrecognised option '--fromat=json'"
expect err_has "did you mean '--format'"
expect out_lacks .
also_run 2 env NCCLSCAN_CONFIG_PATH="$T/joined-config" "$NS" "$GOOD"
expect err_has "$T/joined-config:1: unrecognised option '--format json'"
expect err_has '^help: one argument per line'
also_run 2 env NCCLSCAN_CONFIG_PATH="$T/path-config" "$NS" "$GOOD"
expect err_has "$T/path-config:2: 'logs/' is not a flag"
also_run 2 env NCCLSCAN_CONFIG_PATH="$T/no-such-config" "$NS" "$GOOD"
expect err_has "config file $T/no-such-config: No such file or directory (named by NCCLSCAN_CONFIG_PATH)"
also_run 2 env NCCLSCAN_CONFIG_PATH=/dev/zero "$NS" "$GOOD"
expect err_has 'larger than 1 MiB'
# --no-config, --help and --version need no readable config file.
also_run 1 env NCCLSCAN_CONFIG_PATH="$T/no-such-config" "$NS" --no-config "$GOOD"
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/typo-config" "$NS" --version
end
printf -- '--disable=NCCL-CONNECT-FAILED\n--rules=%s\n' "$T/layer-env2" >"$T/rules-config"
check config_rules_seen_by_rules_and_explain 0 env NCCLSCAN_CONFIG_PATH="$T/rules-config" "$NS" rules --list --format json
expect json_eq '[r["enabled"] for r in d["rules"] if r["id"] == "NCCL-CONNECT-FAILED"]' '[False]'
expect json_eq '[r["title"] for r in d["rules"] if r["id"] == "SITE-FLAKY-SWITCH"]' "['from env2']"
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/rules-config" "$NS" explain NCCL-CONNECT-FAILED
expect out_has '^  enabled:   no'
also_run 0 env NCCLSCAN_CONFIG_PATH="$T/rules-config" "$NS" rules --list --format json --no-config
expect json_eq '[r["enabled"] for r in d["rules"] if r["id"] == "NCCL-CONNECT-FAILED"]' '[True]'
also_run 2 env NCCLSCAN_CONFIG_PATH="$T/typo-config" "$NS" explain NCCL-CONNECT-FAILED
expect err_has "$T/typo-config:2: unrecognised option"
end
# --help is the quick reference; ENVIRONMENT, FILES and READING THE REPORT are the man page's.
check help_is_short_and_points_to_the_man_page 0 "$NS" --help
expect out_has 'NCCLSCAN_RULES'
expect out_has '^  --no-config '
expect out_has "^more in 'man ncclscan': environment, files, reading the report.$"
expect out_lacks '^environment:'
expect out_lacks '^reading the report:'
expect out_lacks 'man page only'
end

mkdir -p "$T/notyaml"
printf 'rules: [a, b\n  c: {\n' >"$T/notyaml/x.yaml"
check rule_file_not_yaml 2 "$NS" --rules "$T/notyaml" "$GOOD"
expect err_has 'x.yaml:2:4: error: not valid YAML'
expect err_has 'nothing was scanned'
end

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
check rule_regex_of_catastrophic_size 2 "$NS" rules --check "$T/bigre"
expect err_has 'E-REGEX-TOO-BIG'
end

# --- limits on user rule files (rules/yaml_limits.h): each a clear error with its position, exit 2,
# no hang and no out-of-memory.
mkdir -p "$T/bomb"
"$PY" - "$T/bomb/x.yaml" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("rules:\n  - id: A\n    title: &a \"%s\"\n    examples:\n      match: [%s]\n" % ("x" * (1 << 20), ", ".join(["*a"] * 20000)))
PYEOF
check rule_file_alias_bomb 2 "$NS" --rules "$T/bomb" "$GOOD"
expect err_has 'x.yaml:5:71: error: the rule file expands to more than 16 MiB of text \[E-YAML-TOO-LARGE\]'
expect err_has 'nothing was scanned'
end
mkdir -p "$T/deep"
"$PY" -c 'print("rules: " + "[" * 100 + "]" * 100)' >"$T/deep/x.yaml"
check rule_file_too_deep 2 "$NS" rules --check "$T/deep"
expect err_has 'x.yaml:1:71: error: YAML nested deeper than 64 levels \[E-YAML-TOO-DEEP\]'
end
# 10,000 broken rules: the first 50 problems are rendered, then a count.
mkdir -p "$T/manybad"
"$PY" -c '
print("rules:")
for i in range(10000): print(f"  - id: BAD-{i}\n    kind: line\n    severity: error")' >"$T/manybad/x.yaml"
check many_broken_rules_are_summarised 2 "$NS" rules --check "$T/manybad"
expect err_has '^\.\.\. and [0-9]* more problem(s): [0-9]* in 1 file(s); fix these first$'
expect err_lacks "is a command"
also_run 0 sh -c '"$1" --rules "$2" "$3" 2>&1 | wc -c | grep -qx "[0-9]\{1,5\}"' - "$NS" "$T/manybad" "$GOOD"
end
mkdir -p "$T/bigfile"
"$PY" -c 'print("# " + "x" * (5 << 20))' >"$T/bigfile/x.yaml"
check rule_file_too_big 2 "$NS" --rules "$T/bigfile" "$GOOD"
expect err_has 'x.yaml: error: rule file is larger than 4 MiB \[E-FILE-TOO-BIG\]'
end
mkdir -p "$T/fiforules"
mkfifo "$T/fiforules/x.yaml"
check rule_file_fifo 2 timeout 20 "$NS" --rules "$T/fiforules" "$GOOD"
expect err_has 'x.yaml: error: rule file is a FIFO, not a regular file \[E-FILE-TYPE\]'
expect err_has 'nothing was scanned'
end
mkdir -p "$T/zerorules"
ln -s /dev/zero "$T/zerorules/x.yaml"
check rule_file_dev_zero 2 timeout 20 "$NS" rules --check "$T/zerorules"
expect err_has 'x.yaml: error: rule file is a character device, not a regular file \[E-FILE-TYPE\]'
end
mkdir -p "$T/ymlrules"
site_rule() {  # site_rule ID WORD: a rule that fires (critical) on "Using network WORD"
  printf 'rules:\n  - id: %s\n    title: t\n    category: ib\n    family: nccl\n' "$1"
  printf "    pattern: 'Using network (?P<net>%s)'\n" "$2"
  printf '    finding: {severity: critical, explanation: "{net}"}\n'
  printf '    examples: {match: ["n1:1:1 [0] NCCL INFO Using network %s"], no_match: ["n1:1:1 [0] NCCL INFO Using network Other"]}\n' "$2"
}
site_rule SITE-YML IB >"$T/ymlrules/a.yml"
{ site_rule SITE-DOC-ONE Alpha; echo ---; site_rule SITE-DOC-TWO IB; } >"$T/ymlrules/b.yaml"
check rule_files_yml_and_every_document 1 "$NS" --rules "$T/ymlrules" --format json --fail-on critical "$GOOD"
expect json_eq 'sorted(f["rule"] for f in d["findings"] if f["rule"].startswith("SITE-"))' "['SITE-DOC-TWO', 'SITE-YML']"
also_run 0 "$NS" rules --list --rules "$T/ymlrules"
expect out_has '^SITE-DOC-ONE '
end

# --- numbers in log lines that do not fit are dropped, never wrapped: "[rank4294967297]:" is no rank 1,
# and the other lines are scanned as usual.
printf '%s\n' \
  '[rank4294967297]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 4294967297] Process group watchdog thread terminated with exception: NCCL error' \
  '[rank1]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.' \
  >"$T/bigrank.log"
check rank_that_does_not_fit_is_not_wrapped 1 "$NS" --format json "$T/bigrank.log"
expect json_eq '[(f["rule"], f["ranks"]) for f in d["findings"]]' "[('TORCH-WATCHDOG-TIMEOUT', '1'), ('TORCH-ASYNC-NCCL-ERROR', '')]"
expect json_eq 'd["input"]["ranks"]' "{'count': 1, 'list': '1'}"
end

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
check corpus_case_passes 0 "$NS" test "$case_dir" --color never
expect out_has '^1 passed, 0 failed$'
end
check broken_rule_fails_with_diff 1 "$NS" test "$case_dir" --rules "$T/broken" --color never
expect out_has "^FAIL $case_dir"
expect out_has 'primary: expected rule DIVERGENT-RANK, got WATCHDOG-SEQ-SPLIT'
expect out_has '^    findings were:'
expect out_has '^0 passed, 1 failed$'
end

# `test --update` rewrites only expectations inside the corpus: a case
# directory that links out is not followed, an expected.json that is a link or
# holds keys no expectation has is refused (exit 2), the rest is updated.
W="$T/upd"
mkdir -p "$W/corpus/case1" "$W/corpus/case3" "$W/corpus/case4" "$W/outside/victim"
L='gpu-b:2:2 [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<1>'
for c in case1 case3 case4; do echo "$L" >"$W/corpus/$c/rank1.log"; done
echo '{"description": "c1"}' >"$W/corpus/case1/expected.json"
echo '{"description": "c4", "api_key_name": "keep me"}' >"$W/corpus/case4/expected.json"
echo '{"description": "someone else s file", "api_key_name": "keep me"}' >"$W/outside/victim/expected.json"
echo '{"name": "my-app", "version": "1.2.3"}' >"$W/outside/package.json"
cp "$W/outside/victim/expected.json" "$W/victim.orig"
cp "$W/outside/package.json" "$W/package.orig"
cp "$W/corpus/case4/expected.json" "$W/case4.orig"
ln -s ../outside/victim "$W/corpus/case2"
ln -s ../../outside/package.json "$W/corpus/case3/expected.json"
check test_update_never_follows_links_out 2 "$NS" test --update "$W/corpus" --color never
expect cmp -s "$W/outside/victim/expected.json" "$W/victim.orig"
expect cmp -s "$W/outside/package.json" "$W/package.orig"
expect cmp -s "$W/corpus/case4/expected.json" "$W/case4.orig"
expect test -L "$W/corpus/case3/expected.json"
expect err_has "not updated: $W/corpus/case3/expected.json: it is not a regular file"
expect err_has "not updated: $W/corpus/case4/expected.json: its keys \\[api_key_name\\] are not an expectation's"
expect out_has "^UPDATED $W/corpus/case1$"
expect grep -q NCCL-CONN-CLOSED "$W/corpus/case1/expected.json"
end

# A case whose expectation names the primary's rule must also say whom it
# names (ranks, "" for none, or hosts); `test --update` pins the ranks.
# A one-case corpus under $T/NAME (W): rank 1's closed connection, and EXPECTATION.
one_case_corpus() {
  W="$T/$1"
  mkdir -p "$W/corpus/case1"
  echo "$L" >"$W/corpus/case1/rank1.log"
  echo "$2" >"$W/corpus/case1/expected.json"
}
one_case_corpus pin '{"description": "c1", "primary": {"rule": "NCCL-CONN-CLOSED"}}'
check unpinned_primary_fails 1 "$NS" test "$W/corpus" --color never
expect out_has 'the expectation does not say whom it names: add "ranks"'
also_run 0 "$NS" test --update "$W/corpus" --color never
expect grep -q '"rule": "NCCL-CONN-CLOSED", "ranks": "1"' "$W/corpus/case1/expected.json"
also_run 0 "$NS" test "$W/corpus" --color never
expect out_has '^1 passed, 0 failed$'
end

# A primary written as the rule's name alone is that rule: `test --update`
# pins whom it names and writes JSON (it once wrote '{, "ranks": ""}').
one_case_corpus pinstr '{"description": "c1", "primary": "NCCL-CONN-CLOSED"}'
check string_primary_is_its_rule 0 "$NS" test --update "$W/corpus" --color never
expect grep -q '"primary": {"rule": "NCCL-CONN-CLOSED", "ranks": "1"}' "$W/corpus/case1/expected.json"
also_run 0 "$NS" test "$W/corpus" --color never
expect out_has '^1 passed, 0 failed$'
end

# A list written as a string ("hosts": "n1") would read as an empty list and
# expect nobody: the case is an error that names the field.
one_case_corpus hoststr '{"description": "c1", "primary": {"rule": "NCCL-CONN-CLOSED", "hosts": "n1"}}'
check expectation_hosts_string_is_an_error 2 "$NS" test "$W/corpus" --color never
expect err_has 'primary.hosts must be a list of strings'
end

# A directory with links back to itself is walked once, not k^8 times.
mkdir -p "$T/loopc/x"
for i in 1 2 3 4 5 6 7 8 9 10; do ln -s . "$T/loopc/x/l$i"; done
check test_walks_link_loops_once 2 timeout 20 "$NS" test "$T/loopc" --color never
expect err_has 'no test cases'
end

# Text from rule files reaches the terminal escaped, as input text does in a
# report: explain, rules --list and the loader's diagnostics never print raw
# ESC / OSC sequences (window title, clear screen, hyperlinks) or BEL.
mkdir -p "$T/hostile_rules" "$T/hostile_bad"
cat >"$T/hostile_rules/h.yaml" <<'Y'
rules:
  - id: SITE-HOSTILE
    title: "T \e]0;PWNED\a \e[2J"
    category: config
    family: nccl
    pattern: 'Using network (?P<net>Zzz\S*)'
    finding:
      severity: error
      confidence: 0.5
      role: root
      explanation: "E \e]0;PWNED\a {net}"
      remediation: "R \e[2J"
    references: ["\e]8;;http://evil.example\e\\docs\e]8;;\e\\"]
    examples:
      match:
        - "h1:1:1 [0] NCCL INFO Using network ZzzNet"
      no_match:
        - "h1:1:1 [0] NCCL INFO Using network IB"
Y
printf 'rules:\n  - id: X\x1b]0;PWNED\x07\x1b[2J\n    title: x\n' >"$T/hostile_bad/e.yaml"
no_esc_out() { ! grep -q $'[\x1b\x07]' "$T/out" || { why="stdout: $(snippet "$T/out" | cat -v)"; return 1; }; }
no_esc_err() { ! grep -q $'[\x1b\x07]' "$T/err" || { why="stderr: $(snippet "$T/err" | cat -v)"; return 1; }; }
check rule_text_is_escaped_for_the_terminal 0 "$NS" explain SITE-HOSTILE --rules "$T/hostile_rules"
expect no_esc_out
expect out_has 'PWNED'
also_run 0 "$NS" rules --list --rules "$T/hostile_rules"
expect no_esc_out
expect out_has 'SITE-HOSTILE'
also_run 2 "$NS" rules --check "$T/hostile_bad"
expect no_esc_err
expect err_has 'PWNED'
end

# A site rule file that redefines a built-in rule or turns it off says so in
# every report format (text, markdown, JSON ruleset.changes, trace otherData):
# a 15-line file must not turn a real failure into a silent "OK".
mkdir -p "$T/site_override" "$T/site_off"
cat >"$T/site_override/override.yaml" <<'Y'
rules:
  - id: NCCL-CONN-CLOSED
    title: harmless
    category: connection
    family: nccl
    pattern: 'Connection closed by (?P<who>remote peer|localRank) .*'
    finding: {severity: info, confidence: 0.1, role: context, explanation: "nothing to see"}
    examples:
      match: ["h1:1:1 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer x<1>"]
      no_match: ["h1:1:1 [0] NCCL INFO Connection closed by nobody"]
Y
echo 'disable: [NCCL-CONN-CLOSED, NCCL-WARN-UNRECOGNISED]' >"$T/site_off/off.yaml"
printf 'gpu-b:2:2 [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<1>\n' >"$T/closed.log"
check site_rule_changes_are_listed_in_every_format 0 "$NS" --color never --rules "$T/site_override" "$T/closed.log"
expect out_has "^rules changed: NCCL-CONN-CLOSED overridden ($T/site_override/override.yaml:2)"
also_run 0 "$NS" --format markdown --rules "$T/site_off" "$T/closed.log"
expect out_has "rules changed: NCCL-CONN-CLOSED disabled"
expect out_has "NCCL-WARN-UNRECOGNISED disabled"
also_run 0 "$NS" --format json --rules "$T/site_override" --disable NCCL-ENV-ALGO-PROTO "$T/closed.log"
expect json_eq '[(c["id"], c["change"]) for c in d["ruleset"]["changes"]]' "[('NCCL-CONN-CLOSED', 'overridden'), ('NCCL-ENV-ALGO-PROTO', 'disabled')]"
expect json_eq 'd["ruleset"]["changes"][1]["where"]' '--disable'
also_run 0 "$NS" --format trace --rules "$T/site_off" "$T/closed.log"
expect json_eq '"NCCL-CONN-CLOSED disabled" in d["otherData"]["rule_changes"]' True
also_run 1 "$NS" --format json "$T/closed.log"
expect json_eq '"changes" in d["ruleset"]' False
end

# --- bad-input matrix -------------------------------------------------------------
head -c 20000 /dev/urandom >"$T/binary.bin"
check binary_file 1 "$NS" --format json "$T/binary.bin" "$GOOD"
expect is_json
end

printf 'gpu-a17:1:1 [0] NCCL INFO Using \0network Socket\n' >"$T/nul.log"
check nul_bytes_inside_lines 0 "$NS" --format json "$T/nul.log"
expect json_eq 'd["input"]["lines_unparsed"]["with_nul"]' 1
expect json_eq 'd["subjects"][0]["facts"].get("network")' Socket
end

printf 'gpu-a17:1:1 [0] misc/socket.cc:1 NCCL WARN socketStartConnect: Connect to 10.0.0.1<1> failed : \xff\xfe bad utf8\n' >"$T/utf8.log"
check invalid_utf8_replaced_in_json 1 "$NS" --format json "$T/utf8.log"
expect is_json
expect utf8_with_replacement
end

printf 'gpu-a17:1:1 [0] NCCL INFO Using network Socket\r\n' >"$T/crlf.log"
check crlf 0 "$NS" --format json "$T/crlf.log"
expect json_eq 'd["subjects"][0]["facts"]["network"]' Socket
end

"$PY" -c 'import sys; sys.stdout.write("x" * 100_000_000 + "\n")' >"$T/huge.log"
cat "$GOOD" >>"$T/huge.log"
check single_100MB_line 1 /usr/bin/time -f '%M' -o "$T/rss" "$NS" --format json "$T/huge.log"
expect is_json
expect json_eq 'd["input"]["lines_unparsed"]["overlong_cut"]' 1
expect json_eq 'd["input"]["lines"]' 3
expect rss_below 262144
end
rm -f "$T/huge.log"

printf 'gpu-a17:1:1 [0] NCCL INFO Using network Socket' >"$T/nonl.log"
check file_without_trailing_newline 0 "$NS" --format json "$T/nonl.log"
expect json_eq 'd["subjects"][0]["facts"]["network"]' Socket
end

: >"$T/empty.log"
check empty_file 0 "$NS" --format json "$T/empty.log"
expect json_eq 'd["input"]["lines"]' 0
end

mkdir -p "$T/emptydir"
check empty_directory 2 "$NS" "$T/emptydir"
expect err_has 'no readable input'
end

# Dot-files met by a walk are skipped and counted (a directory once), as
# ripgrep does; --hidden reads them.
mkdir -p "$T/dots/.cache"
printf 'n1:7:9 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n' >"$T/dots/rank0.log"
printf 'n1:7:9 [1] misc/socket.cc:50 NCCL WARN Net : Connection closed by remote peer 10.0.0.2<5432>\n' >"$T/dots/.rank1.log"
cp "$T/dots/rank0.log" "$T/dots/.cache/x.log"
check hidden_files_are_counted 0 "$NS" --format json "$T/dots"
expect json_eq 'd["input"]["skipped"]["hidden"]' 2
expect json_eq '[f["path"].split("/")[-1] for f in d["input"]["files"]]' "['rank0.log']"
also_run 1 "$NS" --format json --hidden "$T/dots"
expect json_eq 'd["input"]["skipped"]["hidden"]' 0
expect json_eq 'len(d["input"]["files"])' 3
also_run 0 "$NS" --color never "$T/dots"
expect out_has 'skipped: 2 hidden files .*; use --hidden to read hidden files'
end

# 'ncclscan test' beside a test/ directory runs the command; when it fails,
# stderr says how to scan the directory instead.
mkdir -p "$T/cwd/test"
cp "$GOOD" "$T/cwd/test/rank0.log"
check command_name_that_is_also_a_path 2 sh -c 'cd "$1" && exec "$2" test' - "$T/cwd" "$NS"
expect err_has "note: 'test' is a command; to scan the directory named test, run 'ncclscan ./test'"
also_run 1 sh -c 'cd "$1" && exec "$2" ./test' - "$T/cwd" "$NS"
expect out_has 'Connection refused'
end

# -q: no report, the exit status only; -V: the version.
check quiet_prints_nothing_and_keeps_the_status 1 "$NS" -q "$GOOD"
expect out_lacks .
also_run 0 "$NS" --quiet --fail-on never "$GOOD"
expect out_lacks .
end
check short_version 0 "$NS" -V
expect out_has '^ncclscan [0-9]'
end
check did_you_mean_a_mistyped_flag 2 "$NS" --fail-onn never "$GOOD"
expect err_has "did you mean '--fail-on'?"
also_run 2 "$NS" --formt json "$GOOD"
expect err_has "did you mean '--format'?"
end
# NO_COLOR disables colour only when set to something (no-color.org).
check empty_no_color_does_not_disable_color 1 sh -c 'NO_COLOR= script -qec "$1 $2" /dev/null' - "$NS" "$GOOD"
expect out_has $'\x1b\['
also_run 1 sh -c 'NO_COLOR=1 script -qec "$1 $2" /dev/null' - "$NS" "$GOOD"
expect out_lacks $'\x1b\['
end

# Progress: on a terminal's stderr once the scan runs past NCCLSCAN_PROGRESS_AFTER_MS
# (default 1000), erased at the end; never when stderr is a pipe; --no-progress and
# --progress force it off and on.
check progress_on_a_terminal_never_in_pipes 0 sh -c 'NCCLSCAN_PROGRESS_AFTER_MS=0 script -qec "$1 -q --fail-on never $2" /dev/null' - "$NS" "$GOOD"
expect out_has 'ncclscan: [0-9.]* MB read of [0-9.]* MB'
also_run 0 sh -c 'NCCLSCAN_PROGRESS_AFTER_MS=0 script -qec "$1 -q --no-progress --fail-on never $2" /dev/null' - "$NS" "$GOOD"
expect out_lacks 'MB read'
also_run 0 env NCCLSCAN_PROGRESS_AFTER_MS=0 "$NS" --fail-on never "$GOOD"
expect err_lacks 'MB read'
expect out_lacks 'MB read'
also_run 0 "$NS" -q --progress --fail-on never "$GOOD"
expect err_has 'MB read'
end

# Blank lines are lines, but not recognised ones.
printf '\n\n\nn1:7:9 [1] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n\n' >"$T/blank.log"
check blank_lines_are_not_recognised 0 "$NS" --format json "$T/blank.log"
expect json_eq '(d["input"]["lines"], d["input"]["lines_recognised"])' '(5, 1)'
end

gzip -c "$GOOD" >"$T/full.gz"
head -c 40 "$T/full.gz" >"$T/trunc.log.gz"
check truncated_gz 1 "$NS" --format json "$T/trunc.log.gz" "$GOOD"
expect is_json
expect err_has "cannot read $T/trunc.log.gz: truncated gzip stream"
expect json_eq 'd["input"]["unreadable_files"]' 1
end

printf '\x28\xb5\x2f\xfdgarbage-not-zstd-at-all' >"$T/corrupt.log.zst"
check corrupt_zst 1 "$NS" --format json "$T/corrupt.log.zst" "$GOOD"
expect is_json
expect err_has "cannot read $T/corrupt.log.zst: corrupt zstd data"
end

check missing_file 1 "$NS" --format json "$T/missing.log" "$GOOD"
expect is_json
expect err_has "^ncclscan: error: cannot read $T/missing.log: No such file or directory"
end

cp "$GOOD" "$T/secret.log"
chmod 000 "$T/secret.log"
if [ "$(id -u)" = 0 ]; then
  # root reads anything: run as nobody so the permission check is real.
  chmod 755 "$NS" 2>/dev/null
  check permission_denied 1 setpriv --reuid=nobody --regid=nogroup --clear-groups "$NS" --format json "$T/secret.log" "$GOOD"
else
  check permission_denied 1 "$NS" --format json "$T/secret.log" "$GOOD"
fi
expect is_json
expect err_has "cannot read $T/secret.log: Permission denied"
end

mkdir -p "$T/loop/a"
ln -s .. "$T/loop/a/up"
cp "$GOOD" "$T/loop/a/x.log"
check directory_symlink_loop 1 "$NS" --format json "$T/loop"
expect is_json
expect err_has 'symbolic link loop'
expect json_eq 'd["input"]["lines"]' 2
end

mkfifo "$T/fifo"
(cat "$GOOD" >"$T/fifo" &)
check fifo_on_stdin 1 sh -c "'$NS' --format json < '$T/fifo'"
expect is_json
expect json_eq 'd["input"]["lines"]' 2
end

# --- output: a failed write is an error; input text is escaped; --ranks ------------
CASE_DIR="$ROOT/corpus/sim-divergent_rank-perrank-12r3h"
check write_error_dev_full 2 sh -c "'$NS' --format json '$CASE_DIR' > /dev/full"
expect err_has '^ncclscan: error: cannot write output: No space left on device$'
end

# closed_pipe CMD...: runs CMD with stdout a pipe whose reading end is already
# closed (what `ncclscan ... | head` meets), SIGPIPE at its default.
closed_pipe() {
  "$PY" -c 'import os,subprocess,sys; r,w=os.pipe(); os.close(r); sys.exit(subprocess.call(sys.argv[1:], stdout=w))' "$@"
}
# A reader that stopped reading (`ncclscan ... | head -1`) took what it wanted:
# no error, and the exit status the scan earned (1: findings), the same for a
# report larger than the pipe buffer (EPIPE) as for one that fits in it.
big_report="$T/big_report.log"
"$PY" -c '
import sys
with open(sys.argv[1], "w") as f:
    for i in range(3000):
        f.write(f"gpu-b:{i}:{i} [1] NCCL INFO Invalid value x for NCCL_X{i}, using default 1\n")
        f.write(f"gpu-b:{i}:{i} [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<1>\n")' "$big_report"
check write_error_closed_pipe 1 closed_pipe "$NS" --format json "$CASE_DIR"
expect no_err
also_run 1 closed_pipe "$NS" --format json "$big_report"
expect no_err
also_run 1 bash -o pipefail -c "'$NS' --format json '$big_report' | head -c 100 >/dev/null"
expect no_err
also_run 1 bash -o pipefail -c "'$NS' --format json '$GOOD' | head -c 100 >/dev/null"
expect no_err
also_run 0 closed_pipe "$NS" rules --list
expect no_err
end

# no_raw_controls: stdout is UTF-8 with no C0 control but tab and newline, no DEL, C1 or bidi control.
no_raw_controls() {
  "$PY" -c '
import sys
t = open(sys.argv[1], "rb").read().decode("utf-8")
bad = [c for c in t if (ord(c) < 32 and c not in "\t\n") or 0x7f <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e
       or 0x2066 <= ord(c) <= 0x2069 or ord(c) in (0x200e, 0x200f, 0x61c)]
sys.exit(1 if bad else 0)' "$T/out" 2>/dev/null || { why="stdout: $(snippet "$T/out")"; return 1; }
}
evil="$T/evil"$'\n```\n<img src=x onerror=alert(1)>\e[2J.log'
printf 'n1:7:7 [0] transport/frob.cc:1 NCCL WARN <img src=x> [x](javascript:alert(1)) @channel \xe2\x80\xae \xc2\x9b \e[31m\n' >"$evil"
check markdown_escapes_hostile_input 1 "$NS" --format markdown "$evil"
expect no_raw_controls
expect out_has '&lt;img src=x&gt; \\\[x\\\](javascript:alert(1)) @'
expect out_lacks '^\*\*Why:\*\*.*@channel'
expect out_has '^````text$'
also_run 1 "$NS" --color never "$evil"
expect no_raw_controls
expect out_has '\\u202e \\u009b'
end

check ranks_table 0 "$NS" --ranks --color never "$ROOT/corpus/sim-straggler-perrank-2r1h"
expect out_has '^  rank  host          pid   devices  NCCL    transport  last seq           first error$'
expect out_has '^  0     gpu-node-000  1812  0        2.18.3  IB         opCount 27 (0x1b)  -$'
expect out_has 'only up to opCount 27 (0x1b) while the others reached 39 (0x27)'
end

# Partials: two shares of a case, merged in reverse order, print what one scan
# prints (text, exit status); bad partials are clear errors, exit 2.
CASE="$ROOT/corpus/real-dev-shm-exhausted-2node-socket"
mapfile -t case_logs < <(find "$CASE" -type f ! -name expected.json ! -name truth.json ! -name '*.md' | LC_ALL=C sort)
"$NS" --color never "${case_logs[@]}" >"$T/scan.txt" 2>/dev/null
half=$(( (${#case_logs[@]} + 1) / 2 ))
check partial_merge_equals_scan 0 "$NS" partial -o "$T/p1.partial" "${case_logs[@]:0:$half}"
also_run 0 "$NS" partial -o "$T/p2.partial" "${case_logs[@]:$half}"
also_run 1 "$NS" merge --color never "$T/p2.partial" "$T/p1.partial"
expect same_out_as "$T/scan.txt"
expect out_has '^FAIL '
end

check partial_needs_output 2 "$NS" partial "$GOOD"
expect err_has '^ncclscan: error: partial needs -o FILE, the partial to write'
end

check merge_rejects_a_log 2 "$NS" merge "$T/p1.partial" "$GOOD"
expect err_has "^ncclscan: error: $GOOD: not an ncclscan partial (made by 'ncclscan partial -o FILE')"
expect out_lacks .
end

# A link planted at FILE.tmp (or at FILE) in a shared partials directory is
# never written through: the partial is written to a temporary file created
# exclusively beside FILE, then renamed.
mkdir -p "$T/shared"
echo 'victim data' >"$T/victim.txt"
echo 'victim 2' >"$T/victim2.txt"
ln -s ../victim.txt "$T/shared/part-0.partial.tmp"
ln -s ../victim2.txt "$T/shared/all.partial.tmp"
ln -s ../victim2.txt "$T/shared/all.partial"
check partial_output_never_writes_through_a_planted_link 0 "$NS" partial -o "$T/shared/part-0.partial" "$GOOD"
also_run 0 "$NS" merge -o "$T/shared/all.partial" "$T/shared/part-0.partial"
expect grep -qx 'victim data' "$T/victim.txt"
expect grep -qx 'victim 2' "$T/victim2.txt"
expect test -f "$T/shared/part-0.partial" -a ! -L "$T/shared/part-0.partial"
expect test -f "$T/shared/all.partial" -a ! -L "$T/shared/all.partial"
also_run 1 "$NS" merge --format json "$T/shared/all.partial"
expect json_eq 'd["input"]["lines"]' 2
end

# The --help recipe on two nodes (simulated: two directories): each node's
# `partial -o nN.part /local/logs/` names its own local/logs/train.log; the
# merge reads both (one input each), as one scan of both files does. Two stdin
# partials are two inputs too; one file under two spellings is one.
M="$T/nodes"
mkdir -p "$M/nodeA/local/logs" "$M/nodeB/local/logs" "$M/job"
printf 'gpu-a:11:11 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n' >"$M/nodeA/local/logs/train.log"
printf 'gpu-b:22:22 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\ngpu-b:22:22 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<1>\n' >"$M/nodeB/local/logs/train.log"
cp "$M/nodeA/local/logs/train.log" "$M/job/r0.log"
cp "$M/nodeB/local/logs/train.log" "$M/job/r1.log"
"$NS" --format json "$M/nodeA/local/logs/train.log" "$M/nodeB/local/logs/train.log" >"$T/both.json"
both_json() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["input"]["lines"], len(d["input"]["files"]), [f["rule"] for f in d["findings"]], d["subjects"])' "$1"; }
same_diagnosis_as_both() {
  [ "$(both_json "$T/out")" = "$(both_json "$T/both.json")" ] || { why="got $(both_json "$T/out" | head -c 200)"; return 1; }
}
check merge_tells_inputs_apart_by_what_they_are 0 sh -c "cd '$M/nodeA' && '$NS' partial -o ../A.part local/logs/"
also_run 0 sh -c "cd '$M/nodeB' && '$NS' partial -o ../B.part local/logs/"
also_run 1 "$NS" merge --format json "$M/B.part" "$M/A.part"
expect same_diagnosis_as_both
also_run 0 sh -c "'$NS' partial -o '$M/SA.part' < '$M/nodeA/local/logs/train.log'"
also_run 0 sh -c "'$NS' partial -o '$M/SB.part' < '$M/nodeB/local/logs/train.log'"
also_run 1 "$NS" merge --format json "$M/SA.part" "$M/SB.part"
expect same_diagnosis_as_both
also_run 0 "$NS" partial -o "$M/P1.part" "$M/job"
also_run 0 sh -c "cd '$M' && '$NS' partial -o P2.part ./job/r1.log"
also_run 1 sh -c "cd '$M' && '$NS' merge --format json P1.part P2.part"
expect json_eq 'd["input"]["lines"]' 3
expect json_eq 'len(d["input"]["files"])' 2
expect json_eq 'd["input"]["skipped"]["duplicate"]' 1
expect json_eq '[f["count"] for f in d["findings"] if f["rule"] == "NCCL-CONN-CLOSED"]' '[1]'
end

# A merge's memory is bounded by what partials really hold: a frame of a GiB
# of zeros (a few hundred KB) fails at its first field, a partial naming three
# million empty subjects fails at the subject cap, and a file that does not
# start with the magic (/dev/zero) is not read on. Each under 256 MiB.
printf 'ncclscan-partial\n\001' >"$T/bomb.part"
head -c 1G /dev/zero | zstd -q -3 >>"$T/bomb.part"
"$PY" - "$T/p1.partial" "$T/subjects.part" <<'PY'
import struct, subprocess, sys
MAGIC = b'ncclscan-partial\n'
def U(v):
    b = bytearray()
    while v >= 0x80: b.append((v & 0x7f) | 0x80); v >>= 7
    b.append(v); return bytes(b)
def S(x): return U(len(x)) + x
class R:
    def __init__(s, b): s.b = b; s.p = 0
    def U(s):
        v = sh = 0
        while True:
            c = s.b[s.p]; s.p += 1; v |= (c & 0x7f) << sh; sh += 7
            if not c & 0x80: return v
    def S(s):
        n = s.U(); x = s.b[s.p:s.p + n]; s.p += n; return x
raw = open(sys.argv[1], 'rb').read()
body = subprocess.run(['zstd', '-q', '-d', '-c'], input=raw[len(MAGIC) + 1:], stdout=subprocess.PIPE, check=True).stdout
r = R(body); sig = r.S(); writer = r.S()
n = 3_000_000
state = (U(1) + S(b'x.log') + U(1) + U(1) + S(b'') + U(1) + U(1) + S(b'') + U(1)  # one file
         + U(0) + U(0) + U(0) + U(0)                                               # skipped, origins
         + U(n) + (b'\x00\x01\x01\x00' + b'\x00' * 8) * n)                        # n empty subjects
state += U(0) * 13 + U(0) * 17                                                     # the rest, counters
out = S(sig) + S(writer) + U(0) + U(1) + S(b'x.log') + S(state)
z = subprocess.run(['zstd', '-q', '-c', '-3', '--check'], input=out, stdout=subprocess.PIPE, check=True).stdout
open(sys.argv[2], 'wb').write(MAGIC + raw[len(MAGIC):len(MAGIC) + 1] + z)
PY
check merge_memory_is_bounded 2 /usr/bin/time -f '%M' -o "$T/rss" "$NS" merge "$T/bomb.part"
expect rss_below 262144
expect err_has "^ncclscan: error: $T/bomb.part: "
also_run 2 /usr/bin/time -f '%M' -o "$T/rss" "$NS" merge "$T/subjects.part"
expect rss_below 262144
expect err_has "^ncclscan: error: $T/subjects.part: corrupt partial"
also_run 2 /usr/bin/time -f '%M' -o "$T/rss" timeout 20 "$NS" merge /dev/zero
expect rss_below 262144
expect err_has "^ncclscan: error: /dev/zero: not an ncclscan partial"
end

# A merge accepts only values a scan makes: a finding count of -5 or an
# evidence line of -7 is a corrupt partial (exit 2), never JSON that breaks
# docs/diagnosis.schema.json; the same finding with count 5, line 7 merges.
"$PY" - "$T/p1.partial" "$T" <<'PY'
import struct, subprocess, sys
MAGIC = b'ncclscan-partial\n'
def U(v):
    b = bytearray()
    while v >= 0x80: b.append((v & 0x7f) | 0x80); v >>= 7
    b.append(v); return bytes(b)
def I(v): return U(((v << 1) ^ (v >> 63)) & ((1 << 64) - 1))
def S(x): return U(len(x)) + (x.encode() if isinstance(x, str) else x)
def D(d): return struct.pack('<d', d)
class R:
    def __init__(s, b): s.b = b; s.p = 0
    def U(s):
        v = sh = 0
        while True:
            c = s.b[s.p]; s.p += 1; v |= (c & 0x7f) << sh; sh += 7
            if not c & 0x80: return v
    def S(s):
        n = s.U(); x = s.b[s.p:s.p + n]; s.p += n; return x
raw = open(sys.argv[1], 'rb').read()
body = subprocess.run(['zstd', '-q', '-d', '-c'], input=raw[len(MAGIC) + 1:], stdout=subprocess.PIPE, check=True).stdout
r = R(body); sig = r.S(); writer = r.S()
for name, count, line in (('neg', -5, -7), ('pos', 5, 7)):
    finding = (S('K') + I(0) + S('') + U(0) + U(0)
               + U(1) + I(0) + I(line) + S('evidence text') + D(-1.0) + I(-1) + I(0) + I(-1) + I(-1)
               + I(count) + D(-1.0) + I(0) + I(1) + I(-1) + D(-1.0) + I(0) + I(1) + S(''))
    # The parts in turn (engine/state/parts.h): files (one, then skipped,
    # origins, labels), subjects, communicators, identity clues, line findings
    # (this one, no open WARN), dumps, counters (17, then the first and last year).
    state = (U(1) + S('x.log') + U(1) + U(1) + S('') + I(-1) + I(-1) + S('') + I(-1) + U(0) * 5
             + U(0) * 2 + U(0) * 3 + U(0) * 5 + U(1) + finding + U(0) + U(0) + U(0) * 17 + U(0) * 2)
    out = S(sig) + S(writer) + U(0) + U(1) + S('x.log') + S(state)
    z = subprocess.run(['zstd', '-q', '-c', '-3', '--check'], input=out, stdout=subprocess.PIPE, check=True).stdout
    open(f'{sys.argv[2]}/{name}.part', 'wb').write(MAGIC + raw[len(MAGIC):len(MAGIC) + 1] + z)
PY
check merge_rejects_values_a_scan_never_makes 2 "$NS" merge --format json "$T/neg.part"
expect err_has "^ncclscan: error: $T/neg.part: corrupt partial"
also_run 0 "$NS" merge --format json --fail-on never "$T/pos.part"
expect json_eq '[(f["count"], f["evidence"][0]["line"]) for f in d["findings"]]' '[(5, 7)]'
end

# Flight Recorder entries held have a total bound (repro e4): 20 dumps of 1 KiB
# of .gz, each a list of 600 k entries sharing one dict through the pickle memo,
# held 4.5 GB; each now keeps its newest entries, and the rest are counted.
mkdir -p "$T/fr-bomb"
"$PY" - "$T/fr-bomb" <<'PY'
import gzip, sys
def su(s):
    b = s.encode(); return b'\x8c' + bytes([len(b)]) + b
body = (b'\x80\x02}q\x00(' + su('version') + su('2.4') + su('entries') + b']q\x01(' + b'}q\x02'
        + b'h\x02' * (600000 - 1) + b'e' + b'u.')
for i in range(20):
    with gzip.open(f'{sys.argv[1]}/nccl_trace_rank_{i}.gz', 'wb', compresslevel=9) as f: f.write(body)
PY
check flight_recorder_memory_is_bounded 0 /usr/bin/time -f '%M' -o "$T/rss" "$NS" --format json "$T/fr-bomb"
expect rss_below 262144
expect json_eq 'd["input"]["limits"]["flight_recorder_entries"]["over"]' 11919744
end

head -c 40 "$T/p1.partial" >"$T/cut.partial"
check merge_rejects_truncated_partial 2 "$NS" merge --format json "$T/cut.partial"
expect err_has "^ncclscan: error: $T/cut.partial: truncated partial"
expect out_lacks .
end

# The first screen (issue 23): the 12-rank example on an 80-column terminal fits
# in 40 lines with the culprit in the headline; its consequences are one row
# each; -v shows every finding in full (a "fix:" line each, as before).
TWELVE="$ROOT/corpus/sim-divergent_rank-perrank-12r3h"
check first_screen_names_the_culprit_in_40_lines 1 sh -c 'COLUMNS=80 script -qec "$1 --color never $2" /dev/null' - "$NS" "$TWELVE"
expect lines_at_most 40
expect out_has '^HUNG Divergent rank behind a collective timeout (rank 9 on gpu-node-002)'
expect out_has '^consequences (-v shows each in full):'
expect out_has '^  \[4\] ERROR    Collective operation timeout (watchdog) (ranks 0-11 on 3 hosts'
also_run 1 "$NS" --color never "$TWELVE"
expect lines_at_most 40
expect count_is '^    fix: ' 1
end

check verbose_shows_every_finding_in_full 1 "$NS" -v --color never "$TWELVE"
expect count_is '^    fix: ' 14
expect out_lacks '^consequences'
expect out_has '^    ranks 0-11 on gpu-node-000,gpu-node-001,gpu-node-002 ALLREDUCE #6'
end

# A victim's report is never headlined as if the reporters were the culprit.
printf '%s\n' '[rank0]:[E1122 11:20:32.198875025 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.' \
  '[rank1]:[E1122 11:20:32.198875025 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.' >"$T/victims.log"
check headline_names_reporters_as_such 1 "$NS" --color never "$T/victims.log"
expect out_has '(reported by ranks 0-1)$'
end

# Many ranks claimed twice: the head says the input looks like several jobs,
# lists three conflicts and counts the rest (all with -v).
mkdir -p "$T/jobs"
for j in 0 1 2 3 4 5 6 7 8 9; do
  for r in 0 1; do
    printf 'node%s:%s:%s [0] NCCL INFO cudaDriverVersion 12040\nnode%s:%s:%s [0] NCCL INFO NCCL version 2.%s.3+cuda12.4\nnode%s:%s:%s [0] NCCL INFO comm 0x5%s%s commHash 0x%s%s rank %s nRanks 2 nNodes 1 localRanks 2 localRank %s MNNVL 0\n' \
      "$j" "10$r" "10$r" "$j" "10$r" "10$r" "$((18 + j % 3))" "$j" "10$r" "10$r" "$j" "$r" "$j" "$r" "$r" "$r" >"$T/jobs/job$j-rank$r.log"
  done
done
check identity_conflicts_grouped_as_several_jobs 0 "$NS" --color never --fail-on never "$T/jobs"
expect out_has '^this looks like several jobs: [0-9]* identity conflicts'
expect count_is '^identity: ' 4
expect out_has '^identity: and [0-9]* more conflicts like these (-v lists them)'
also_run 0 "$NS" -v --color never --fail-on never "$T/jobs"
expect out_lacks 'more conflicts like these'
end

# A binary named on the command line is an error (exit 2 alone; beside logs,
# the logs are still read and the binary is listed as unreadable); one a walk
# meets is skipped and counted, as before.
check named_binary_is_an_error 2 "$NS" /bin/true
expect err_has 'a binary file, not a log'
also_run 0 "$NS" --format json --fail-on never /bin/true "$GOOD"
expect json_eq '[f["error"][:14] for f in d["input"]["files"] if "error" in f]' "['a binary file,']"
end

# A zip is an archive: its members are read as a tar's are.
mkdir -p "$T/zipsrc"
cp "$TWELVE"/gpu-node-002/rank9.log "$T/zipsrc/rank9.log"
cp "$TWELVE"/gpu-node-000/rank0.log "$T/zipsrc/rank0.log"
"$PY" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED); [z.write(p, p.rsplit("/", 1)[1]) for p in sys.argv[2:]]' "$T/job.zip" "$T/zipsrc/rank0.log" "$T/zipsrc/rank9.log"
check zip_read_member_by_member 1 "$NS" --format json "$T/job.zip"
expect json_eq '[f["path"].rsplit("/", 1)[1] for f in d["input"]["files"]]' "['job.zip:rank0.log', 'job.zip:rank9.log']"
expect json_eq 'd["input"]["ranks"]["list"]' '0,9'
end

# --files: what a scan would read and each skip with its reason; nothing scanned.
mkdir -p "$T/listing/.hid"
cp /bin/true "$T/listing/prog"
echo '# notes' >"$T/listing/README.md"
echo 'x' >"$T/listing/.hid/a.log"
cp "$TWELVE"/gpu-node-002/rank9.log "$T/listing/rank9.log"
check files_lists_reads_and_skips 0 "$NS" --files "$T/listing" "$T/job.zip"
expect out_has "^read  $T/listing/rank9.log\$"
expect out_has "^read  $T/job.zip:rank0.log\$"
expect out_has "^skip  $T/listing/prog (binary)\$"
expect out_has "^skip  $T/listing/README.md (not a log"
expect out_has "^skip  $T/listing/.hid (hidden; --hidden reads it)\$"
expect out_lacks 'HUNG'
also_run 2 "$NS" --files "$T/listing/prog"
expect err_has 'no readable input'
end

# --rank R / --host H: only what concerns that rank or host, numbered as in the
# whole report, with the rank's last line; a rank not in the logs says so.
check rank_and_host_show_what_one_did 1 "$NS" --color never --rank 9 "$TWELVE"
expect out_has '^showing rank 9 on gpu-node-002 (pid 10181): [0-9]* of 14 findings concern it; its last line: .*rank9.log:'
expect out_has '^\[1\] CRITICAL Divergent rank behind a collective timeout'
expect out_has 'gpu-node-002/rank9.log:28:'
expect out_lacks 'gpu-node-000/rank3.log:30:'
also_run 1 "$NS" --color never --host gpu-node-000 "$TWELVE"
expect out_has '^showing host gpu-node-000 (4 ranks):'
also_run 1 "$NS" --color never --rank 99 "$TWELVE"
expect out_has '^showing rank 99 (not in these logs'
expect out_lacks '^\[1\]'
also_run 2 "$NS" --rank -3 "$TWELVE"
end

# -C N: the lines around each evidence line, numbered, from the file itself.
check context_lines_around_evidence 1 "$NS" --color never -C 2 --rank 9 "$TWELVE"
expect out_has '^        26- gpu-node-002:10181:10181 \[1\] NCCL INFO AllReduce: opCount 4'
expect out_has '^        30- '
also_run 1 "$NS" --color never --rank 9 "$TWELVE"
expect out_lacks '^        26- '
end

# redact: -o is required, standard input is refused (it cannot be read twice).
check redact_needs_output_and_files 2 "$NS" redact "$TWELVE"
expect err_has 'redact needs -o DIR'
also_run 2 sh -c "printf 'n1:1:1 [0] NCCL INFO Using network IB\n' | '$NS' redact -o '$T/red-stdin'"
expect err_has 'not standard input'
end

# redact: a copy with the hosts and addresses replaced, names and contents, that a
# scan diagnoses as it diagnoses the original (the culprit rank kept, its host renamed);
# the map, kept private, says which pseudonym is which host; --key keeps them across runs.
check redact_writes_a_copy_safe_to_share 0 "$NS" redact --key k1 --map "$T/red.map" -o "$T/red" "$TWELVE"
expect err_has '^ncclscan: redacted 15 files'
also_run 0 sh -c "! grep -rqE 'gpu-node-0|10\.0\.0\.' '$T/red' && ! find '$T/red' | grep -q gpu-node && stat -c %a '$T/red.map'"
expect out_has '^600$'
also_run 1 sh -c "'$NS' --color never \$(find '$T/red' -type f | sort)"
expect out_has "^HUNG Divergent rank behind a collective timeout (rank 9 on $(awk -F'\t' '$1=="gpu-node-002"{print $2}' "$T/red.map" 2>/dev/null || true)"
also_run 0 "$NS" redact -q --key k1 -o "$T/red2" "$TWELVE"
also_run 0 diff -r "$T/red" "$T/red2"
end

finish
[ "$fail" = 0 ]
