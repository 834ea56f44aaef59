// Known issues (docs/rules.md §2): each finding's structured references judged
// against the NCCL / PyTorch versions its subjects run.
#ifndef NCCLSCAN_ENGINE_MODELS_KNOWN_ISSUES_H_
#define NCCLSCAN_ENGINE_MODELS_KNOWN_ISSUES_H_

#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/state/job_state.h"

namespace ncclscan {

// Notes each finding's known issues against the versions the log runs, and
// drops a version-bound finding (its rule's `affected_only` issue) where every
// version its subjects run is known and unaffected.
void JudgeKnownIssues(const JobState& state, std::vector<Finding>* fs);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_MODELS_KNOWN_ISSUES_H_
