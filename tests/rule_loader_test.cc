#include "rules/rule_loader.h"

#include <gtest/gtest.h>

namespace ncclscan {
namespace {

const char* kFacts =
    "facts:\n"
    "  - name: network\n"
    "    merge: last\n"
    "    description: d\n";

// Loads one source (no built-in rules) and returns every rendered diagnostic.
std::string Load(const std::string& text, std::unique_ptr<RuleSet>* out = nullptr) {
  RuleLoader loader;
  loader.AddSource("t.yaml", text);
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  std::string r;
  for (const auto& d : diags) r += RenderDiagnostic(d, loader.sources());
  if (out) *out = std::move(set);
  return r;
}

std::string Rule(const std::string& id, const std::string& pattern, const std::string& extra = "",
                 const std::string& match = "n1:1:1 [0] NCCL INFO Using network IB",
                 const std::string& no_match = "n1:1:1 [0] NCCL INFO Using nothing") {
  return "  - id: " + id +
         "\n"
         "    title: t\n"
         "    category: transport\n"
         "    family: nccl\n"
         "    pattern: '" + pattern + "'\n"
         "    facts: {network: \"{network}\"}\n" + extra +
         "    examples:\n"
         "      match: [\"" + match + "\"]\n"
         "      no_match: [\"" + no_match + "\"]\n";
}

TEST(RuleLoader, AcceptsAValidRule) {
  std::unique_ptr<RuleSet> set;
  EXPECT_EQ(Load(std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))"), &set), "");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->rules().size(), 1u);
}

TEST(RuleLoader, RejectsUnknownKey) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "    titel: oops\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:5: error: unknown key 'titel' in rule [E-UNKNOWN-KEY]\n"
            "        titel: oops\n"
            "        ^\n"
            "help: allowed keys: category, examples, facts, family, fields, finding, id, identity, lookup, pattern, "
            "references, subject, title\n");
}

TEST(RuleLoader, RejectsBadRegexWithCaret) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+)))");
  EXPECT_EQ(Load(text),
            "t.yaml:10:15: error: invalid regex: unexpected ): Using network (?P<network>\\S+)) [E-BAD-REGEX]\n"
            "        pattern: 'Using network (?P<network>\\S+))'\n"
            "                  ^\n");
}

TEST(RuleLoader, RejectsDuplicateId) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))") +
                     Rule("NET-A", R"(Using network (?P<network>\S+))");
  EXPECT_EQ(Load(text),
            "t.yaml:15:9: error: duplicate rule id 'NET-A' [E-DUPLICATE-ID]\n"
            "      - id: NET-A\n"
            "            ^\n"
            "help: first defined at t.yaml:6:9\n");
}

TEST(RuleLoader, RejectsSampleThatDoesNotMatch) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "", "n1:1:1 [0] NCCL INFO Using networks");
  EXPECT_EQ(Load(text),
            "t.yaml:13:15: error: rule NET-A does not match its example [E-SAMPLE-NO-MATCH]\n"
            "          match: [\"n1:1:1 [0] NCCL INFO Using networks\"]\n"
            "                  ^\n"
            "help: the line was read as family 'nccl' with message 'Using networks'\n");
}

TEST(RuleLoader, RejectsSampleThatMatchesNoMatch) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "", "n1:1:1 [0] NCCL INFO Using network IB",
                          "n1:1:1 [0] NCCL INFO Using network Socket");
  EXPECT_EQ(Load(text),
            "t.yaml:14:18: error: rule NET-A matches a no_match example [E-SAMPLE-MATCHED]\n"
            "          no_match: [\"n1:1:1 [0] NCCL INFO Using network Socket\"]\n"
            "                     ^\n");
}

