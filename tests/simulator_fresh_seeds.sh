#!/usr/bin/env bash
# The simulator, run with seeds and shapes the corpus does not use, must get its injected fault
# headlined: for every fault x fresh seeds x layouts (per-rank, interleaved, torchrun), with the
# wrapper, NCCL version, job shape and WARN timestamps rotating, the primary finding's rule is
# the one the simulator's own expected.json names (and its ranks/hosts where it names them);
# a healthy job ends "ok" with nothing at warning or above.
#
# usage: simulator_fresh_seeds.sh SIMULATE NCCLSCAN
#   SEEDS="1 2 3"   use these seeds instead of fresh ones (to reproduce a failure)
#   NSEEDS=N        number of fresh seeds (default 3)
#   FAULTS="f g"    only these faults
set -u
SIM=$(readlink -f "$1")
NS=$(readlink -f "$2")
PY=/usr/bin/python3
T=$(mktemp -d /tmp/ncclscan_simseeds.XXXXXX)
trap 'rm -rf "$T"' EXIT

if [ -z "${SEEDS:-}" ]; then
  SEEDS=""
  for ((i = 0; i < ${NSEEDS:-3}; i++)); do
    ns=$(date +%N)
    SEEDS="$SEEDS $(( (RANDOM * 32768 + RANDOM + 10#${ns:-0} + i) % 1000000000 ))"
  done
fi
read -r -a SEED_LIST <<<"$SEEDS"
SEEDS="${SEED_LIST[*]}"
echo "seeds: $SEEDS (reproduce with SEEDS=\"$SEEDS\")"

# FAULTS="a b" restricts the run to those faults (the rotation stays a function of the seed).
ALL_FAULTS=(healthy divergent_rank socket_host gdr_missing_host env_mismatch version_mismatch
            ib_error_storm oom_cascade peer_closed_storm straggler)
LAYOUTS=(per-rank interleaved torchrun)
WRAPPERS=(none srun torchrun kubectl docker)
VERSIONS=(2.18.3 2.19.3 2.21.5 2.23.4 2.26.2 2.27.3)
SHAPES=("8 2" "12 3" "16 2" "8 4" "6 3" "16 4")

# Generate every case first (one directory each, with the simulator's expected.json).
n=0
for seed in "${SEED_LIST[@]}"; do
  for fi in "${!ALL_FAULTS[@]}"; do
    fault=${ALL_FAULTS[$fi]}
    [ -n "${FAULTS:-}" ] && [[ " $FAULTS " != *" $fault "* ]] && continue
    for li in "${!LAYOUTS[@]}"; do
      layout=${LAYOUTS[$li]}
      k=$((seed + 7 * fi + 3 * li))
      wrapper=${WRAPPERS[$((k % ${#WRAPPERS[@]}))]}
      version=${VERSIONS[$(((k / 5) % ${#VERSIONS[@]}))]}
      read -r ranks hosts <<<"${SHAPES[$(((k / 30) % ${#SHAPES[@]}))]}"
      steps=3
      [ "$fault" = straggler ] && steps=16
      args=(--fault "$fault" --layout "$layout" --wrapper "$wrapper" --nccl-version "$version"
            --ranks "$ranks" --hosts "$hosts" --steps "$steps" --channels 2 --seed "$seed")
      # Without the per-host communicator NCCL <= 2.21 prints no version banner on most hosts, so a
      # version mismatch mostly cannot show (the simulator then expects no finding): keep it.
      [ $((k / 2 % 2)) = 1 ] && [ "$fault" != version_mismatch ] && args+=(--no-tp)
      [ $((k / 3 % 2)) = 1 ] && args+=(--timestamps)
      d="$T/case$n"
      echo "seed=$seed fault=$fault layout=$layout wrapper=$wrapper nccl=$version shape=${ranks}r${hosts}h" >"$d.what"
      echo "$SIM --out DIR ${args[*]}" >"$d.cmd"
      if "$SIM" --out "$d" "${args[@]}" >/dev/null 2>"$d.err"; then
        "$NS" --format json -j 1 --fail-on never "$d" >"$d.json" 2>"$d.err" || echo "ncclscan exit $?" >>"$d.err"
      else
        echo "simulate exit $?" >>"$d.err"
      fi
      n=$((n + 1))
    done
  done
done

"$PY" - "$T" "$n" <<'EOF'
import json, sys
root, n = sys.argv[1], int(sys.argv[2])
passed = failed = 0
for i in range(n):
    base = f"{root}/case{i}"
    what = open(base + ".what").read().strip()
    try:
        exp = json.load(open(base + "/expected.json"))
        got = json.load(open(base + ".json"))
    except Exception as e:  # simulator or ncclscan failed
        err = " ".join(open(base + ".err").read().split())[:300]
        cmd = open(base + ".cmd").read().strip()
        print(f"FAIL {what}: no result ({e}; {err})\n     repro: {cmd}")
        failed += 1
        continue
    v = got["verdict"]
    findings = {f["fingerprint"]: f for f in got["findings"]}
    prim = findings.get(v["primary_fingerprint"]) if v["primary"] else None
    want = exp["primary"]
    problems = []
    if want is None:
        expected = "ok"
        got_s = v["status"] + (f" ({v['primary']})" if v["primary"] else "")
        loud = [f["rule"] for f in got["findings"] if f["severity"] not in ("info",)]
        if v["status"] != "ok" or loud:
            problems.append(f"findings at warning or above: {', '.join(sorted(set(loud)))}")
    else:
        expected = want.get("rule") or "category " + want.get("category", "?")
        if prim is None:
            got_s = v["status"] + " (no primary)"
            problems.append("no primary finding")
        else:
            got_s = prim["rule"] if "rule" in want else "category " + prim["category"]
            if got_s != expected:
                problems.append(f"headline: {v['headline']}")
            else:
                if "ranks" in want and prim["ranks"] != want["ranks"]:
                    problems.append(f"ranks {prim['ranks']}, want {want['ranks']}")
                if "hosts" in want and sorted(prim["hosts"]) != sorted(want["hosts"]):
                    problems.append(f"hosts {','.join(prim['hosts'])}, want {','.join(want['hosts'])}")
    if problems:
        failed += 1
        cmd = open(base + ".cmd").read().strip()
        print(f"FAIL {what} expected={expected} got={got_s}: {'; '.join(problems)}\n     repro: {cmd}")
    else:
        passed += 1
        print(f"PASS {what} expected={expected} got={got_s}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
EOF
