// The determinism property (DESIGN §4): the same input gives byte-identical
// JSON whatever the thread count and however it is split into partials. Shared
// by the differential unit test (scanner_test) and its fuzzer
// (fuzz/determinism_fuzz).
#ifndef NCCLSCAN_TESTS_DIFFERENTIAL_H_
#define NCCLSCAN_TESTS_DIFFERENTIAL_H_

#include <string>
#include <vector>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "engine/run/partial.h"

namespace ncclscan {

// Scans `files` three ways with chunks of `chunk` bytes: at -j1, at -j4, and as
// one partial per file (written at -j1 into `scratch_dir`) merged in reverse.
// Returns "" when the three JSON diagnoses are byte-identical, else which differ.
inline std::string DifferentialScan(const RuleSet& rules, const std::vector<std::string>& files, size_t chunk,
                                    const std::string& scratch_dir) {
  ScanOptions j1, j4;
  j1.jobs = 1;
  j4.jobs = 4;
  j1.chunk_size = j4.chunk_size = chunk;
  Analysis a1 = Analyze(rules, files, j1);
  Analysis a4 = Analyze(rules, files, j4);
  const std::string want = RenderJson(*a1.state, a1.diagnosis);
  if (RenderJson(*a4.state, a4.diagnosis) != want) return "-j4 differs from -j1";
  std::vector<std::string> parts;
  for (size_t i = files.size(); i-- > 0;) {
    const std::string part = scratch_dir + "/" + std::to_string(i) + ".partial";
    std::vector<std::string> errors;
    size_t inputs = 0;
    std::string err;
    if (!WritePartialScan(rules, {files[i]}, j1, part, &errors, &inputs, &err)) return "partial: " + err;
    parts.push_back(part);
  }
  Analysis merged;
  std::string err;
  if (!MergePartials(rules, parts, &merged, &err)) return "merge: " + err;
  if (RenderJson(*merged.state, merged.diagnosis) != want) return "one partial per file, merged, differs from -j1";
  return "";
}

}  // namespace ncclscan

#endif  // NCCLSCAN_TESTS_DIFFERENTIAL_H_