// Rules are compiled and their examples checked on two threads: the report
// must still list problems in rule order, every time.
TEST(RuleLoader, ReportsProblemsOfManyRulesInRuleOrder) {
  std::string text = std::string(kFacts) + "rules:\n";
  std::string want;
  for (int i = 0; i < 12; ++i) {
    std::string id = "NET-" + std::to_string(i);
    bool bad = i % 3 != 1;
    text += Rule(id, R"(Using network (?P<network>\S+))", "",
                 bad ? "n1:1:1 [0] NCCL INFO Using networks" : "n1:1:1 [0] NCCL INFO Using network IB");
    if (bad) want += "rule " + id + " does not match its example";
  }
  for (int round = 0; round < 20; ++round) {
    std::string out = Load(text), got;
    for (size_t k = out.find("rule NET-"); k != std::string::npos; k = out.find("rule NET-", k + 1)) {
      got += out.substr(k, out.find(" [E-", k) - k);
    }
    ASSERT_EQ(got, want) << out;
  }
}

TEST(RuleLoader, RejectsUnknownFactAndReportsAllProblems) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "    facts: {netwrk: \"{network}\"}\n") +
                     Rule("bad id", R"(Using network (?P<network>\S+))");
  std::string out = Load(text);
  EXPECT_NE(out.find("[E-UNKNOWN-FACT]"), std::string::npos) << out;
  EXPECT_NE(out.find("invalid id 'bad id'"), std::string::npos) << out;
}

TEST(RuleLoader, RejectsPatternWithoutLiteral) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"((?P<network>\w+) \d+)", "",
                                                            "n1:1:1 [0] NCCL INFO abc 12", "n1:1:1 [0] NCCL INFO -");
  EXPECT_NE(Load(text).find("[E-RULE-NO-LITERAL]"), std::string::npos);
}

TEST(RuleLoader, RejectsHugeRegex) {
  std::string big = "Using network (?P<network>";
  for (int i = 0; i < 100; ++i) big += "[a-z]{1000}";
  big += ")";
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", big);
  std::string out = Load(text);
  EXPECT_NE(out.find("[E-REGEX-TOO-BIG]"), std::string::npos) << out.substr(0, 300);
}

TEST(RuleLoader, RejectsNonYaml) {
  EXPECT_EQ(Load("rules: [a, b\n  c: {"),
            "t.yaml:2:4: error: not valid YAML: end of sequence flow not found [E-YAML]\n"
            "      c: {\n"
            "       ^\n");
}

TEST(RuleLoader, RejectsUnknownTemplateVariable) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))",
                          "    finding: {severity: error, explanation: \"uses {netwrk}\"}\n");
  EXPECT_NE(Load(text).find("unknown variable '{netwrk}'"), std::string::npos);
}

// Regression: a lookup default naming itself recursed until the stack overflowed
// at scan time, after `rules --check` had said ok.
TEST(RuleLoader, RejectsLookupDefaultThatNamesItself) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))",
                          "    lookup:\n      loop: {from: network, map: {}, default: \"{loop}\"}\n");
  std::string out = Load(text);
  EXPECT_NE(out.find("lookup 'loop' default: unknown variable '{loop}' [E-TEMPLATE]"), std::string::npos) << out;
}

TEST(RuleLoader, LaterLayerOverridesRule) {
  RuleLoader loader;
  loader.AddSource("a.yaml", std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))"));
  loader.BeginLayer();
  loader.AddSource("b.yaml", "rules:\n" + Rule("NET-A", R"(Using network (?P<network>IB))", "",
                                                 "n1:1:1 [0] NCCL INFO Using network IB",
                                                 "n1:1:1 [0] NCCL INFO Using network Socket"));
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  ASSERT_TRUE(set) << (diags.empty() ? "" : diags[0].message);
  ASSERT_EQ(set->rules().size(), 1u);
  EXPECT_EQ(set->rules()[0].spec.source_file, "b.yaml");
}

TEST(RuleLoader, BuiltInRulesLoadAndTheirSamplesPass) {
  std::string errors;
  auto set = LoadRules({}, &errors);
  ASSERT_TRUE(set) << errors;
  size_t samples = 0;
  for (const auto& r : set->rules()) {
    EXPECT_FALSE(r.spec.match.empty()) << r.spec.id.value;
    EXPECT_FALSE(r.spec.no_match.empty()) << r.spec.id.value;
    samples += r.spec.match.size() + r.spec.no_match.size();
  }
  EXPECT_GT(samples, 20u);
  EXPECT_GT(set->correlations().size(), 5u);
}

}  // namespace
}  // namespace ncclscan
