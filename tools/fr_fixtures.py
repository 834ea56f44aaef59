#!/usr/bin/env python3
"""Writes PyTorch Flight Recorder dump scenarios as corpus cases.

Each scenario is a directory corpus/fr-<scenario>/ holding one dump per rank,
named as PyTorch names them (nccl_trace_rank_<global rank>, no extension), in
the shape PyTorch's FlightRecorder writes (docs/flight_recorder.md): a dict
with version, comm_lib_version, pg_config, pg_status and entries, pickled with
protocol 2 -- Python's pickler emits the same opcodes as PyTorch's for these
plain values (dicts, lists, tuples, str, int, float, bool, None). The JSON
form is written with json.dump, with pg_status numbers as strings, as
PyTorch's JSON dumper writes them.

Deterministic: the same files byte for byte on every run (fixed times, no
randomness). An existing expected.json is left alone; a new case gets one
holding only its description, which `ncclscan test corpus --update --case
fr-<scenario>` fills in.

usage: tools/fr_fixtures.py [CORPUS_DIR] [--only SCENARIO ...]
"""

import argparse
import json
import os
import pickle
import sys

T0_NS = 1732270532_000_000_000  # 2024-11-22T10:15:32Z
STEP_NS = 250_000_000           # one collective every 250 ms
TIMEOUT_MS = 600_000

FRAMES = {
    "all_reduce": [
        {"name": "all_reduce", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
         "line": 2501},
        {"name": "train_step", "filename": "/workspace/train.py", "line": 88},
    ],
    "_allgather_base": [
        {"name": "all_gather_into_tensor",
         "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 3320},
        {"name": "gather_params", "filename": "/workspace/fsdp_utils.py", "line": 41},
    ],
    "send": [
        {"name": "send", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
         "line": 1980},
        {"name": "pipeline_forward", "filename": "/workspace/pipeline.py", "line": 132},
    ],
    "recv": [
        {"name": "recv", "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
         "line": 2031},
        {"name": "pipeline_forward", "filename": "/workspace/pipeline.py", "line": 127},
    ],
}


def entry(record_id, pg_id, pg, seq, op, state, in_sizes, out_sizes, dtype="Float", p2p_seq=0,
          peer_text=None, t_ns=None, op_id=None):
    """One ring-buffer entry. `op` is the c10d op name ("all_reduce", "send"); p2p
    ops carry collective_seq_id 0 and their own p2p_seq_id."""
    is_p2p = op in ("send", "recv")
    created = t_ns if t_ns is not None else T0_NS + record_id * STEP_NS
    started = created + 50_000 if state in ("started", "completed") else None
    completed = created + 2_000_000 if state == "completed" else None
    name = "nccl:" + op + (" " + peer_text if peer_text else "")
    return {
        "record_id": record_id,
        "pg_id": pg_id,
        "process_group": pg,
        "collective_seq_id": 0 if is_p2p else seq,
        "p2p_seq_id": p2p_seq if is_p2p else 0,
        "op_id": op_id if op_id is not None else (p2p_seq if is_p2p else seq),
        "profiling_name": name,
        "time_created_ns": created,
        "input_sizes": in_sizes,
        "input_dtypes": [dtype] * len(in_sizes),
        "output_sizes": out_sizes,
        "output_dtypes": [dtype] * len(out_sizes),
        "state": state,
        "time_discovered_started_ns": started,
        "time_discovered_completed_ns": completed,
        "retired": state == "completed",
        "timeout_ms": TIMEOUT_MS,
        "is_p2p": is_p2p,
        "duration_ms": 1.75 if state == "completed" else None,
        "frames": FRAMES.get(op, []),
        "thread_id": "140223971051328",
        "thread_name": "pt_main_thread",
    }


def dump(entries, pg_config, pg_status):
    return {
        "version": "2.4",
        "comm_lib_version": "2.21.5",
        "pg_config": pg_config,
        "pg_status": pg_status,
        "entries": entries,
    }


def default_pg(world):
    return {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(world)))}}


def status(entries, pg_id):
    """pg_status as PyTorch computes it: the last collective sequence enqueued,
    started and completed in that group."""
    enq = [e["collective_seq_id"] for e in entries if e["pg_id"] == pg_id and not e["is_p2p"]]
    started = [e["collective_seq_id"] for e in entries
               if e["pg_id"] == pg_id and not e["is_p2p"] and e["state"] in ("started", "completed")]
    done = [e["collective_seq_id"] for e in entries
            if e["pg_id"] == pg_id and not e["is_p2p"] and e["state"] == "completed"]
    return {"last_enqueued_collective": max(enq, default=-1), "last_started_collective": max(started, default=-1),
            "last_completed_collective": max(done, default=-1)}


PG0 = ("0", "default_pg")
SIZE = [[4096, 1024]]


