// The checks of the collective-consensus model (engine/models/consensus.h), one
// method per `check:` of a correlation of kind `collective`. Internal to the
// engine: consensus.cc builds the model and dispatches; consensus_checks.cc
// holds the checks that compare groups and sequences (dumps, COLL trace,
// watchdog SeqNums); consensus_absent.cc those by elimination (who left no
// trace); consensus_text.cc those read from ranks' text alone
// (who went silent first, enqueued-but-not-started from status lines).
//
// Thread-safety: a Checks reads a finalized JobState and a built model and
// only appends to `out`; one thread.
#ifndef NCCLSCAN_ENGINE_MODELS_CONSENSUS_CHECKS_H_
#define NCCLSCAN_ENGINE_MODELS_CONSENSUS_CHECKS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/models/consensus.h"
#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

inline std::string Join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

struct Checks {
  const JobState& state;
  const CollectiveModel& m;
  std::vector<Finding>* out;

  // A finding of correlation `c` naming `suspects` (global ranks), with `vars`.
  void Emit(const CompiledCorrelation& c, const std::vector<int>& suspects, const std::vector<int>& reporters,
            Vars vars, const std::string& group, std::vector<Evidence> evidence,
            const std::vector<std::string>* hosts = nullptr) const;
  // World size the job itself states: NCCL communicators' nranks (the largest:
  // the world communicator), PyTorch's default process-group size, pg_config.
  int WorldSize() const;
  std::set<int> PresentRanks() const;
  // The line that printed rank r's start without r's own prefix (fact
  // rank_started: Lightning's "GLOBAL_RANK: r"), or null.
  const FactValue* StartedLine(int rank) const;
  // What the text logs say about a rank: its first error (exception, OOM, NCCL WARN).
  std::string TextSays(int rank, std::vector<Evidence>* ev) const;

  // The ranks whose watchdog fired, with what they waited in; `own_failure`:
  // some rank of the input failed on its own (the better suspect: the
  // elimination checks stay silent).
  struct Waiting {
    std::vector<int> ranks;
    std::vector<Evidence> evidence;
    std::string op, seq;
    std::string store;  // what a rank waited for in the c10d store (store_wait), if any did
    bool own_failure = false;
    // Every rank waits in a collective, each in SeqNum 1: the process group's
    // first, where PyTorch also brings its NCCL communicator up.
    bool in_first_collective = false;
    // Ranks of one process group timed out in different collectives (SeqNums).
    bool split = false;
    // Processes that name no rank (interleaved tracebacks, a store timeout
    // without a "[rankN]:" prefix) waiting in the store for rank 0's key.
    int unranked = 0;
    Evidence unranked_evidence;
  };
  // Which waits in the c10d store (store_wait) count besides collectives': a
  // rank waiting for a key rank 0 writes (its ncclUniqueId), or in a barrier
  // every rank must reach, has not failed on its own.
  enum class StoreWaits { kNone, kForRankZero, kForEveryRank };
  // The ranks waiting in a collective (timeout_seq), and those of `store` waits.
  Waiting CollectWaiting(StoreWaits store = StoreWaits::kNone) const;
  // The world by elimination when no input states its size: ranks count from
  // 0, so every rank below the highest present exists. 0 when nothing is present.
  int InferredWorld(const std::set<int>& present) const;
  // The size of the group the waited collective ran in, by its element counts
  // (all-gather: NumelOut / NumelIn; reduce-scatter: NumelIn / NumelOut); 0
  // where no watchdog line gives them.
  int GroupSizeByNumel(const Waiting& w) const;
  // The process groups the waiting ranks name (watchdog and status lines);
  // empty when no line names one (PyTorch before 2.2).
  std::set<std::string> WaitingGroups(const Waiting& w) const;

