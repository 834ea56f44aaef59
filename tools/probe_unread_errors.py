#!/usr/bin/env python3
"""What does ncclscan say when the error line of a failure is of a form it cannot read?

Real incidents it was not written from (the set-aside cases, a user's new log)
fail in words no rule knows. This imitates that on the study cases: for every
study case whose truth is a failure, it removes the lines that the case's
warning-or-worse findings cite as evidence (the lines ncclscan did read as the
problem), scans what is left, and counts the verdicts. A failure must never
read "ok": what is left (a failure table, launcher lines, a run's stages
without its end) should still say the run did not end well, or say that the
logs cannot tell ("incomplete", "unknown").

Set-aside cases are never opened (their names and truths stay closed,
docs/evaluation.md): the split comes from `ncclscan test --judge-json`.

usage: probe_unread_errors.py NCCLSCAN CORPUS_DIR [OUT_DIR]
exit status: 0; prints the verdict counts and each study case that reads "ok".
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = {"truth.json", "SOURCE.md", "golden.json", "expected.json", "README.md"}
CITED = {"warning", "error", "critical"}


def scan(ns, path):
    r = subprocess.run([ns, "--format", "json", "--color", "never", path], capture_output=True, text=True)
    return json.loads(r.stdout)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ns, corpus = os.path.abspath(sys.argv[1]), sys.argv[2]
    out = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="probe-")
    with tempfile.TemporaryDirectory() as tmp:
        judged = os.path.join(tmp, "judge.json")
        subprocess.run([ns, "test", corpus, "--color", "never", "--judge-json", judged],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cases = json.load(open(judged))["cases"]
    failing = {c["case"] for c in cases if c["split"] == "study" and c["truth_status"] != "healthy"}
    verdicts = collections.Counter()
    ok = []
    for root, dirs, files in os.walk(corpus):
        if "truth.json" not in files:
            continue
        dirs[:] = []
        name = os.path.basename(root)
        if name not in failing:
            continue
        before = scan(ns, root)
        cut = collections.defaultdict(set)
        for f in before["findings"]:
            if f["severity"] in CITED:
                for e in f["evidence"]:
                    cut[e["file"]].add(e["line"])
        dst = os.path.join(out, name)
        shutil.rmtree(dst, ignore_errors=True)
        os.makedirs(dst)
        for fn in files:
            if fn in SKIP:
                continue
            path = os.path.join(root, fn)
            lines = open(path, "rb").read().split(b"\n")
            kept = [l for i, l in enumerate(lines) if (i + 1) not in cut.get(path, ())]
            open(os.path.join(dst, fn), "wb").write(b"\n".join(kept))
        after = scan(ns, dst)["verdict"]
        verdicts[after["status"]] += 1
        if after["status"] in ("ok", "healthy"):
            ok.append("%s (was %s)" % (name, before["verdict"]["status"]))
    for status, n in verdicts.most_common():
        print("%-11s %d" % (status, n))
    for line in sorted(ok):
        print("  reads ok: " + line)
    print("copies in " + out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