def allreduce_run(last, last_state="completed", size=None, dtype="Float", last_op="all_reduce",
                  last_size=None, last_dtype=None):
    """Collectives 1..last on the default group; the last one in last_state."""
    out = []
    for seq in range(1, last + 1):
        final = seq == last
        op = last_op if final else "all_reduce"
        s = (last_size if final and last_size else size) or SIZE
        out_s = [[s[0][0] * 4, s[0][1]]] if op == "_allgather_base" else s
        out.append(entry(seq - 1, 0, PG0, seq, op, last_state if final else "completed", s, out_s,
                         (last_dtype if final and last_dtype else dtype)))
    return out


def rank_dumps(world, per_rank):
    """{rank: dump} from {rank: entries} on the default group."""
    return {r: dump(e, default_pg(world), {"0": status(e, 0)}) for r, e in per_rank.items()}


# ---- scenarios: name -> (description, {rank: dump or bytes}, writer) ----

def healthy():
    d = rank_dumps(4, {r: allreduce_run(10) for r in range(4)})
    return ("Flight Recorder dumps of a healthy 4-rank job (pickle, protocol 2): every rank enqueued, started and "
            "completed all_reduce 1-10 on the default group with the same sizes and dtypes", d)


def missing_rank():
    d = rank_dumps(4, {r: allreduce_run(10, "started") for r in (0, 1, 3)})
    return ("Flight Recorder dumps of a 4-rank job (pg_config ranks [0, 1, 2, 3]) where rank 2's dump is missing "
            "(it died before dumping): ranks 0, 1 and 3 started all_reduce 10 and never completed it", d)


def size_mismatch():
    per = {r: allreduce_run(8, "started") for r in range(4)}
    per[2] = allreduce_run(8, "started", last_size=[[4096, 512]])
    return ("Flight Recorder dumps, 4 ranks: at all_reduce 8 rank 2 passes input size [4096, 512] where the "
            "others pass [4096, 1024]; all four started it and none completed", rank_dumps(4, per))


def dtype_mismatch():
    per = {r: allreduce_run(8, "started") for r in range(4)}
    per[1] = allreduce_run(8, "started", last_dtype="BFloat16")
    return ("Flight Recorder dumps, 4 ranks: at all_reduce 8 rank 1 passes BFloat16 tensors where the others "
            "pass Float; all four started it and none completed", rank_dumps(4, per))


def op_mismatch():
    per = {r: allreduce_run(8, "started") for r in range(4)}
    per[3] = allreduce_run(8, "started", last_op="_allgather_base")
    return ("Flight Recorder dumps, 4 ranks: collective 8 is all_reduce on ranks 0-2 but _allgather_base on "
            "rank 3 (collective type mismatch); all four started it and none completed", rank_dumps(4, per))


def scheduled_not_started():
    per = {r: allreduce_run(8, "started") for r in range(4)}
    per[1] = allreduce_run(8, "scheduled")
    return ("Flight Recorder dumps, 4 ranks: all_reduce 8 is 'started' on ranks 0, 2 and 3 but only "
            "'scheduled' (enqueued, never started on the GPU) on rank 1", rank_dumps(4, per))


def two_pgs():
    # Ranks 0 and 1 also belong to a tensor-parallel group whose sequence runs
    # far ahead of the default group's: numbers of different groups are
    # unrelated, so ranks 2 and 3 are not "behind".
    pg1 = ("1", "tp_group")
    config = default_pg(4)
    config["1"] = {"name": "1", "desc": "tp_group", "ranks": "[0, 1]"}
    out = {}
    for r in range(4):
        es = allreduce_run(10)
        if r < 2:
            t = T0_NS + 10 * STEP_NS
            for seq in range(1, 41):
                es.append(entry(len(es), 1, pg1, seq, "all_reduce", "completed", [[512]], [[512]], "BFloat16",
                                t_ns=t + seq * 10_000_000))
        st = {"0": status(es, 0)}
        if r < 2:
            st["1"] = status(es, 1)
        out[r] = dump(es, config, st)
    return ("Flight Recorder dumps, 4 ranks, two process groups: the default group (all ranks) completed "
            "collectives 1-10, a tp_group of ranks 0-1 completed 1-40; sequence numbers of different groups are "
            "unrelated and every rank is healthy", out)


