#!/usr/bin/env python3
"""The redaction property over the whole corpus (ncclscan redact, issue 26).

For every case: the diagnosis of the redacted logs equals the redacted
diagnosis of the originals -- the same verdict, the same primary finding on
the same ranks, the same findings (rule, role, severity, ranks) with their
hosts renamed by the redaction's own map -- and nothing redactable survives:
no value the map lists (a host name, an address, a user, an id) occurs in the
redacted files as a word of its own.

usage: redact_property.py NCCLSCAN CORPUS_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = {"expected.json", "golden.json", "truth.json", "SOURCE.md", "README.md"}


def diagnose(ns, paths):
    r = subprocess.run([ns, "--format", "json", "--fail-on", "never", "--no-config"] + paths, capture_output=True)
    if r.returncode not in (0, 1):
        return None
    return json.loads(r.stdout)


def canon(d, rename):
    def hosts(f):
        return tuple(sorted(rename(h) for h in f.get("hosts", [])))

    v = d["verdict"]
    findings = sorted((f["rule"], f["role"], f["severity"], tuple(f.get("rank_ids", [])), hosts(f))
                      for f in d["findings"])
    primary = [f for f in d["findings"] if f.get("primary")]
    p = (primary[0]["rule"], tuple(primary[0].get("rank_ids", []))) if primary else None
    return {"status": v["status"], "primary": p, "findings": findings}


def main():
    ns, corpus = sys.argv[1], sys.argv[2]
    cases = []
    for root, dirs, files in os.walk(corpus):
        dirs.sort()
        if "expected.json" in files or "truth.json" in files:
            logs = [os.path.join(root, f) for f in sorted(files) if f not in SKIP]
            if logs:
                cases.append((root, logs))
    bad = 0
    leaks = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (case, logs) in enumerate(cases):
            out = os.path.join(tmp, "out%d" % n)
            mp = os.path.join(tmp, "map%d" % n)
            r = subprocess.run([ns, "redact", "--no-config", "--key", "property", "--map", mp, "-q", "-o", out] + logs,
                               capture_output=True)
            if r.returncode != 0:
                print("FAIL %s: redact exited %d: %s" % (case, r.returncode, r.stderr.decode()[:300]))
                bad += 1
                continue
            mapping, kinds = {}, {}
            with open(mp) as f:
                for line in f:
                    if line.startswith("#"):
                        continue
                    k, v, kind = (line.rstrip("\n").split("\t") + ["", ""])[:3]
                    mapping[k] = v
                    kinds[k] = kind

            def rename_host(h):
                # A host with its domain ("node8.cm.cluster") is redacted as two values:
                # the host and the domain after it (kind "domain", with its leading dot).
                if h in mapping or "." not in h:
                    return mapping.get(h, h)
                base, _, dom = h.partition(".")
                return mapping.get(base, base) + mapping.get("." + dom, "." + dom)

            def rename(h):
                base, sep, rest = h.partition("[")
                return rename_host(base) + (sep + mapping.get(rest.rstrip("]"), rest.rstrip("]")) + "]" if sep else "")

            red_files = []
            for root, _, files in os.walk(out):
                red_files += [os.path.join(root, f) for f in files]
            a = diagnose(ns, logs)
            b = diagnose(ns, sorted(red_files))
            if a is None or b is None:
                print("FAIL %s: a scan failed" % case)
                bad += 1
                continue
            ca, cb = canon(a, rename), canon(b, lambda h: h)
            if ca != cb:
                bad += 1
                print("FAIL %s: the diagnosis of the redacted logs differs" % case)
                for k in ca:
                    if ca[k] != cb[k]:
                        if k == "findings":
                            for x in sorted(set(ca[k]) ^ set(cb[k])):
                                print("    %s %s" % ("-" if x in ca[k] else "+", x))
                        else:
                            print("    %s: %s -> %s" % (k, ca[k], cb[k]))
            # Nothing redactable survives: each original value, as a word of its own.
            text = b""
            for p in red_files:
                text += os.path.relpath(p, out).encode() + b"\n"  # file names too
                with open(p, "rb") as f:
                    text += f.read()
            for orig, pseudo in mapping.items():
                if orig == pseudo:
                    continue  # kept on purpose (loopback)
                o = re.escape(orig.encode("latin-1"))
                kind = kinds.get(orig)
                if kind == "user":  # a path component, or before '@'
                    pat = re.compile(rb"/" + o + rb"(?![A-Za-z0-9_.-])|(?<![A-Za-z0-9_.-])" + o + rb"@")
                elif kind == "job":  # a number of its own (5 digits or more), or in a job's words
                    pat = re.compile((rb"(?<![0-9])" + o + rb"(?![0-9])") if len(orig) >= 5 else
                                     (rb"(?:StepId=|JobId=|SLURM_JOB_ID=)" + o + rb"(?![0-9])"))
                elif kind == "domain":
                    pat = re.compile(o + rb"(?![A-Za-z0-9_-])")
                else:
                    pat = re.compile(rb"(?<![A-Za-z0-9_.:-])" + o + rb"(?![A-Za-z0-9_-])")
                if pat.search(text):
                    leaks += 1
                    print("LEAK %s: %r survives" % (case, orig))
    print("%d cases: %d with a different diagnosis, %d values surviving redaction" % (len(cases), bad, leaks))
    return 1 if bad or leaks else 0


if __name__ == "__main__":
    sys.exit(main())
