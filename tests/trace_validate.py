#!/usr/bin/env python3
"""`ncclscan --format trace` against the Chrome trace event format, on corpus cases.

usage: trace_validate.py NCCLSCAN CORPUS_DIR

For each case (timestamped ones, untimed ones, a healthy one, every fr-* Flight
Recorder case present): the output is one JSON object {"traceEvents": [...],
"displayTimeUnit": "ms", "otherData": {...}}; every event has ph, a numeric ts
(microseconds), integer pid and tid, a string name and an args object; "X" has
dur >= 0 and the slices of one thread nest; "i" has a scope s; "M" names one of
the metadata kinds with the args it needs; every track with events is named.
Two runs, and -j1 against -j2, are byte-identical. When the diagnosis has a
primary finding, each of its suspect ranks has a thread named "rank N —
suspected culprit (RULE)", sorted first in its process, with a culprit
instant on it, and the first suspect's host is the first process. Every
finding's evidence line is an instant on some track.
Closes with "N passed, N failed".
"""
import glob
import json
import os
import subprocess
import sys

CASES = [
    "case-ib-retry-exceeded-both-ends-timestamped",  # bracketed timestamps, two culprits
    "sim-ib_error_storm-perrank-ts-8r2h",  # glog timestamps, watchdog "ran for" slices
    "real-h1-torchtune-2651-llama4-ckpt-save-timeout",  # real watchdog lines with times
    "case-watchdog-seq-split-pipeline-4r",  # no timestamps: instants at ts 0 with a note
    "sim-healthy-perrank-16r2h",  # healthy: tracks, no culprit
]
META = {"process_name": "name", "thread_name": "name", "process_sort_index": "sort_index",
        "thread_sort_index": "sort_index", "process_labels": "labels"}


