#!/usr/bin/env python3
"""Fingerprints name the problem, not the run (DESIGN.md §8).

For every corpus case: scan it; then copy its logs to another directory with
every host name, pid/tid, IPv4 address and hex pointer rewritten (consistently,
so the incident is the same), scan the copy, and require the same multiset of
(rule, fingerprint) pairs. Also: every case whose verdict names a primary has
exactly one finding with "primary": true, and it is that rule.

usage: fingerprint_stability.py NCCLSCAN CORPUS_DIR
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = {"expected.json", "truth.json", "golden.json", "SOURCE.md", "README.md"}


def scan(ns, paths):
    r = subprocess.run([ns, "--format", "json", "--fail-on", "never", "-j", "2"] + paths,
                       capture_output=True)
    if r.returncode not in (0, 1):
        raise RuntimeError("exit %d: %s" % (r.returncode, r.stderr[:300]))
    return json.loads(r.stdout)


def logs_of(case):
    out = []
    for root, _, files in os.walk(case):
        for f in sorted(files):
            if f not in SKIP:
                out.append(os.path.join(root, f))
    return sorted(out)


def renamer(hosts):
    """A consistent rewrite of the run-specific identifiers of one incident."""
    def h(s, n=6):
        return hashlib.sha1(s.encode()).hexdigest()[:n]
    host_map = {x: "zz" + h(x) for x in hosts if len(x) >= 2}
    ipv4 = re.compile(r"\b(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\b")
    hexp = re.compile(r"\b0x([0-9a-f]{6,})\b")
    # NCCL's host:pid:tid, whose host has a letter: not a time of day ("… 10:31:02 [core.py:708]").
    hpid = re.compile(r"\b((?=[\w.-]*[A-Za-z_])[\w.-]+):(\d+):(\d+) \[")

    def fix(text):
        for old in sorted(host_map, key=len, reverse=True):
            text = text.replace(old, host_map[old])
        # NCCL_DEBUG_FILE's nccl.%h.%p, not a library's name (libnccl.so.2.21.5).
        text = re.sub(r"(?<![\w.])(nccl\.[\w-]+\.)(\d+)\b", lambda m: m.group(1) + str(int(m.group(2)) + 7919), text)
        text = hpid.sub(lambda m: "%s:%d:%d [" % (m.group(1), int(m.group(2)) + 7919, int(m.group(3)) + 7919), text)
        text = ipv4.sub(lambda m: "%d.%d.%d.%d" % (10, int(m.group(2)) ^ 5, int(m.group(3)) ^ 3,
                                                   (int(m.group(4)) + 1) % 250 + 1), text)
        text = hexp.sub(lambda m: "0x" + h(m.group(1), len(m.group(1))), text)
        return text
    return fix


def fingerprints(d):
    return sorted((f["rule"], f["fingerprint"]) for f in d["findings"])


def main():
    ns, corpus = sys.argv[1], sys.argv[2]
    passed = failed = 0
    cases = sorted(c for c in os.listdir(corpus) if os.path.isfile(os.path.join(corpus, c, "expected.json")))
    tmp = tempfile.mkdtemp(prefix="ncclscan_fp.")
    try:
        for c in cases:
            case = os.path.join(corpus, c)
            try:
                a = scan(ns, logs_of(case))
                prim = [f for f in a["findings"] if f["primary"]]
                want = 0 if a["verdict"]["primary"] is None else 1
                if len(prim) != want or (want and prim[0]["rule"] != a["verdict"]["primary"]):
                    raise RuntimeError("%d findings marked primary, verdict says %s" % (len(prim), a["verdict"]["primary"]))
                fix = renamer(a["input"]["hosts"])
                dst = os.path.join(tmp, "elsewhere", "run-" + c)
                copies = []
                for p in logs_of(case):
                    # Names carry identity too (NCCL_DEBUG_FILE=nccl.%h.%p): rename them alike.
                    q = os.path.join(dst, fix(os.path.relpath(p, case)))
                    os.makedirs(os.path.dirname(q), exist_ok=True)
                    with open(p, "rb") as f:
                        data = f.read()
                    if p.endswith((".gz", ".zst")):
                        shutil.copyfile(p, q)
                    else:
                        with open(q, "wb") as f:
                            f.write(fix(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
                    copies.append(q)
                b = scan(ns, copies)
                fa, fb = fingerprints(a), fingerprints(b)
                if fa != fb:
                    raise RuntimeError("fingerprints differ after renaming hosts/pids/addresses/paths:\n      %s\n   vs %s"
                                       % (fa, fb))
                passed += 1
                print("PASS " + c)
            except Exception as e:  # noqa: BLE001 - report and go on
                failed += 1
                print("FAIL %s: %s" % (c, e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