def p2p_unpaired():
    out = {}
    for r in range(4):
        es = allreduce_run(6)
        n = len(es)
        if r == 0:
            es.append(entry(n, 0, PG0, 0, "send", "completed", [[1024]], [[1024]], p2p_seq=1, peer_text="0->1"))
        elif r == 1:
            es.append(entry(n, 0, PG0, 0, "recv", "completed", [[1024]], [[1024]], p2p_seq=1, peer_text="1<-0"))
        elif r == 2:
            es.append(entry(n, 0, PG0, 0, "send", "started", [[2048]], [[2048]], p2p_seq=1, peer_text="2->3"))
        else:
            es.append(entry(n, 0, PG0, 0, "recv", "started", [[2048]], [[2048]], p2p_seq=1, peer_text="3<-1"))
        out[r] = dump(es, default_pg(4), {"0": status(es, 0)})
    return ("Flight Recorder dumps, 4 ranks, point-to-point: rank 0's send to 1 pairs with rank 1's recv and "
            "both completed, but rank 2 sends to rank 3 while rank 3 posted a recv from rank 1 (that no rank "
            "sends): both stay started, unpaired", out)


def truncated():
    d = rank_dumps(4, {r: allreduce_run(10) for r in range(4)})
    whole = pickle.dumps(d[1], protocol=2)
    d[1] = whole[: len(whole) // 2]  # the file system filled up mid-dump
    return ("Flight Recorder dumps of a healthy 4-rank job, rank 1's pickle cut in half (disk full while "
            "dumping): a clear per-file error ('truncated pickle'), the other three are read", d)


class Checkpoint:
    """Not a Flight Recorder type: pickling an instance of it needs its class."""

    def __init__(self):
        self.step = 12
        self.path = "/ckpt/step12"


def foreign():
    d = rank_dumps(4, {r: allreduce_run(10) for r in range(4)})
    # Rank 0: a dict re-pickled by a user with protocol 4 holding a set (EMPTY_SET, opcode 0x8f).
    bad0 = dict(d[0])
    bad0["ranks_seen"] = {0, 1, 2, 3}
    d[0] = pickle.dumps(bad0, protocol=4)
    # Rank 1: a dict holding a class instance (GLOBAL '__main__.Checkpoint').
    bad1 = dict(d[1])
    bad1["checkpoint"] = Checkpoint()
    d[1] = pickle.dumps(bad1, protocol=2)
    return ("Flight Recorder dump files that are foreign pickles: rank 0's holds a Python set (protocol 4, "
            "opcode 0x8f), rank 1's a class instance (global '__main__.Checkpoint'); each gives a clear per-file "
            "error and ranks 2 and 3 are read", d)


def json_form():
    per = {r: allreduce_run(8, "started") for r in range(4)}
    per[2] = allreduce_run(8, "started", last_size=[[4096, 512]])
    d = rank_dumps(4, per)
    for r in d:
        # As PyTorch's JSON dumper: pg_status numbers as strings; tuples become lists (json does that).
        d[r]["pg_status"] = {k: {kk: str(vv) for kk, vv in v.items()} for k, v in d[r]["pg_status"].items()}
    return ("Flight Recorder dumps in the JSON form (nccl_trace_rank_N.json; pg_status numbers as strings, "
            "tuples as lists), 4 ranks: at all_reduce 8 rank 2 passes input size [4096, 512] where the others pass "
            "[4096, 1024]", d)


SCENARIOS = {
    "healthy": (healthy, "pickle"),
    "missing-rank": (missing_rank, "pickle"),
    "size-mismatch": (size_mismatch, "pickle"),
    "dtype-mismatch": (dtype_mismatch, "pickle"),
    "op-mismatch": (op_mismatch, "pickle"),
    "scheduled-not-started": (scheduled_not_started, "pickle"),
    "two-pgs": (two_pgs, "pickle"),
    "p2p-unpaired": (p2p_unpaired, "pickle"),
    "truncated": (truncated, "pickle"),
    "foreign-pickle": (foreign, "pickle"),
    "json-size-mismatch": (json_form, "json"),
}


def write_case(corpus, name, fn, form):
    description, dumps = fn()
    case = os.path.join(corpus, "fr-" + name)
    os.makedirs(case, exist_ok=True)
    for rank, d in sorted(dumps.items()):
        if form == "json":
            path = os.path.join(case, "nccl_trace_rank_%d.json" % rank)
            with open(path, "w") as f:
                json.dump(d, f, indent=1)
                f.write("\n")
            continue
        path = os.path.join(case, "nccl_trace_rank_%d" % rank)
        data = d if isinstance(d, bytes) else pickle.dumps(d, protocol=2)
        with open(path, "wb") as f:
            f.write(data)
    expected = os.path.join(case, "expected.json")
    if not os.path.exists(expected):
        with open(expected, "w") as f:
            f.write('{\n  "description": ' + json.dumps(description) + "\n}\n")
    return case


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "corpus")))
    ap.add_argument("--only", nargs="*", default=None, help="scenario names (default: all)")
    args = ap.parse_args()
    names = args.only or list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            sys.exit("fr_fixtures.py: unknown scenario %s (known: %s)" % (n, ", ".join(SCENARIOS)))
        fn, form = SCENARIOS[n]
        print(write_case(args.corpus, n, fn, form))


if __name__ == "__main__":
    main()