def expand(ranks):
    out = []
    for part in filter(None, ranks.split(",")):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def run(ns, path, *extra):
    p = subprocess.run([ns, *extra, path], capture_output=True)
    if p.returncode not in (0, 1):
        raise AssertionError(f"exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    return p.stdout


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate(doc):
    """Chrome trace event format checks; returns problems (empty when valid)."""
    errs = []
    if not isinstance(doc, dict) or set(doc) != {"traceEvents", "displayTimeUnit", "otherData"}:
        return [f"top level: {sorted(doc) if isinstance(doc, dict) else type(doc)}"]
    if doc["displayTimeUnit"] not in ("ms", "ns"):
        errs.append("displayTimeUnit")
    if not isinstance(doc["otherData"], dict):
        errs.append("otherData is not an object")
    named, used, slices = set(), set(), {}
    for i, e in enumerate(doc["traceEvents"]):
        where = f"event {i} {json.dumps(e)[:160]}"
        if not isinstance(e, dict):
            errs.append(f"{where}: not an object")
            continue
        for k in ("ph", "name", "ts", "pid", "tid", "args"):
            if k not in e:
                errs.append(f"{where}: no {k}")
        if errs:
            continue
        if not is_num(e["ts"]) or not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
            errs.append(f"{where}: ts/pid/tid types")
        if not isinstance(e["name"], str) or not isinstance(e["args"], dict):
            errs.append(f"{where}: name/args types")
        ph = e["ph"]
        if ph == "M":
            if e["name"] not in META or META[e["name"]] not in e["args"]:
                errs.append(f"{where}: metadata kind or args")
            if e["name"] == "thread_name":
                named.add((e["pid"], e["tid"]))
        elif ph == "X":
            if not is_num(e.get("dur")) or e["dur"] < 0:
                errs.append(f"{where}: X without dur >= 0")
            else:
                slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
            used.add((e["pid"], e["tid"]))
        elif ph == "i":
            if e.get("s") not in ("t", "p", "g"):
                errs.append(f"{where}: i without scope s")
            used.add((e["pid"], e["tid"]))
        else:
            errs.append(f"{where}: unexpected ph {ph!r}")
        if "cat" in e and not isinstance(e["cat"], str):
            errs.append(f"{where}: cat")
    for t in sorted(used - named):
        errs.append(f"thread {t} has events but no thread_name")
    # Slices of one thread nest (viewers drop or mis-stack ones that cross).
    for t, ss in slices.items():
        stack = []
        for b, e in sorted(ss, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1] <= b + 1e-6:
                stack.pop()
            if stack and e > stack[-1] + 1e-6:
                errs.append(f"thread {t}: slice [{b}, {e}] crosses its parent ending at {stack[-1]}")
                break
            stack.append(e)
    return errs


def check_case(ns, case):
    errs = []
    out = run(ns, case, "--format", "trace", "-j1")
    if run(ns, case, "--format", "trace", "-j1") != out:
        errs.append("two runs differ")
    if run(ns, case, "--format", "trace", "-j2") != out:
        errs.append("-j1 and -j2 differ")
    try:
        doc = json.loads(out)
    except ValueError as ex:
        return [f"not JSON: {ex}"]
    errs += validate(doc)
    if errs:
        return errs
    diag = json.loads(run(ns, case, "--format", "json", "-j1"))
    ev = doc["traceEvents"]
    meta = {(e["name"], e["pid"], e["tid"]): e["args"] for e in ev if e["ph"] == "M"}
    thread_names = {(p, t): a["name"] for (n, p, t), a in meta.items() if n == "thread_name"}
    sort_index = {(p, t): a["sort_index"] for (n, p, t), a in meta.items() if n == "thread_sort_index"}
    proc_index = {p: a["sort_index"] for (n, p, t), a in meta.items() if n == "process_sort_index"}
    primary = next((f for f in diag["findings"] if f["primary"]), None)
    culprit_threads = [k for k, v in thread_names.items() if "suspected culprit" in v]
    if primary is None:
        if culprit_threads:
            errs.append(f"no primary finding but culprit tracks {culprit_threads}")
    else:
        rule = primary["rule"]
        suspects = expand(primary["suspects"]["ranks"])
        for r in suspects:
            mine = [(p, t) for (p, t), name in thread_names.items()
                    if t == r and name == f"rank {r} \u2014 suspected culprit ({rule})"]
            if len(mine) != 1:
                errs.append(f"rank {r}: no thread named 'rank {r} \u2014 suspected culprit ({rule})'")
                continue
            p, t = mine[0]
            others = [sort_index[k] for k in sort_index if k[0] == p and k not in culprit_threads]
            if others and sort_index[(p, t)] >= min(others):
                errs.append(f"rank {r}: culprit track not sorted first in its process")
            if not any(e["ph"] == "i" and e.get("cat") == "culprit" and (e["pid"], e["tid"]) == (p, t) for e in ev):
                errs.append(f"rank {r}: no culprit instant on its track")
        if suspects and culprit_threads:
            first = [k for k, v in thread_names.items() if v.startswith(f"rank {suspects[0]} \u2014")]
            if first and proc_index.get(first[0][0]) != 0:
                errs.append("the first suspect's host is not the first process")
        if doc["otherData"].get("primary") != rule:
            errs.append("otherData.primary")
    # Every evidence line of every finding is an instant (a finding without evidence: one instant).
    if diag["findings_omitted"] == 0:
        want = sum(max(1, len(f["evidence"])) for f in diag["findings"])
        got = sum(1 for e in ev if e["ph"] == "i" and e.get("cat") != "culprit")
        if want != got:
            errs.append(f"{got} finding instants for {want} evidence lines")
    for e in ev:
        if e["ph"] == "i" and e.get("cat") != "culprit" and "text" in e["args"] and "at" not in e["args"]:
            errs.append("an evidence instant without file:line")
            break
    return errs


def main():
    ns, corpus = sys.argv[1], sys.argv[2]
    cases = [os.path.join(corpus, c) for c in CASES] + sorted(glob.glob(os.path.join(corpus, "fr-*")))
    passed = failed = 0
    for case in cases:
        if not os.path.isdir(case):
            print(f"FAIL {case}: missing")
            failed += 1
            continue
        errs = check_case(ns, case)
        if errs:
            failed += 1
            print(f"FAIL {os.path.basename(case)}")
            for e in errs[:20]:
                print(f"  {e}")
        else:
            passed += 1
            print(f"ok   {os.path.basename(case)}")
    # Expectations tied to what these cases hold.
    extra = []
    doc = json.loads(run(ns, os.path.join(corpus, CASES[1]), "--format", "trace"))
    if not any(e["ph"] == "X" and e["name"] == "ALLREDUCE #7 timed out" for e in doc["traceEvents"]):
        extra.append("sim-ib_error_storm: no 'ALLREDUCE #7 timed out' slice")
    doc = json.loads(run(ns, os.path.join(corpus, CASES[0]), "--format", "trace"))
    if not any(e["ph"] == "i" and e["ts"] > 0 and "note" not in e["args"] for e in doc["traceEvents"]):
        extra.append("timestamped case: no instant at its own time")
    doc = json.loads(run(ns, os.path.join(corpus, CASES[3]), "--format", "trace"))
    # Untimed: from ts 0, 1 us apart per track in the order of their lines, each with a note.
    untimed = [e for e in doc["traceEvents"] if e["ph"] == "i" and e.get("cat") != "culprit"]
    if not all("note" in e["args"] and e["ts"] < 1000 for e in untimed):
        extra.append("untimed case: instants not at the start with a note")
    per_track = {}
    for e in untimed:
        if "at" in e["args"]:
            per_track.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["args"]["at"]))
    for track, evs in per_track.items():
        evs.sort()
        keys = [(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])) for _, a in evs]
        if keys != sorted(keys) or len({ts for ts, _ in evs}) != len(evs):
            extra.append(f"untimed case: track {track} not in line order, 1 us apart: {evs[:4]}")
    for e in extra:
        print(f"FAIL {e}")
    failed += len(extra)
    passed += 3 - len(extra)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
