// CorpusRunner: `ncclscan test` — runs every regression case under the given
// roots and compares the diagnosis with the case's expected.json:
//
//   {"description": "…",
//    "primary": {"rule": "DIVERGENT-RANK", "category": "desync", "ranks": "13", "hosts": ["gpu-node-001"],
//                "suspect_hosts": ["gpu-node-001"]} | null,
//    "present": ["TORCH-WATCHDOG-TIMEOUT", {"rule": "…", "ranks": "0-3"}],
//    "absent": ["NET-SOCKET-MULTINODE"],
//    "max_severity": "info",
//    "status": "unknown",
//    "known_failure": "why the tool cannot meet this expectation yet (XFAIL; XPASS fails)",
//    "summary": {"ranks": "0-15", "hosts": ["a", "b"], "communicators": 1, "nccl_versions": ["2.21.5+cuda12.4"]}}
//
// Every key but "description" is optional. A case is a directory holding
// expected.json; all other files in it (except truth.json, SOURCE.md and
// README.md) are its logs.
//
// A real incident is a directory holding truth.json (corpus/incidents/README.md;
// a case may hold both). It is scanned the same way and judged against its truth
// (engine/corpus/judge.h): the study and set-aside tables follow the closing line. A
// miss never fails the run; a malformed truth.json is an error, as a malformed
// expected.json is.
//
// Thread-safety: single-threaded driver (each case's scan is parallel).
#ifndef NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_H_
#define NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_H_

#include <string>
#include <vector>

#include "engine/scan/scanner.h"
#include "rules/rule_set.h"

namespace ncclscan {

struct CorpusOptions {
  bool update = false;            // rewrite expected.json of the selected cases
  bool update_golden = false;     // write golden.json (the whole JSON diagnosis) of the selected cases
  std::vector<std::string> only;  // case names to run (empty = all)
  ScanOptions scan;
  bool color = false;
  bool judge_misses = false;  // one line per judged miss after the tables
  std::string judge_json;     // write the judge's per-case results and totals here
};

struct CorpusResult {
  int passed = 0;
  int failed = 0;
  int updated = 0;
  int errors = 0;          // cases that could not be read (bad expected.json)
  int known_failures = 0;  // cases marked "known_failure" that still fail (XFAIL)
  int judged = 0;          // real incidents judged against their truth.json
};

// Appends the per-case report and the closing "N passed, N failed" line to *out,
// then the judge's tables (and misses), and runner errors (no cases, an unknown
// --case name, an unreadable expected.json or truth.json) to *err. `update`
// rewrites expected.json losslessly: every key kept, what changed listed under
// the case; a file that is not a regular file, or holds keys no expectation
// has, is refused (an error), never rewritten.
CorpusResult RunCorpus(const RuleSet& rules, const std::vector<std::string>& roots, const CorpusOptions& opts,
                       std::string* out, std::string* err);

// Finds case directories (those holding expected.json) under root, sorted:
// each real directory once (link loops end), symbolic links followed only
// where they stay inside root.
std::vector<std::string> FindCases(const std::string& root);
// Finds real incidents (directories holding truth.json) under root, the same way.
std::vector<std::string> FindTruthCases(const std::string& root);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_H_
