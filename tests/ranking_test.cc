// The ranking of findings (engine/models/diagnosis.h RanksBefore, PrimaryOf), row by
// row: which finding goes first and why. Each row is one rule of the order;
// inverting any of them in the engine fails its row.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/models/diagnosis.h"

namespace ncclscan {
namespace {

struct Spec {
  const char* id;
  Severity severity;
  Role role;
  double confidence;
  bool collective;  // found by the collective-consensus model (a culprit), else a line rule
};

Finding Make(const Spec& s) {
  Finding f;
  f.rule_id = s.id;
  f.severity = s.severity;
  f.role = s.role;
  f.confidence = s.confidence;
  if (s.collective) f.kind = CorrelationKind::kCollective;
  return f;
}

struct Row {
  const char* why;
  Spec first;
  Spec second;
};

const Row kRows[] = {
    {"a cascade goes after everything else, however severe",
     {"B-ROOT", Severity::kWarning, Role::kRoot, 0.5, false},
     {"A-CASCADE", Severity::kCritical, Role::kCascade, 1.0, false}},
    {"the more severe first",
     {"B-ERROR", Severity::kError, Role::kRoot, 0.5, false},
     {"A-WARNING", Severity::kWarning, Role::kRoot, 1.0, false}},
    {"at equal severity the culprit the consensus model names goes before the reporters' findings",
     {"Z-CULPRIT", Severity::kError, Role::kContext, 0.5, true},
     {"A-TIMEOUT", Severity::kError, Role::kRoot, 1.0, false}},
    {"a culprit does not outrank a more severe finding",
     {"A-CRITICAL", Severity::kCritical, Role::kRoot, 0.5, false},
     {"Z-CULPRIT", Severity::kError, Role::kRoot, 1.0, true}},
    {"root causes before context",
     {"B-ROOT", Severity::kWarning, Role::kRoot, 0.5, false},
     {"A-CONTEXT", Severity::kWarning, Role::kContext, 1.0, false}},
    {"a context warning (background) goes after what sets the verdict, even an info root",
     {"B-STORY", Severity::kInfo, Role::kRoot, 0.5, false},
     {"A-CONTEXT", Severity::kWarning, Role::kContext, 1.0, false}},
    {"a context error is no background: severity orders it",
     {"B-CONTEXT", Severity::kError, Role::kContext, 0.5, false},
     {"A-WARNING", Severity::kWarning, Role::kRoot, 1.0, false}},
    {"then the more confident",
     {"B-SURE", Severity::kWarning, Role::kRoot, 0.9, false},
     {"A-UNSURE", Severity::kWarning, Role::kRoot, 0.6, false}},
    {"then by rule id, so the order never depends on the input's",
     {"A-RULE", Severity::kWarning, Role::kRoot, 0.8, false},
     {"B-RULE", Severity::kWarning, Role::kRoot, 0.8, false}},
};

TEST(Ranking, EachRuleOfTheOrder) {
  for (const Row& r : kRows) {
    const Finding a = Make(r.first), b = Make(r.second);
    EXPECT_TRUE(RanksBefore(a, b)) << r.why;
    EXPECT_FALSE(RanksBefore(b, a)) << r.why;
  }
}

TEST(Ranking, PrimaryIsTheFirstAtWarningOrAbove) {
  std::vector<Finding> fs = {Make({"CONTEXT-INFO", Severity::kInfo, Role::kContext, 1.0, false}),
                             Make({"VICTIM", Severity::kError, Role::kCascade, 0.9, false}),
                             Make({"CULPRIT", Severity::kError, Role::kRoot, 0.7, true}),
                             Make({"TIMEOUT", Severity::kError, Role::kRoot, 0.9, false})};
  std::sort(fs.begin(), fs.end(), RanksBefore);
  ASSERT_EQ(PrimaryOf(fs), 0);
  EXPECT_EQ(fs[0].rule_id, "CULPRIT");
  EXPECT_EQ(fs[1].rule_id, "TIMEOUT");
  EXPECT_EQ(fs.back().rule_id, "VICTIM");
  // Context alone names no primary: a healthy run's notes are not its problem.
  std::vector<Finding> healthy = {Make({"NOTE", Severity::kInfo, Role::kContext, 1.0, false})};
  EXPECT_EQ(PrimaryOf(healthy), -1);
  // A context warning beside the run's story neither leads nor is the primary
  // (a benign line stays benign); a context error still is.
  std::vector<Finding> benign = {Make({"CONTEXT-WARN", Severity::kWarning, Role::kContext, 1.0, false}),
                                 Make({"STORY", Severity::kInfo, Role::kRoot, 0.5, false})};
  std::sort(benign.begin(), benign.end(), RanksBefore);
  EXPECT_EQ(benign[0].rule_id, "STORY");
  EXPECT_EQ(PrimaryOf(benign), -1);
  std::vector<Finding> raised = {Make({"CONTEXT-ERROR", Severity::kError, Role::kContext, 1.0, false})};
  EXPECT_EQ(PrimaryOf(raised), 0);
  // Only cascades: the first of them is the primary (something did fail).
  std::vector<Finding> cascades = {Make({"V", Severity::kError, Role::kCascade, 1.0, false})};
  EXPECT_EQ(PrimaryOf(cascades), 0);
}

}  // namespace
}  // namespace ncclscan
