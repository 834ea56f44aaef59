// Correlations: the cross-rank rule kinds of docs/rules.md §3 (consensus,
// condition, absence, missing_ranks, extreme, first_in_time, peer_map, and the
// collective checks of engine/models/consensus.h), run once over the facts of every
// subject after the whole input is read. Each hit becomes one Finding.
//
// What a keyed fact's key names (a communicator or a process group) comes from
// the fact's declared `key:`, never from its name.
//
// Thread-safety: reads a finalized JobState; appends to the caller's vector.
#ifndef NCCLSCAN_ENGINE_MODELS_CORRELATE_H_
#define NCCLSCAN_ENGINE_MODELS_CORRELATE_H_

#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

// Appends one Finding per correlation hit, in the order of the rule set's
// correlations (enabled ones only).
// A correlation that throws is recorded in *errors (RunGuarded), the others run.
void RunCorrelations(const JobState& state, std::vector<Finding>* out, std::vector<std::string>* errors = nullptr);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_CORRELATE_H_
