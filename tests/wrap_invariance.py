#!/usr/bin/env python3
"""Does the diagnosis of a real incident survive the wrappers real dumps carry?

A poster's logs reach ncclscan through layers (FORMATS.md §0, §G): a log
shipper's time stamp, kubectl's pod prefix, Docker's json-file, grep -n, CRLF,
colour codes, gzip, a markdown quote, the indent of a code block in a list item. None of them changes what happened, so none should change
whether the primary finding names the cause and the culprit. This copies every
case holding a truth.json, rewrites its logs through one wrapper, judges the
copies with `ncclscan test`, and compares case by case with the unwrapped run.

Study cases are listed by name where the judgement moved; for set-aside cases
only the totals are printed (they stay closed, docs/evaluation.md).

Two rewrites lose information and are run only when named: one-paste and
interleaved put every log of a case in one file, so a file's name no longer
says whose its unprefixed lines are (a bare NCCL <= 2.21 version banner among
two hosts' lines is nobody's). kubectl-prefix is run only when named too: it
gives each file a pod of its own, which is false for a file that holds the
lines of several hosts (it then says they ran in one pod). The hard wraps are
run only when named too, as a known gap: at 120 columns five study cases still
lose their judgement (2026-11-28: a row that reads as a line of its own, such as
"[Rank 2] Watchdog caught …" inside a glued traceback, or Ray's "[repeated 15x
across cluster]" tails); at 200 columns none.

usage: wrap_invariance.py NCCLSCAN CORPUS_DIR [WRAPPER...]
       (no WRAPPER: every one that loses nothing)
exit status: 1 when a study case's judgement got worse under some wrapper.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

KEEP = {"truth.json", "SOURCE.md"}
DROP = {"expected.json", "golden.json", "README.md"}


def stamp(i):
    # A shipper's clock: one line every 10 ms from a fixed start.
    s = 32 + i // 100
    return "2024-11-22T10:%02d:%02d.%03dZ" % (15 + s // 60, s % 60, (i % 100) * 10)


def wrap_lines(fn):
    def apply(data, name, index):
        parts = data.split(b"\n")
        last = parts.pop() if parts and parts[-1] == b"" else None
        out = [fn(line, i, name, index) for i, line in enumerate(parts)]
        if last is not None:
            out.append(b"")
        return b"\n".join(out)
    return apply


def docker(line, i, name, index):
    text = line.decode("utf-8", "replace")
    obj = {"log": text + "\n", "stream": "stdout", "time": stamp(i)[:-1] + "123456Z"}
    return json.dumps(obj).encode()


def indent(prefix):
    """A code block inside a markdown list item: the page's indent on every line.
    A one-line file is left alone (one indented line cannot say it is a paste)."""
    def apply(data, name, index):
        if data.rstrip(b"\n").count(b"\n") == 0:
            return data
        return wrap_lines(lambda l, i, n, k: prefix + l if l else l)(data, name, index)
    return apply


def hard_wrap(width):
    """A terminal copy: every line longer than the window's width is cut into rows."""
    return wrap_lines(lambda l, i, n, k: b"\n".join(l[j:j + width] for j in range(0, len(l), width)) or l)


