// The judge's tables, miss lines and JSON (engine/corpus/judge.h).
#include <fmt/format.h>

#include "engine/corpus/judge.h"
#include "parsers/text_util.h"

namespace ncclscan {

namespace {

constexpr const char* kRowFormat = "  {:<20} {:>5}  {:>7}  {:>12}  {:>13}  {:>13}  {:>7}  {:>12}\n";

std::string Fraction(int n, int of, bool percent) {
  if (of == 0) return "-";
  if (!percent) return fmt::format("{}/{}", n, of);
  return fmt::format("{}/{} {:>3}%", n, of, (200 * n + of) / (2 * of));  // rounded half up
}

std::string Row(const std::string& label, const Tally& t) {
  return fmt::format(kRowFormat, label, t.cases, t.failing, Fraction(t.cause_right, t.failing, true),
                     Fraction(t.culprit_right, t.culprit_needed, false), t.false_healthy, t.healthy, t.false_alarms);
}

std::string Table(const char* title, const SplitTally& t) {
  std::string out = fmt::format("{}: {} case{}\n", title, t.total.cases, t.total.cases == 1 ? "" : "s");
  out += fmt::format(kRowFormat, "category", "cases", "failing", "cause right", "culprit right", "false healthy",
                     "healthy", "false alarms");
  for (const auto& [category, row] : t.by_category) out += Row(category, row);
  out += Row("total", t.total);
  return out;
}

const char* SplitName(bool set_aside) { return set_aside ? "set aside" : "study"; }

std::string Quote(std::string_view s) {
  std::string out = "\"";
  AppendJsonEscaped(&out, s);
  return out + "\"";
}

const char* Bool(bool b) { return b ? "true" : "false"; }

std::string TallyJson(const Tally& t) {
  return fmt::format(
      "{{\"cases\": {}, \"failing\": {}, \"cause_right\": {}, \"culprit_needed\": {}, \"culprit_right\": {}, "
      "\"false_healthy\": {}, \"healthy\": {}, \"false_alarms\": {}}}",
      t.cases, t.failing, t.cause_right, t.culprit_needed, t.culprit_right, t.false_healthy, t.healthy, t.false_alarms);
}

std::string SplitJson(const SplitTally& t) {
  std::string out = "{\"total\": " + TallyJson(t.total) + ", \"by_category\": {";
  bool first = true;
  for (const auto& [category, row] : t.by_category) {
    out += std::string(first ? "\n      " : ",\n      ") + Quote(category) + ": " + TallyJson(row);
    first = false;
  }
  return out + "}}";
}

std::string PrimaryJson(const Claim& c) {
  if (!c.has_primary) return "null";
  return fmt::format("{{\"rule\": {}, \"category\": {}, \"severity\": {}}}", Quote(c.rule), Quote(c.category),
                     Quote(c.severity));
}

// A verdict that does not apply to the case is null.
std::string Verdicts(const Judgement& j) {
  if (j.truth.Healthy()) {
    return fmt::format("\"false_alarm\": {}, \"healthy_right\": {}", Bool(j.false_alarm), Bool(j.healthy_right));
  }
  return fmt::format("\"cause_right\": {}, \"false_healthy\": {}, \"culprit_right\": {}", Bool(j.cause_right),
                     Bool(j.false_healthy), j.culprit_needed ? Bool(j.culprit_right) : "null");
}

std::string CaseJson(const Judgement& j) {
  return fmt::format(
      "    {{\"case\": {}, \"source\": {}, \"split\": {}, \"truth_status\": {}, \"categories\": [{}], "
      "\"status\": {}, \"primary\": {}, {}, \"miss\": {}}}",
      Quote(j.name), Quote(j.truth.source), Quote(j.set_aside ? "set_aside" : "study"), Quote(j.truth.status),
      [&] {
        std::string list;
        for (const auto& c : j.truth.categories) list += (list.empty() ? "" : ", ") + Quote(c);
        return list;
      }(),
      Quote(j.claim.status), PrimaryJson(j.claim), Verdicts(j), Bool(j.Miss()));
}

}  // namespace

std::string RenderJudgeTables(const std::vector<Judgement>& judgements) {
  std::string out = "judge: real incidents against their truth (docs/evaluation.md)\n";
  out += Table(SplitName(false), CountSplit(judgements, false));
  out += Table(SplitName(true), CountSplit(judgements, true));
  return out;
}

std::string RenderJudgeMisses(const std::vector<Judgement>& judgements) {
  std::string out;
  for (const auto& j : judgements) {
    if (!j.Miss()) continue;
    out += fmt::format("MISS {} [{}]: expected {}; got {}\n", j.name, SplitName(j.set_aside), j.Expected(), j.Got());
  }
  return out;
}

std::string RenderJudgeJson(const std::vector<Judgement>& judgements) {
  std::string out = "{\n  \"schema\": \"ncclscan.judge/1\",\n  \"cases\": [\n";
  for (size_t i = 0; i < judgements.size(); ++i) {
    out += CaseJson(judgements[i]) + (i + 1 < judgements.size() ? ",\n" : "\n");
  }
  out += "  ],\n  \"totals\": {\n    \"study\": " + SplitJson(CountSplit(judgements, false)) + ",\n";
  out += "    \"set_aside\": " + SplitJson(CountSplit(judgements, true)) + "\n  }\n}\n";
  return out;
}

}  // namespace ncclscan
