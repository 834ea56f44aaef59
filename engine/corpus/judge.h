// Judge: measures ncclscan's diagnosis of a real incident against the truth
// the incident's thread established (corpus/incidents/README.md: truth.json,
// written before the tool is run on the case). `ncclscan test` judges every
// directory holding truth.json and prints one table for the study split and
// one for the set-aside split (docs/evaluation.md). A miss is a measurement,
// never a test failure: a truth is not edited to match the tool.
//
// The judge reads the diagnosis as users get it, from its JSON
// (docs/diagnosis.schema.json), and only the parts every version of the
// schema has: the verdict status and the primary finding's rule, category,
// severity and suspects. A status it does not know (hung, crashed, ...) is a
// claim of failure, so a newer engine is judged by the same judge.
//
// Thread-safety: pure functions over values.
#ifndef NCCLSCAN_ENGINE_CORPUS_JUDGE_H_
#define NCCLSCAN_ENGINE_CORPUS_JUDGE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

// A validated truth.json.
struct Truth {
  std::string source;                          // the thread's address; decides the split
  std::string status;                          // healthy | failed | hung | crashed | incomplete
  std::string confidence;                      // established | likely | unknown ("" when not given)
  std::vector<std::string> categories;         // the incident vocabulary
  std::vector<std::string> accept_categories;  // ncclscan rule categories
  std::vector<std::string> accept_rules;       // ncclscan rule ids
  bool has_culprit = false;
  std::vector<int> culprit_ranks;
  std::vector<std::string> culprit_hosts;
  bool choice_needed = false;
  std::vector<std::string> traps;

  bool Healthy() const { return status == "healthy"; }
};

// Parses and validates truth.json text. On failure *err lists every problem,
// "; "-separated (a bad status, an unknown category, accept on a healthy case, ...).
bool ParseTruth(std::string_view json, Truth* truth, std::string* err);

// What a diagnosis claims, as the judge reads it from the diagnosis JSON.
struct Claim {
  std::string status;  // verdict.status
  bool has_primary = false;
  std::string rule, category, severity;  // of the primary finding
  // The primary's suspects; a finding without a "suspects" field gives its
  // ranks and hosts instead. A rank list too long to expand ends in -1 (no rank).
  std::vector<int> suspect_ranks;
  std::vector<std::string> suspect_hosts;
};

bool ReadClaim(std::string_view diagnosis_json, Claim* claim, std::string* err);

// "0-3,7" -> {0,1,2,3,7}. Expands at most kMaxExpandedRanks ranks; past that
// the list ends in -1, which no culprit names. False on a malformed list.
inline constexpr size_t kMaxExpandedRanks = 1 << 16;
bool ParseRankList(std::string_view compact, std::vector<int>* ranks);

// The split (corpus/incidents/README.md): lower case, no scheme, no leading
// "www.", no "#fragment", no trailing "/".
std::string NormaliseSource(std::string_view address);
// The first 8 hex digits of SHA-256(normalised address) as a number, modulo 100.
int SplitBucket(std::string_view address);
// Set aside when the bucket is below 30: rules are never written from these.
bool IsSetAside(std::string_view address);

// "ok" and "healthy" claim health; every other status does not.
bool ClaimsHealthy(std::string_view status);
// A status that says something is wrong: any but ok, healthy and the
// no-evidence ones (unknown, partial, incomplete).
bool ClaimsFailure(std::string_view status);

struct Judgement {
  std::string name;  // the case directory's name
  Truth truth;
  Claim claim;
  bool set_aside = false;
  // Failing cases (truth status is not healthy).
  bool cause_right = false;    // primary's rule or category accepted
  bool false_healthy = false;  // the tool claimed health
  // Healthy cases.
  bool false_alarm = false;    // primary at warning or above, or a failure status
  bool healthy_right = false;  // no false alarm and status ok / healthy
  // Where the culprit had to be chosen among several ranks or hosts.
  bool culprit_needed = false;
  bool culprit_right = false;  // a suspect host "name[address]" names the culprit host "address"

  bool Miss() const;
  std::string Expected() const;  // what the truth asks, in words
  std::string Got() const;       // what the primary was, in words
};

Judgement Judge(std::string name, const Truth& truth, const Claim& claim);

// One row of a table.
struct Tally {
  int cases = 0, failing = 0, cause_right = 0, culprit_needed = 0, culprit_right = 0, false_healthy = 0, healthy = 0,
      false_alarms = 0;
  void Add(const Judgement& j);
};

// One split's table: a row per truth category (a case counts in each of its
// categories) and the total, where each case counts once.
struct SplitTally {
  std::map<std::string, Tally> by_category;
  Tally total;
};
SplitTally CountSplit(const std::vector<Judgement>& judgements, bool set_aside);

// The "study" and "set aside" tables.
std::string RenderJudgeTables(const std::vector<Judgement>& judgements);
// One line per miss: case, split, what was expected, what the primary was.
std::string RenderJudgeMisses(const std::vector<Judgement>& judgements);
// Per-case results and both splits' totals ("ncclscan.judge/1"), for CI and
// for comparing one engine with another.
std::string RenderJudgeJson(const std::vector<Judgement>& judgements);

}  // namespace ncclscan

#endif  // NCCLSCAN_ENGINE_CORPUS_JUDGE_H_
