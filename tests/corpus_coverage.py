#!/usr/bin/env python3
"""Rule coverage of the regression corpus.

usage: corpus_coverage.py NCCLSCAN CORPUS_DIR [--rules DIR ...]

Every rule or correlation that can produce a finding must be exercised by the
corpus in both directions:
  positive: it is the expected primary ("primary": {"rule": ID}) or listed in
            "present" of at least one case;
  negative: it is listed in "absent" of at least one case.
The ids and whether they have a finding come from `NCCLSCAN rules --list`
(2nd column = kind: `line` rules whose severity column reads `facts` have no
finding; correlations always have one). Cases are directories holding
expected.json, found the way `ncclscan test` finds them.

Prints the uncovered rule-polarities and a closing "N passed, N failed" line
(one check per rule and polarity); exits 1 if any is missing, 2 on usage or
input errors.
"""
import json
import os
import subprocess
import sys


def usage(msg=None):
    if msg:
        print("corpus_coverage.py: error: " + msg, file=sys.stderr)
    print("usage: corpus_coverage.py NCCLSCAN CORPUS_DIR [--rules DIR ...]", file=sys.stderr)
    sys.exit(2)


def list_rules(binary, rule_dirs):
    cmd = [binary, "rules", "--list"]
    for d in rule_dirs:
        cmd += ["--rules", d]
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    except OSError as e:
        usage("cannot run %s: %s" % (binary, e))
    if out.returncode != 0:
        sys.stderr.write(out.stderr.decode("utf-8", "replace"))
        usage("`%s` failed (exit %d)" % (" ".join(cmd), out.returncode))
    rules = {}  # id -> (kind, has_finding)
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        cols = line.split()
        if len(cols) < 3:
            continue
        rid, kind, sev = cols[0], cols[1], cols[2]
        if not rid[:1].isupper():
            continue
        has_finding = not (kind == "line" and sev == "facts")
        rules[rid] = (kind, has_finding)
    if not rules:
        usage("`%s` listed no rules" % " ".join(cmd))
    if not any(has_finding for _, has_finding in rules.values()):
        # Nothing to check would read "0 passed, 0 failed" and pass.
        usage("`%s` listed no rule with a finding" % " ".join(cmd))
    return rules


def find_cases(root):
    """Directories holding expected.json, sorted; a case's subdirectories are not searched."""
    cases = []

    def walk(d, depth):
        if depth > 8:
            return
        if os.path.isfile(os.path.join(d, "expected.json")):
            cases.append(d)
            return
        try:
            names = sorted(os.listdir(d))
        except OSError:
            return
        for n in names:
            p = os.path.join(d, n)
            if not n.startswith(".") and os.path.isdir(p):
                walk(p, depth + 1)

    walk(root.rstrip("/") or "/", 0)
    return cases


def rule_of(entry):
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("rule"), str):
        return entry["rule"]
    return None


def main(argv):
    args = argv[1:]
    rule_dirs = []
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a == "--rules":
            if i + 1 >= len(args):
                usage("--rules needs a directory")
            rule_dirs.append(args[i + 1])
            i += 2
            continue
        pos.append(a)
        i += 1
    if len(pos) != 2:
        usage()
    binary, corpus = pos
    if not os.path.isdir(corpus):
        usage("%s is not a directory" % corpus)

    rules = list_rules(binary, rule_dirs)
    cases = find_cases(corpus)
    if not cases:
        usage("no cases (directories with expected.json) under %s" % corpus)

    positive = {}  # rule id -> [case names]
    negative = {}
    bad = 0
    for case in cases:
        name = os.path.relpath(case, corpus)
        try:
            with open(os.path.join(case, "expected.json"), encoding="utf-8") as f:
                ex = json.load(f)
        except (OSError, ValueError) as e:
            print("error: %s/expected.json: %s" % (name, e), file=sys.stderr)
            bad += 1
            continue
        if not isinstance(ex, dict):
            print("error: %s/expected.json: not a JSON object" % name, file=sys.stderr)
            bad += 1
            continue
        mentioned = []
        prim = ex.get("primary")
        if isinstance(prim, dict) and rule_of(prim):
            positive.setdefault(rule_of(prim), []).append(name)
            mentioned.append(rule_of(prim))
        for e in ex.get("present") or []:
            r = rule_of(e)
            if r:
                positive.setdefault(r, []).append(name)
                mentioned.append(r)
        for e in ex.get("absent") or []:
            r = rule_of(e)
            if r:
                negative.setdefault(r, []).append(name)
                mentioned.append(r)
        for r in mentioned:
            if r not in rules:
                print("warning: %s: unknown rule id %s" % (name, r), file=sys.stderr)
            elif not rules[r][1]:
                print("warning: %s: %s has no finding (facts only); asserting it checks nothing" % (name, r),
                      file=sys.stderr)

    passed = failed = 0
    missing = []
    for rid in sorted(rules):
        kind, has_finding = rules[rid]
        if not has_finding:
            continue
        for polarity, table in (("positive", positive), ("negative", negative)):
            if table.get(rid):
                passed += 1
            else:
                failed += 1
                missing.append((rid, kind, polarity))
    for rid, kind, polarity in missing:
        where = "primary/present" if polarity == "positive" else "absent"
        print("UNCOVERED %-28s %-9s %s (no case lists it in %s)" % (rid, kind, polarity, where))
    n_rules = sum(1 for r in rules.values() if r[1])
    print("%d rules with findings, %d cases%s" % (n_rules, len(cases),
                                                  ", %d unreadable" % bad if bad else ""))
    print("%d passed, %d failed" % (passed, failed))
    if bad:
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
