#include "engine/analyze.h"

#include "engine/source.h"

namespace ncclscan {

Analysis Analyze(const RuleSet& rules, const std::vector<std::string>& paths, const ScanOptions& opts) {
  Analysis a;
  a.state = std::make_unique<JobState>(&rules);
  std::vector<std::string> args = paths.empty() ? std::vector<std::string>{"-"} : paths;
  ExpandedInputs in = ExpandInputs(args, opts.globs, &a.errors);
  a.state->skipped() = in.skipped;  // the scan adds what content hygiene skips
  Scanner scanner(&rules, opts);
  scanner.Scan(in.files, a.state.get(), [&](const std::string& msg) { a.errors.push_back(msg); });
  a.inputs = a.state->ReadableFiles();
  a.state->Finalize();
  a.diagnosis = Diagnose(*a.state);
  return a;
}

}  // namespace ncclscan
