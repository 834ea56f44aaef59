// Analyze: the whole data flow for one set of inputs — expand paths (input
// hygiene and -g globs, engine/io/source.h), scan, finalize identities,
// correlate, rank. The CLI and the corpus runner use it.
//
// Thread-safety: each call is independent; the RuleSet is shared read-only.
#ifndef NCCLSCAN_ENGINE_RUN_ANALYZE_H_
#define NCCLSCAN_ENGINE_RUN_ANALYZE_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/scan/scanner.h"
#include "engine/state/job_state.h"

namespace ncclscan {

struct Analysis {
  std::unique_ptr<JobState> state;
  Diagnosis diagnosis;
  std::vector<std::string> errors;  // input problems ("cannot read X: reason")
  size_t inputs = 0;                // files that were opened for scanning
};

// `paths` empty means stdin. Errors are collected, never fatal.
Analysis Analyze(const RuleSet& rules, const std::vector<std::string>& paths, const ScanOptions& opts);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_RUN_ANALYZE_H_