  // The ranks never_joined names (empty: it stays silent), and the world it
  // counted (*inferred: from the highest rank present, none being printed).
  std::vector<int> NeverJoinedRanks(const Waiting& w, const std::set<int>& present, int* world, bool* inferred) const;
  void NeverJoined(const CompiledCorrelation& c) const;
  // A store barrier more workers checked in to than its world size: an extra
  // process. Its waiting ranks beyond the world are the suspects.
  void StoreOverfull(const CompiledCorrelation& c) const;
  // The subjects whose store barrier counts more workers than its world, and that world.
  struct Overfull {
    std::vector<int> beyond;  // waiting ranks >= the world size
    std::vector<Evidence> evidence;
    int64_t world = 0, joined = 0;
  };
  Overfull StoreBarrierOverfull() const;
  // A stated world of which some ranks printed their start and stopped there
  // (nothing after it, nothing anywhere of a later stage) while the others
  // printed nothing: those never started or never reached the rendezvous.
  void NeverStarted(const CompiledCorrelation& c) const;
  // One log prints the start of a global rank twice (rank_started and
  // rank_started_last at two lines of one file): two processes claim it.
  void StartedTwice(const CompiledCorrelation& c) const;
  // Ranks timed out and rank 0 did not: absent (no world size printed) or busy
  // (its own lines show no timeout, error or end): rank 0,
  // where work only one process does runs, is the likely culprit.
  void RankZeroAlone(const CompiledCorrelation& c) const;
  void MissingDump(const CompiledCorrelation& c) const;
  void Behind(const CompiledCorrelation& c) const;
  void Mismatch(const CompiledCorrelation& c) const;
  void NotStarted(const CompiledCorrelation& c) const;
  void P2pUnpaired(const CompiledCorrelation& c) const;
  void P2pUnpairedColl(const CompiledCorrelation& c) const;
  // Of the sends nobody received and the receives nobody sent, by (src, dst):
  // where a receiver or a sender chose another peer, names it (a peer
  // mismatch) and marks both sides told. Dumps and COLL traces share it.
  using PeerOps = std::map<std::pair<int, int>, const CollectiveCall*>;
  void PeerMismatches(const CompiledCorrelation& c, const GroupView& g, const PeerOps& extra_send,
                      const PeerOps& extra_recv, std::set<std::pair<int, int>>* told_send,
                      std::set<std::pair<int, int>>* told_recv) const;
  void Straggler(const CompiledCorrelation& c) const;
  // The run's story (engine/models/story.cc): every process stopped inside NCCL init.
  void Stopped(const CompiledCorrelation& c) const;
  // Every process got through init (to its collectives, or to Init COMPLETE)
  // and none shows the end of its run.
  void StoppedInCollectives(const CompiledCorrelation& c) const;
  // The logs were recognised, yet no process shows any stage of its run, an
  // error or its end: nothing says whether it worked.
  void NoProgress(const CompiledCorrelation& c) const;
  // The logs show an abnormal end and nothing says why (story.cc).
  void EndedAbnormally(const CompiledCorrelation& c) const;
  // Some ranks show the end of their program, others do not (or printed
  // nothing, below the highest rank that did): "incomplete", never "ok".
  void EndedPartly(const CompiledCorrelation& c) const;
  // nccltests.cc: nccl-tests' best bus bandwidth against what the transports
  // NCCL chose in the same log carry.
  void NcclTestsBandwidth(const CompiledCorrelation& c) const;
  // engine/models/topology.cc: nvidia-smi topo -m's paths, read as NCCL reads them.
  void TopoGdrDistance(const CompiledCorrelation& c) const;
  void TopoP2pPath(const CompiledCorrelation& c) const;
  void ShmDespiteNvlink(const CompiledCorrelation& c) const;
  // Two ranks of one communicator whose init lines name the same GPU (busId) on one host.
  void DuplicateGpu(const CompiledCorrelation& c) const;
  // consensus_text.cc
  void DiedFirst(const CompiledCorrelation& c) const;
  // A rank without a timeout of its own whose first error, a peer that had
  // gone, came well after the others' watchdogs fired: it entered late.
  void ArrivedLate(const CompiledCorrelation& c) const;
  void NotStartedText(const CompiledCorrelation& c) const;
  // A stall report whose missing ranks are most of the world: the few that
  // submitted are the suspects.
  void LoneSubmitter(const CompiledCorrelation& c) const;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_CONSENSUS_CHECKS_H_
