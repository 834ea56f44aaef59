// Internal to engine/corpus: what the runner (corpus_runner.cc) and the
// expectation file's code (corpus_expectation.cc) share.
//
// Thread-safety: pure functions over their arguments.
#ifndef NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_INTERNAL_H_
#define NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/diagnosis.h"
#include "engine/run/analyze.h"

namespace ncclscan {

// A case's expected.json, as read.
struct Expectation {
  std::string description;
  bool has_primary = false;  // key present
  bool primary_null = false;
  std::string primary_rule, primary_category, primary_ranks;
  bool primary_has_ranks = false, primary_has_hosts = false;
  std::vector<std::string> primary_hosts;
  // "suspect_hosts": the hosts the primary suspects (a finding that names the
  // first of the nodes it lists, `suspects: first`).
  bool primary_has_suspect_hosts = false;
  std::vector<std::string> primary_suspect_hosts;
  struct Present {
    std::string rule, ranks;
    bool has_ranks = false;
  };
  std::vector<Present> present;
  std::vector<std::string> absent;
  bool has_present = false, has_absent = false;
  std::string max_severity;
  std::string status;  // verdict status (ok warn fail unknown partial), "" = not checked
  // Why the tool cannot reach this (honest) expectation yet; the case then
  // reports XFAIL while it fails, and fails (XPASS) once it passes, so the
  // note is removed when the tool catches up.
  std::string known_failure;
  bool has_summary = false;
  std::string sum_ranks;
  bool sum_has_ranks = false, sum_has_hosts = false, sum_has_comms = false, sum_has_versions = false;
  std::vector<std::string> sum_hosts, sum_versions;
  int64_t sum_comms = 0;
  std::vector<std::string> unknown_keys;  // keys no expectation has: not a file `--update` may rewrite
};

// Reads expected.json at `path`; false with *err when it is malformed.
bool ParseExpectation(const std::string& path, Expectation* ex, std::string* err);

// Compares; returns the list of differences (empty = pass).
std::vector<std::string> Compare(const Expectation& ex, const Analysis& a);

// The current diagnosis as the case's new expectation (--update); what no
// longer holds goes to *notes.
std::string WriteExpectation(const Expectation& old, const Analysis& a, std::vector<std::string>* notes);

// "RULE [severity, role] ranks R hosts H", a finding in one line.
std::string Describe(const Finding& f);
// "[a,b,c]".
std::string JoinList(const std::vector<std::string>& v);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_CORPUS_CORPUS_RUNNER_INTERNAL_H_
