// Fuzzes the partial reader past its zstd frame: a partial's body (rules
// signature, input problems, segments, each an encoded JobState) through the
// checks a file's body gets, JobState::Decode, Absorb, Finalize, the diagnosis
// and the JSON report, as one partial and split in two. Seeds are the bodies
// of partials of corpus cases (run_fuzzers.sh). A decoded state that passes
// must be safe to use: out-of-range indices and ranks are rejected at decode.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/reports/report.h"
#include "engine/run/partial.h"
#include "rules/rule_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<ncclscan::RuleSet> rules = [] {
    std::string err;
    return ncclscan::LoadRules({}, &err);
  }();
  if (!rules) __builtin_trap();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  for (int split = 0; split < 2; ++split) {
    std::vector<std::string_view> bodies{in};
    if (split) bodies = {in.substr(0, size / 2), in.substr(size / 2)};
    ncclscan::Analysis a;
    std::string err;
    if (ncclscan::MergePartialBodies(*rules, bodies, &a, &err)) {
      (void)ncclscan::RenderJson(*a.state, a.diagnosis);
    } else if (err.empty()) {
      __builtin_trap();  // a failure has a reason
    }
  }
  return 0;
}
