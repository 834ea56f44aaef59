#!/usr/bin/env python3
"""Validates ncclscan JSON output against docs/diagnosis.schema.json.

usage: validate_json.py SCHEMA NCCLSCAN CORPUS_DIR
Runs `NCCLSCAN --format json` on every case of the corpus (and on stdin input)
and validates each document; also checks that -j1 and -j2 outputs are identical.
"""
import json
import os
import subprocess
import sys

import jsonschema


def main():
    schema_path, exe, corpus = sys.argv[1:4]
    with open(schema_path) as f:
        schema = json.load(f)
    validator = jsonschema.Draft202012Validator(schema)
    cases = sorted(root for root, _, files in os.walk(corpus) if "expected.json" in files)
    if not cases:
        print("no corpus cases under", corpus)
        return 1
    failed = 0
    for case in cases:
        logs = [os.path.join(case, n) for n in sorted(os.listdir(case))
                if n not in ("expected.json", "SOURCE.md", "README.md")]
        outs = []
        for jobs in ("1", "2"):
            p = subprocess.run([exe, "--format", "json", "--fail-on", "never", "-j", jobs] + logs,
                               capture_output=True)
            outs.append(p.stdout)
        if outs[0] != outs[1]:
            print("FAIL", case, ": -j1 and -j2 outputs differ")
            failed += 1
            continue
        try:
            doc = json.loads(outs[0])
        except ValueError as e:
            print("FAIL", case, ": invalid JSON:", e)
            failed += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
        if errors:
            failed += 1
            print("FAIL", case)
            for e in errors[:5]:
                print("   ", "/".join(str(x) for x in e.path), ":", e.message)
        else:
            print("PASS", case)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
