// The run's story (DESIGN §10): for every process, the furthest stage of an
// NCCL / PyTorch run it reached and the line that proves it, and whether it
// ended abnormally. A healthy run goes
//
//   banner -> bootstrap -> init start -> topology/graph -> transport connects
//          -> Init COMPLETE -> collectives -> (teardown)
//
// and the engine knows what each stage prints next. The verdict builds on it:
// a run whose processes all stop inside init with no error did not finish
// ("incomplete"), and the stage where they stopped names the usual causes.
//
// Thread-safety: pure functions of a finalized JobState.
#ifndef NCCLSCAN_ENGINE_MODELS_STORY_H_
#define NCCLSCAN_ENGINE_MODELS_STORY_H_

#include <string>
#include <utility>
#include <vector>

#include "engine/state/job_state.h"

namespace ncclscan {

enum class Stage {
  kNone,          // nothing of NCCL's own story
  kBanner,        // "NCCL version …", cudaDriverVersion
  kBootstrap,     // bootstrap / network interfaces chosen, net plugin
  kInitStart,     // ncclCommInitRank … Init START
  kTopology,      // graph search done: channels, algorithms, NVLS
  kConnect,       // transport connects ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC")
  kInitComplete,  // Init COMPLETE
  kCollectives,   // COLL opCount lines, watchdog SeqNums, last enqueued/completed
};

const char* StageName(Stage s);
// What a healthy run prints after stage `s`.
const char* NextAfter(Stage s);
// Why a run usually stops at stage `s` and the test that tells the causes apart.
const char* CausesAt(Stage s);
const char* TestAt(Stage s);

struct StoryPoint {
  Stage stage = Stage::kNone;
  const Evidence* proof = nullptr;  // the line of the furthest stage
  const Evidence* last = nullptr;   // the last line of the process the facts saw
  bool abnormal = false;            // an error, crash, abort or exit status of its own
};

// The facts (rules/facts.yaml) the story reads, resolved once per rule set.
struct StoryFacts {
  std::vector<std::pair<Stage, int>> stages;  // a fact whose presence proves the stage
  std::vector<int> abnormal;                  // a process's own failure: error, crash, abort, exit
};
StoryFacts ResolveStoryFacts(const RuleSet& rules);

// The story of live subject `s`.
StoryPoint StoryOf(const JobState& state, const StoryFacts& facts, int s);

// The facts that show where a run stood or how it ended, beyond its stages: a
// clean end, a timeout, a stall report, a store wait, nccl-tests' results. A
// process holding one shows progress or its end.
std::vector<int> ProgressFacts(const RuleSet& rules);
// `sub` holds one of `facts`.
inline bool HasAnyFact(const Subject& sub, const std::vector<int>& facts) {
  for (int f : facts) {
    if (sub.Has(f)) return true;
  }
  return false;
}
// Some line finding is of `severity` or above, whoever printed it (at error:
// it shows how the run ended).
bool AnyLineAtLeast(const JobState& state, Severity severity);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_STORY_H_