WRAPPERS = {
    "shipper-time": wrap_lines(lambda l, i, n, k: stamp(i).encode() + b" " + l),
    "kubectl-prefix": wrap_lines(lambda l, i, n, k: b"[pod/trainer-worker-%d/pytorch] " % k + l),
    "grep-n": wrap_lines(lambda l, i, n, k: n.encode() + b":%d:" % (i + 1) + l),
    "crlf": wrap_lines(lambda l, i, n, k: l + b"\r"),
    "ansi": wrap_lines(lambda l, i, n, k: b"\x1b[0m" + l + b"\x1b[0m" if l else l),
    "docker-json": wrap_lines(docker),
    "kaggle": wrap_lines(lambda l, i, n, k: b"%d.%ds\t%d\t" % (700 + i // 10, i % 10, i + 1) + l),
    "tqdm-cr": wrap_lines(lambda l, i, n, k: (b" 45%|####5     | 45/100 [00:03<00:04, 12.1it/s]\r" + l) if i % 3 == 0 else l),
    "quote": wrap_lines(lambda l, i, n, k: b"> " + l),
    "indent4": indent(b"    "),
    "hardwrap-120": hard_wrap(120),
    "hardwrap-200": hard_wrap(200),
    "gzip": None,  # whole file, below
    "one-paste": None,  # every log of the case in one file, one after another
    "interleaved": None,  # every log of the case in one file, a line of each in turn
}
LOSSY = {"one-paste", "interleaved", "kubectl-prefix", "hardwrap-120", "hardwrap-200"}


def pasted(dst, logs, wrapper):
    """Writes the logs of one case as a single file, as a poster pastes them."""
    texts = [open(p, "rb").read().rstrip(b"\n").split(b"\n") for p in logs]
    if wrapper == "one-paste":
        out = [line for t in texts for line in t]
    else:
        out = []
        for i in range(max(len(t) for t in texts)):
            out += [t[i] for t in texts if i < len(t)]
    open(os.path.join(dst, "pasted.log"), "wb").write(b"\n".join(out) + b"\n")


def rewrite_case(src, dst, wrapper):
    os.makedirs(dst, exist_ok=True)
    index = 0
    logs = []
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        for f in sorted(files):
            if f in DROP:
                continue
            out_dir = os.path.join(dst, rel)
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(root, f)
            if f in KEEP:
                shutil.copy(path, os.path.join(out_dir, f))
                continue
            data = open(path, "rb").read()
            if wrapper in ("one-paste", "interleaved"):
                logs.append(path)
            elif wrapper == "gzip":
                with gzip.open(os.path.join(out_dir, f + ".gz"), "wb") as g:
                    g.write(data)
            else:
                open(os.path.join(out_dir, f), "wb").write(WRAPPERS[wrapper](data, f, index))
            index += 1
    if logs:
        pasted(dst, logs, wrapper)


def cases_of(corpus):
    for root, dirs, files in os.walk(corpus):
        if "truth.json" in files:
            dirs[:] = []
            yield root


def judge(ns, root):
    out = os.path.join(root, "judge.json")
    subprocess.run([ns, "test", root, "--color", "never", "--judge-json", out],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = json.load(open(out))
    os.remove(out)
    return {c["case"]: c for c in d["cases"]}, d["totals"]


def key(c):
    # Failing cases: (cause, culprit, not called healthy); healthy ones: (called
    # healthy, no warning-level headline). True is right in every position.
    if "cause_right" in c:
        return (c["cause_right"], c["culprit_right"], not c["false_healthy"])
    return (c["healthy_right"], not c["false_alarm"])


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ns, corpus = os.path.abspath(sys.argv[1]), sys.argv[2]
    names = sys.argv[3:] or [w for w in WRAPPERS if w not in LOSSY]
    unknown = [w for w in names if w not in WRAPPERS]
    if unknown:
        print("unknown wrapper(s): %s (known: %s)" % (" ".join(unknown), " ".join(WRAPPERS)), file=sys.stderr)
        return 2
    cases = sorted(cases_of(corpus))
    moved_study = 0
    keep = os.environ.get("WRAP_KEEP")  # a directory to leave the copies in
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or scratch
        base_dir = os.path.join(tmp, "base")
        for c in cases:
            shutil.copytree(c, os.path.join(base_dir, os.path.relpath(c, corpus)),
                            ignore=shutil.ignore_patterns(*DROP))
        base, _ = judge(ns, base_dir)
        for w in names:
            wdir = os.path.join(tmp, w)
            for c in cases:
                rewrite_case(c, os.path.join(wdir, os.path.relpath(c, corpus)), w)
            got, totals = judge(ns, wdir)
            study_lost, study_won, aside_lost, aside_won = [], [], 0, 0
            for name, b in base.items():
                g = got.get(name)
                if g is None or key(g) == key(b):
                    continue
                better = sum(1 for x, y in zip(key(g), key(b)) if x is True and y is not True)
                worse = sum(1 for x, y in zip(key(g), key(b)) if y is True and x is not True)
                if b["split"] == "study":
                    (study_lost if worse else study_won).append(
                        "%s: %s -> %s" % (name, (b["primary"] or {}).get("rule"), (g["primary"] or {}).get("rule")))
                elif worse:
                    aside_lost += 1
                else:
                    aside_won += 1
            moved_study += len(study_lost)
            print("%-15s study lost %d, won %d; set aside lost %d, won %d" %
                  (w, len(study_lost), len(study_won), aside_lost, aside_won))
            for line in study_lost:
                print("    lost  " + line)
            for line in study_won:
                print("    won   " + line)
    return 1 if moved_study else 0


if __name__ == "__main__":
    sys.exit(main())
