#!/usr/bin/env python3
"""Validates ncclscan JSON output against docs/diagnosis.schema.json.

usage: validate_json.py SCHEMA NCCLSCAN CORPUS_DIR
Runs `NCCLSCAN --format json` on every case of the corpus (and, for a case whose
input is one file, on that file through stdin) and validates each document; also
checks that -j1 and -j2 outputs are identical, and that every run exits 0 or 1
(1: findings at or above --fail-on, or unreadable input), never 2 (usage) or by a
signal.
"""
import json
import os
import subprocess
import sys

import jsonschema


def run(cmd, stdin=None):
    """Runs cmd; returns (stdout, problem) where problem says why the exit status is wrong, or None."""
    p = subprocess.run(cmd, input=stdin, capture_output=True)
    if p.returncode in (0, 1):
        return p.stdout, None
    err = p.stderr.decode("utf-8", "replace").strip()[:300]
    if p.returncode < 0:
        how = "killed by signal %d" % -p.returncode
    else:
        how = "exit %d" % p.returncode
    return p.stdout, "%s, want 0 or 1 (stderr: %s)" % (how, err)


def expand(ranges):
    """'0-2,5' -> [0, 1, 2, 5]."""
    out = []
    for part in filter(None, ranges.split(",")):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def contract(doc):
    """What the schema cannot say: the bot contract's cross-field promises."""
    errors = []
    findings = doc.get("findings", [])
    by_fp = {f["fingerprint"]: f for f in findings}
    iso = None
    for i, f in enumerate(findings):
        for where, who in (("", f), ("suspects.", f["suspects"]), ("reporters.", f["reporters"])):
            if who["rank_ids"] != expand(who["ranks"]):
                errors.append("findings/%d/%srank_ids %s is not ranks '%s'" % (i, where, who["rank_ids"], who["ranks"]))
        for fp in f["explained_by_findings"]:
            other = by_fp.get(fp)
            if other is None:
                if len(findings) < 200:
                    errors.append("findings/%d explained_by_findings names %s, no finding has it" % (i, fp))
            elif f["fingerprint"] not in other["explains"] or other["rule"] not in f["explained_by"]:
                errors.append("findings/%d explained by %s, which does not say it explains it" % (i, fp))
        for fp in f["explains"]:
            other = by_fp.get(fp)
            if other is not None and f["fingerprint"] not in other["explained_by_findings"]:
                errors.append("findings/%d explains %s, which does not name it" % (i, fp))
        # One clock for a document: ISO 8601 everywhere or nowhere.
        times = [f["first_seen"], f["last_seen"]] + [e["time"] for e in f["evidence"]]
        for t in filter(None, times):
            this = "T" in t
            if iso is None:
                iso = this
            elif iso != this:
                errors.append("findings/%d mixes ISO 8601 and MM-DD times (%s)" % (i, t))
    return errors


def validate(validator, name, out):
    """Prints PASS/FAIL for one JSON document; returns 1 if it failed."""
    try:
        doc = json.loads(out)
    except ValueError as e:
        print("FAIL", name, ": invalid JSON:", e)
        return 1
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    if not errors:
        problems = contract(doc)
        if problems:
            print("FAIL", name)
            for p in problems[:5]:
                print("   ", p)
            return 1
    if errors:
        print("FAIL", name)
        for e in errors[:5]:
            print("   ", "/".join(str(x) for x in e.path), ":", e.message)
        return 1
    print("PASS", name)
    return 0


def closed(schema):
    """The schema with every object that lists its properties closed to others.

    The published schema lets readers meet fields of a later minor version; our
    own output must hold only the fields it documents, so the test closes it."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


def main():
    schema_path, exe, corpus = sys.argv[1:4]
    with open(schema_path) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(closed(schema))
    cases = sorted(root for root, _, files in os.walk(corpus) if "expected.json" in files)
    if not cases:
        print("no corpus cases under", corpus)
        return 1
    checks = failed = 0
    for case in cases:
        logs = [os.path.join(case, n) for n in sorted(os.listdir(case))
                if n not in ("expected.json", "truth.json", "golden.json", "SOURCE.md", "README.md")]
        checks += 1
        outs = []
        problems = []
        for jobs in ("1", "2"):
            out, problem = run([exe, "--format", "json", "--fail-on", "never", "-j", jobs] + logs)
            outs.append(out)
            if problem:
                problems.append("-j%s: %s" % (jobs, problem))
        if problems:
            print("FAIL", case, ":", "; ".join(problems))
            failed += 1
        elif outs[0] != outs[1]:
            print("FAIL", case, ": -j1 and -j2 outputs differ")
            failed += 1
        else:
            failed += validate(validator, case, outs[0])
        # The same input through stdin, where it is one file.
        if len(logs) == 1 and os.path.isfile(logs[0]):
            checks += 1
            name = case + " (stdin)"
            with open(logs[0], "rb") as f:
                out, problem = run([exe, "--format", "json", "--fail-on", "never"], stdin=f.read())
            if problem:
                print("FAIL", name, ":", problem)
                failed += 1
            else:
                failed += validate(validator, name, out)
    print(f"{checks - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
