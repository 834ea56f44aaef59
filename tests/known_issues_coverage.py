#!/usr/bin/env python3
"""Every known issue of the rules is exercised by the corpus.

usage: known_issues_coverage.py NCCLSCAN CORPUS_DIR [-v]

A known issue is a structured entry of a rule's `references:` (docs/rules.md §2: url, title,
affected, fixed_in). Its rule must fire, carrying it, in at least one corpus case: a case is a
directory holding expected.json or truth.json, scanned as `NCCLSCAN --format json` scans it.
A version-bound known issue (`affected_only: true`) must moreover be seen in a case whose log
runs an affected version (status "affected"): that is the case showing the rule fires where it
should, not only where the version is unknown.

Prints one line per known issue (PASS/FAIL, rule, url, the cases and statuses seen; -v lists
every case), the counts (known issues, distinct addresses, version-bound) and a closing
"N passed, N failed"; exits 1 if one is not exercised, 2 on usage or input errors.
"""
import json
import os
import subprocess
import sys


def fail_usage(msg):
    print("known_issues_coverage.py: error: " + msg, file=sys.stderr)
    print("usage: known_issues_coverage.py NCCLSCAN CORPUS_DIR [-v]", file=sys.stderr)
    sys.exit(2)


def run_json(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode not in (0, 1):
        fail_usage("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.decode(errors="replace")[:300]))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        fail_usage("%s printed no JSON: %s" % (" ".join(cmd), e))


def cases(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "expected.json" in filenames or "truth.json" in filenames:
            out.append(dirpath)
    return sorted(out)


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv[1:]
    if len(args) != 2:
        fail_usage("expected NCCLSCAN and CORPUS_DIR")
    binary, corpus = args
    listed = run_json([binary, "rules", "--list", "--format", "json"])
    issues = {}  # (rule, url, title) -> affected_only
    for r in listed["rules"]:
        if not r["enabled"]:
            continue
        for k in r.get("known_issues", []):
            issues[(r["id"], k["url"], k["title"])] = k["affected_only"]
    if not issues:
        fail_usage("no rule has a known issue (does `rules --list --format json` list them?)")

    seen = {key: [] for key in issues}  # key -> [(case, status)]
    all_cases = cases(corpus)
    if not all_cases:
        fail_usage("no corpus cases under " + corpus)
    for case in all_cases:
        d = run_json([binary, "--format", "json", "--fail-on", "never", case])
        name = os.path.relpath(case, corpus)
        for f in d["findings"]:
            for k in f.get("known_issues", []):
                key = (f["rule"], k["url"], k["title"])
                if key in seen and (name, k["status"]) not in seen[key]:
                    seen[key].append((name, k["status"]))

    passed = failed = 0
    for key in sorted(issues):
        rule, url, title = key
        hits = seen[key]
        ok = bool(hits) and (not issues[key] or any(s == "affected" for _, s in hits))
        shown = hits if verbose else hits[:3]
        where = ", ".join("%s (%s)" % h for h in shown) + (" ..." if len(hits) > len(shown) else "")
        if ok:
            passed += 1
            print("PASS %s %s: %s" % (rule, url, where))
        else:
            failed += 1
            why = "no corpus case where the rule fires with it" if not hits else \
                "version-bound, but no case runs an affected version (seen: %s)" % where
            print("FAIL %s %s (%s): %s" % (rule, url, title, why))
    distinct = {(url, title) for _, url, title in issues}
    print("%d known issues (%d distinct, %d addresses, %d version-bound) on %d rules; %d corpus cases scanned" % (
        len(issues), len(distinct), len({u for u, _ in distinct}), sum(1 for v in issues.values() if v),
        len({r for r, _, _ in issues}), len(all_cases)))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
