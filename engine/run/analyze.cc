#include "engine/run/analyze.h"

#include <sys/stat.h>

#include "engine/io/source.h"

namespace ncclscan {

Analysis Analyze(const RuleSet& rules, const std::vector<std::string>& paths, const ScanOptions& opts) {
  Analysis a;
  a.state = std::make_unique<JobState>(&rules);
  std::vector<std::string> args = paths.empty() ? std::vector<std::string>{"-"} : paths;
  ExpandedInputs in = ExpandInputs(args, opts.globs, &a.errors);
  if (opts.progress_total) {
    uint64_t total = 0;
    for (const auto& f : in.files) {
      struct stat st;
      if (f.path != "-" && stat(f.path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        total += static_cast<uint64_t>(st.st_size);
    }
    opts.progress_total->store(total, std::memory_order_relaxed);
  }
  a.state->skipped() = in.skipped;  // the scan adds what content hygiene skips
  Scanner scanner(&rules, opts);
  scanner.Scan(in.files, a.state.get(), [&](const std::string& msg) { a.errors.push_back(msg); });
  a.inputs = a.state->ReadableFiles();
  a.state->Finalize();
  a.diagnosis = Diagnose(*a.state);
  return a;
}

}  // namespace ncclscan
