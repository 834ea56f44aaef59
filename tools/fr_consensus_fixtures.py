#!/usr/bin/env python3
"""Flight Recorder scenarios of the collective-consensus checks (engine/models/consensus.h)
that tools/fr_fixtures.py does not write: a rank behind the others, and dumps
joined with the text logs of the same job. Same conventions (deterministic files,
an existing expected.json left alone).

usage: tools/fr_consensus_fixtures.py [CORPUS_DIR]
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fr_fixtures as fx  # noqa: E402


def rank_behind():
    per = {r: fx.allreduce_run(10, "started") for r in range(3)}
    per[3] = fx.allreduce_run(9)  # completed 1-9, never enqueued 10
    return ("Flight Recorder dumps, 4 ranks: ranks 0-2 started all_reduce 10 and wait in it; rank 3 completed "
            "1-9 and never enqueued 10 (behind: the culprit)", fx.rank_dumps(4, per))


def missing_rank_text_oom():
    d = fx.rank_dumps(4, {r: fx.allreduce_run(10, "started") for r in (0, 1, 3)})
    return ("Flight Recorder dumps of ranks 0, 1 and 3 of a 4-rank job, with the text logs of the same job: rank 2 "
            "wrote no dump because it ran out of GPU memory (its log says so) before the others timed out in "
            "all_reduce 10", d)


TEXT = {
    "missing-rank-text-oom": {
        "rank0.log": [
            "[rank0]:[E1122 10:25:34.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=4194304, NumelOut=4194304, "
            "Timeout(ms)=600000) ran for 600010 milliseconds before timing out.",
        ],
        "rank2.log": [
            "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total "
            "capacity of 79.15 GiB of which 1.2 GiB is free.",
        ],
    },
}

SCENARIOS = {"rank-behind": rank_behind, "missing-rank-text-oom": missing_rank_text_oom}


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "corpus")
    for name, fn in SCENARIOS.items():
        case = fx.write_case(os.path.normpath(corpus), name, fn, "pickle")
        for fname, lines in TEXT.get(name, {}).items():
            with open(os.path.join(case, fname), "w") as f:
                f.write("\n".join(lines) + "\n")
        print(case)


if __name__ == "__main__":
    main()
