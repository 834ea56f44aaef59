#include "rules/rule_loader.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "parsers/line_parser.h"

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
                 const std::string& no_match = "n1:1:1 [0] NCCL INFO Not using network IB") {
  return "  - id: " + id +
         "\n"
         "    title: t\n"
         "    category: transport\n"
         "    family: nccl\n"
         "    pattern: '" +
         pattern +
         "'\n"
         "    facts: {network: \"{network}\"}\n" +
         extra +
         "    examples:\n"
         "      match: [\"" +
         match +
         "\"]\n"
         "      no_match: [\"" +
         no_match + "\"]\n";
}

TEST(RuleLoader, AcceptsAValidRule) {
  std::unique_ptr<RuleSet> set;
  EXPECT_EQ(Load(std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))"), &set), "");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->rules().size(), 1u);
}

// `remember:` names are variables of every rule (and a lookup's `from:`);
// a remember template is checked like any other.
TEST(RuleLoader, RememberedNamesAreVariablesOfEveryRule) {
  const std::string head =
      std::string(kFacts) + "rules:\n" +
      Rule("NET-HEAD", R"(Using network (?P<network>\S+))", "    remember: {net_seen: \"{network}\"}\n");
  std::unique_ptr<RuleSet> set;
  EXPECT_EQ(Load(head + Rule("NET-B", R"(Using network (?P<x>\S+))",
                             "    lookup:\n      network: {from: net_seen, map: {}, default: \"{net_seen}\"}\n"),
                 &set),
            "");
  ASSERT_TRUE(set);
  EXPECT_EQ(set->remembered(), std::vector<std::string>{"net_seen"});
  EXPECT_NE(Load(std::string(kFacts) + "rules:\n" +
                 Rule("NET-C", R"(Using network (?P<network>\S+))", "    remember: {seen: \"{nope}\"}\n")),
            "");
}

// `subject: host` is the node a line names: it needs the capture that names it.
TEST(RuleLoader, SubjectHostNeedsAHostCapture) {
  std::unique_ptr<RuleSet> set;
  EXPECT_EQ(Load(std::string(kFacts) + "rules:\n" +
                     Rule("NET-H", R"(Using network (?P<network>\S+)(?: on (?P<host>\S+))?)", "    subject: host\n"),
                 &set),
            "");
  const std::string out = Load(std::string(kFacts) + "rules:\n" +
                               Rule("NET-X", R"(Using network (?P<network>\S+))", "    subject: host\n"));
  EXPECT_NE(out.find("subject: host needs a capture group named 'host' [E-TEMPLATE]"), std::string::npos) << out;
}

// Finding keys that take one word of a few: each word loads, another is an error naming them.
TEST(RuleLoader, FindingChoicesTakeTheirWords) {
  struct Key {
    const char* key;
    std::vector<const char*> words;
    const char* bad;
  };
  for (const Key& k :
       {Key{"suspects", {"all", "first", "none"}, "last"}, Key{"impact", {"failure", "performance"}, "speed"},
        Key{"scope", {"any", "multi_node"}, "one_node"}, Key{"stops_run", {"hang", "error"}, "crash"}}) {
    auto rule = [&](const std::string& word) {
      return std::string(kFacts) + "rules:\n" +
             Rule("NET-K", R"(Using network (?P<network>\S+))",
                  "    finding: {severity: warning, explanation: x, " + std::string(k.key) + ": " + word + "}\n");
    };
    std::unique_ptr<RuleSet> set;
    for (const char* w : k.words) EXPECT_EQ(Load(rule(w), &set), "") << k.key << ": " << w;
    const std::string bad = Load(rule(k.bad));
    EXPECT_NE(bad.find("unknown " + std::string(k.key) + " '" + k.bad + "' [E-BAD-VALUE]"), std::string::npos) << bad;
  }
}

TEST(RuleLoader, RejectsUnknownKey) {
  std::string text =
      std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))", "    titel: oops\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:5: error: unknown key 'titel' in rule [E-UNKNOWN-KEY]\n"
            "        titel: oops\n"
            "        ^\n"
            "help: allowed keys: category, enabled, examples, facts, fallback, family, fields, finding, id, identity, "
            "level, lookup, pattern, references, remember, subject, title\n");
}

// A catch-all: tried only where no rule with a finding matched, only on its levels.
const char* kFallbackRules =
    "rules:\n"
    "  - id: SPECIFIC\n"
    "    title: t\n"
    "    category: ib\n"
    "    family: nccl\n"
    "    pattern: 'port (?P<p>down)'\n"
    "    finding: {severity: error, explanation: x, remediation: y}\n"
    "    examples:\n"
    "      match: [\"n1:1:2 [0] a.cc:1 NCCL WARN port down\"]\n"
    "      no_match: [\"n1:1:2 [0] a.cc:1 NCCL WARN port up\", \"[E1122 10:15:32.1 x.cpp:1] port down\"]\n"
    "  - id: CATCH-ALL\n"
    "    title: t\n"
    "    category: init\n"
    "    family: nccl\n"
    "    level: [WARN]\n"
    "    fallback: true\n"
    "    pattern: '(?P<msg>.+)'\n"
    "    finding: {severity: error, explanation: x, remediation: y}\n"
    "    examples:\n"
    "      match: [\"n1:1:2 [0] a.cc:1 NCCL WARN port up\"]\n"
    "      no_match: [\"n1:1:2 [0] a.cc:1 NCCL WARN port down\", \"n1:1:2 [0] NCCL INFO port up\"]\n";

std::vector<std::string> MatchedIds(const RuleSet& set, const std::string& line) {
  LineParser parser;
  Arena arena;
  MatchScratch ms;
  std::vector<std::string> ids;
  parser.ParseEach(line, &arena, [&](ParsedLine& pl, int) {
    set.Match(pl, &ms, [&](int ri, const re2::StringPiece*, int) { ids.push_back(set.rules()[ri].spec.id.value); });
  });
  return ids;
}

TEST(RuleLoader, FallbackRuleSpeaksOnlyWhereNoFindingMatched) {
  std::unique_ptr<RuleSet> set;
  ASSERT_EQ(Load(kFallbackRules, &set), "");
  EXPECT_EQ(MatchedIds(*set, "n1:1:2 [0] x.cc:9 NCCL WARN port down"), std::vector<std::string>{"SPECIFIC"});
  EXPECT_EQ(MatchedIds(*set, "n1:1:2 [0] x.cc:9 NCCL WARN something else"), std::vector<std::string>{"CATCH-ALL"});
  // Not its level: an INFO line, a c10 error line.
  EXPECT_TRUE(MatchedIds(*set, "n1:1:2 [0] NCCL INFO something else").empty());
  EXPECT_TRUE(MatchedIds(*set, "[E1122 10:15:32.1 x.cpp:1] something else").empty());
  // Pre-2.3 WARN header without the NCCL keyword.
  EXPECT_EQ(MatchedIds(*set, "n1:1:2 [0] x.cc:9 WARN something else"), std::vector<std::string>{"CATCH-ALL"});
}

// One rule with a finding, as YAML; `extra` holds its level: / fallback: lines.
std::string FindingRule(const std::string& id, const std::string& category, const std::string& family,
                        const std::string& extra, const std::string& pattern, const std::string& match,
                        const std::string& no_match) {
  return "  - id: " + id + "\n    title: t\n    category: " + category + "\n    family: " + family + "\n" + extra +
         "    pattern: '" + pattern +
         "'\n"
         "    finding: {severity: error, explanation: x, remediation: y}\n"
         "    examples:\n"
         "      match: [\"" +
         match + "\"]\n      no_match: [\"" + no_match + "\"]\n";
}

// A catch-all with a literal is prefiltered on it (it is not tried on the
// lines that cannot hold it); one of any family whose literal sits in an NCCL
// line's header, which the prefilter skips, is still tried there.
TEST(RuleLoader, AFallbackRuleIsGatedByItsLiteralWhereThePrefilterSawItsText) {
  std::unique_ptr<RuleSet> set;
  ASSERT_EQ(
      Load(
          "rules:\n" +
              FindingRule("XID-ANY", "cuda", "any", "    level: [non-nccl]\n    fallback: true\n",
                          R"(NVRM: Xid \((?P<n>\d+)\))", "kernel: NVRM: Xid (79) fell off", "kernel: NVRM: something") +
              FindingRule("WARN-ANY", "init", "any", "    level: [WARN]\n    fallback: true\n", "WARN (?P<msg>.+)",
                          "n1:1:2 [0] a.cc:1 NCCL WARN port up", "n1:1:2 [0] NCCL INFO port up"),
          &set),
      "");
  const CompiledRule* xid = set->FindRule("XID-ANY");
  ASSERT_NE(xid, nullptr);
  EXPECT_EQ(xid->key_atoms, std::vector<std::string>{"nvrm: xid ("});
  EXPECT_EQ(MatchedIds(*set, "[ 12.5] NVRM: Xid (79) GPU has fallen off the bus"), std::vector<std::string>{"XID-ANY"});
  EXPECT_TRUE(MatchedIds(*set, "[ 12.5] NVRM: GPU at PCI:0000:1b:00 has fallen off the bus").empty());
  // 'warn ' is in the header of an NCCL line, outside the prefilter's text.
  EXPECT_EQ(MatchedIds(*set, "n1:1:2 [0] x.cc:9 NCCL WARN something else"), std::vector<std::string>{"WARN-ANY"});
}

// Atoms a match needs beside its key atoms gate the regex: a rule keyed on a
// word every bootstrap line has is not run where its interface is absent.
TEST(RuleLoader, RequiredAtomsBesideTheKeyGateTheRegex) {
  std::unique_ptr<RuleSet> set;
  ASSERT_EQ(Load("rules:\n" +
                     FindingRule("VIRBR", "transport", "nccl", "",
                                 R"(^(?:NET/Socket ?: Using (?:\S+ )*?\[0\]|Bootstrap ?: Using )(?P<iface>virbr\d*):)",
                                 "n1:1:2 [0] NCCL INFO Bootstrap : Using virbr0:192.168.122.1<0>",
                                 "n1:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>"),
                 &set),
            "");
  const CompiledRule* r = set->FindRule("VIRBR");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->key_atoms, (std::vector<std::string>{"bootstrap", "net/socket"}));
  EXPECT_EQ(r->gate_atoms, (std::vector<std::vector<std::string>>{{": using "}, {"virbr"}}));
  EXPECT_EQ(MatchedIds(*set, "n1:1:2 [0] NCCL INFO NET/Socket : Using [0]virbr1:192.168.122.1<0>"),
            std::vector<std::string>{"VIRBR"});
  EXPECT_TRUE(MatchedIds(*set, "n1:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>").empty());
}

TEST(RuleLoader, FallbackRuleNeedsLevelAndFinding) {
  std::string text =
      std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))", "    fallback: true\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:15: error: fallback rule NET-A needs a 'level' [E-MISSING-KEY]\n"
            "        fallback: true\n"
            "                  ^\n"
            "help: a catch-all runs its regex on every line it admits: name the levels (e.g. level: [WARN])\n"
            "t.yaml:12:15: error: fallback rule NET-A needs a 'finding' [E-MISSING-KEY]\n"
            "        fallback: true\n"
            "                  ^\n");
}

TEST(RuleLoader, RejectsUnknownLevel) {
  std::string text =
      std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))", "    level: [WARNING]\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:13: error: unknown level 'WARNING' [E-BAD-VALUE]\n"
            "        level: [WARNING]\n"
            "                ^\n"
            "help: NCCL levels INFO WARN TRACE CALL ABORT VERSION, c10 severities E F W I V, headerless or non-nccl\n");
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
  std::string text =
      std::string(kFacts) + "rules:\n" +
      Rule("NET-A", R"((?P<network>\w+) \d+)", "", "n1:1:1 [0] NCCL INFO abc 12", "n1:1:1 [0] NCCL INFO -");
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
                                               "n1:1:1 [0] NCCL INFO Not using network IB"));
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  ASSERT_TRUE(set) << (diags.empty() ? "" : diags[0].message);
  ASSERT_EQ(set->rules().size(), 1u);
  EXPECT_EQ(set->rules()[0].spec.source_file, "b.yaml");
}

// A condition correlation over `network` (unkeyed, last) and `env` (keyed).
std::string Condition(const std::string& where, const std::string& extra = "") {
  return std::string(kFacts) +
         "  - name: env\n"
         "    merge: last\n"
         "    keyed: true\n"
         "  - name: peers\n"
         "    merge: set\n"
         "correlations:\n"
         "  - id: COND\n"
         "    title: t\n"
         "    category: env\n"
         "    kind: condition\n"
         "    where:\n" +
         where + extra + "    finding: {severity: warning, explanation: x}\n";
}

TEST(RuleLoader, AcceptsNumericAndKeyedConditions) {
  std::unique_ptr<RuleSet> set;
  EXPECT_EQ(Load(Condition("      - {fact: 'env[NCCL_IB_TIMEOUT]', lt: 18}\n"
                           "      - {fact: 'env[NCCL_IB_RETRY_CNT]', ge: '0x7'}\n"
                           "      - {fact: network, le: -1}\n"
                           "      - {fact: network, gt: '+3'}\n"
                           "      - {fact: peers, matches: '^10[.]'}\n",
                           "    job: {hosts_gt: 0}\n"),
                 &set),
            "");
  ASSERT_TRUE(set);
  const auto& where = set->correlations()[0].spec.where;
  ASSERT_EQ(where.size(), 5u);
  EXPECT_EQ(where[0].fact.value, "env");
  EXPECT_EQ(where[0].key.value, "NCCL_IB_TIMEOUT");
  EXPECT_EQ(std::string(OpName(where[0].op)), "lt");
  EXPECT_EQ(std::string(OpName(where[1].op)), "ge");
  EXPECT_EQ(where[2].key.value, "");
}

// A correlation of one kind with keys another kind reads (rules/vocabulary.cc):
// refused where the key is written, not ignored.
std::string Correlation(const std::string& kind_and_keys, const std::string& category = "env",
                        const std::string& finding = "{severity: warning, explanation: x}") {
  return std::string(kFacts) +
         "correlations:\n"
         "  - id: C\n"
         "    title: t\n"
         "    category: " +
         category + "\n" + kind_and_keys + "    finding: " + finding + "\n";
}

TEST(RuleLoader, RefusesAKeyItsKindDoesNotRead) {
  EXPECT_EQ(Load(Correlation("    kind: consensus\n    fact: network\n    check: behind\n")),
            "t.yaml:11:5: error: 'check' means nothing to a consensus correlation [E-UNKNOWN-KEY]\n"
            "        check: behind\n"
            "        ^\n"
            "help: a consensus correlation reads: fact, over, min_subjects, ignore_unset, normal, tie, population\n");
  EXPECT_NE(Load(Correlation("    kind: collective\n    check: behind\n    over: host\n"))
                .find("t.yaml:11:5: error: 'over' means nothing to a collective correlation"),
            std::string::npos);
  EXPECT_NE(Load(Correlation("    kind: missing_ranks\n    fact: network\n"))
                .find("help: a missing_ranks correlation takes only the common keys"),
            std::string::npos);
  EXPECT_EQ(Load(Correlation("    kind: consensus\n    fact: network\n    over: host\n")), "");
}

TEST(RuleLoader, ATieRuleIsOneItKnows) {
  EXPECT_EQ(Load(Correlation("    kind: consensus\n    fact: network\n    over: host\n    tie: newest\n")), "");
  EXPECT_NE(Load(Correlation("    kind: consensus\n    fact: network\n    over: host\n    tie: oldest\n"))
                .find("error: unknown tie rule 'oldest' [E-BAD-VALUE]"),
            std::string::npos);
}

TEST(RuleLoader, NamesTheKeyAKindCannotDoWithout) {
  EXPECT_NE(Load(Correlation("    kind: extreme\n    select: max\n"))
                .find("error: correlation C (extreme) needs 'fact' [E-MISSING-KEY]"),
            std::string::npos);
  EXPECT_NE(Load(Correlation("    kind: collective\n")).find("correlation C (collective) needs 'check'"),
            std::string::npos);
}

TEST(RuleLoader, UnknownWordsOfTheVocabularyAreErrorsWithTheirPlace) {
  EXPECT_EQ(Load(Correlation("    kind: guess\n")),
            "t.yaml:9:11: error: unknown correlation kind 'guess' [E-BAD-VALUE]\n"
            "        kind: guess\n"
            "              ^\n"
            "help: use one of: consensus, condition, absence, missing_ranks, extreme, first_in_time, peer_map, "
            "collective\n");
  const std::string category = Load(Correlation("    kind: missing_ranks\n", "network"));
  EXPECT_NE(category.find("t.yaml:8:15: error: unknown category 'network' [E-BAD-VALUE]"), std::string::npos)
      << category;
  EXPECT_EQ(category.find("needs a 'category'"), std::string::npos) << category;  // one error, not two
  const std::string owner =
      Load(Correlation("    kind: missing_ranks\n", "env", "{owner: network, severity: warning, explanation: x}"));
  EXPECT_NE(owner.find("unknown owner 'network'"), std::string::npos) << owner;
  EXPECT_NE(owner.find("help: use one of: fabric, gpu-hardware, node-config, application, launcher, library"),
            std::string::npos);
}

// Regression: values were read with atoi, so `lt: many` compared with 0 and
// `hosts_gt: many` loaded as 0.
TEST(RuleLoader, RejectsComparisonWithANonNumber) {
  EXPECT_EQ(Load(Condition("      - {fact: network, gt: many}\n")),
            "t.yaml:16:29: error: 'gt' compares numbers; 'many' is not a number [E-BAD-VALUE]\n"
            "          - {fact: network, gt: many}\n"
            "                                ^\n"
            "help: write an integer (decimal, or hex with 0x); use equals / matches for text\n");
  EXPECT_NE(Load(Condition("      - {fact: network, le: '1.5'}\n")).find("'le' compares numbers; '1.5' is not"),
            std::string::npos);
}

TEST(RuleLoader, RejectsIntegersThatAreNotWholeNumbers) {
  EXPECT_EQ(Load(Condition("      - {fact: network, exists: true}\n", "    job: {hosts_gt: many}\n")),
            "t.yaml:17:21: error: hosts_gt must be an integer of 0 or more, not 'many' [E-BAD-VALUE]\n"
            "        job: {hosts_gt: many}\n"
            "                        ^\n");
  EXPECT_NE(Load(Condition("      - {fact: network, exists: true}\n", "    min_subjects: 3x\n"))
                .find("min_subjects must be a positive integer, not '3x' [E-BAD-VALUE]"),
            std::string::npos);
}

TEST(RuleLoader, RejectsKeyedFactWithoutKeyAndKeyOnUnkeyedFact) {
  EXPECT_EQ(Load(Condition("      - {fact: env, exists: true}\n")),
            "t.yaml:16:16: error: fact 'env' is keyed: name the key [E-BAD-VALUE]\n"
            "          - {fact: env, exists: true}\n"
            "                   ^\n"
            "help: write fact: env[KEY], e.g. env[NCCL_IB_TIMEOUT]\n");
  EXPECT_EQ(Load(Condition("      - {fact: 'network[IB]', exists: true}\n")),
            "t.yaml:16:16: error: fact 'network' is not keyed: write fact: network [E-BAD-VALUE]\n"
            "          - {fact: 'network[IB]', exists: true}\n"
            "                   ^\n");
}

TEST(RuleLoader, RejectsNumericComparisonOnASet) {
  EXPECT_EQ(Load(Condition("      - {fact: peers, gt: 2}\n")),
            "t.yaml:16:27: error: 'gt' compares numbers, but fact 'peers' (merge: set) holds a set of values "
            "[E-BAD-VALUE]\n"
            "          - {fact: peers, gt: 2}\n"
            "                              ^\n"
            "help: use matches, equals or exists on a set\n");
}

TEST(RuleLoader, RejectsConditionWithTwoOperators) {
  EXPECT_EQ(Load(Condition("      - {fact: network, gt: 1, lt: 5}\n")),
            "t.yaml:16:32: error: condition has two operators ('gt' and 'lt'); write one condition per operator "
            "[E-BAD-VALUE]\n"
            "          - {fact: network, gt: 1, lt: 5}\n"
            "                                   ^\n");
}

TEST(RuleLoader, EnabledFalseKeepsTheRuleOutOfTheSetButChecksIt) {
  std::unique_ptr<RuleSet> set;
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))") +
                     Rule("NET-B", R"(Using network (?P<network>IB))", "    enabled: false\n");
  ASSERT_EQ(Load(text, &set), "");
  ASSERT_EQ(set->rules().size(), 1u);
  EXPECT_EQ(set->rules()[0].spec.id.value, "NET-A");
  ASSERT_EQ(set->disabled_rules().size(), 1u);
  EXPECT_EQ(set->disabled_rules()[0].spec.id.value, "NET-B");
  EXPECT_EQ(MatchedIds(*set, "n1:1:1 [0] NCCL INFO Using network IB"), std::vector<std::string>{"NET-A"});
  // Its examples are still its regression test.
  std::string bad = std::string(kFacts) + "rules:\n" +
                    Rule("NET-B", R"(Using network (?P<network>IB))", "    enabled: false\n",
                         "n1:1:1 [0] NCCL INFO Using network Socket");
  EXPECT_NE(Load(bad).find("rule NET-B does not match its example [E-SAMPLE-NO-MATCH]"), std::string::npos);
  EXPECT_EQ(
      Load(std::string(kFacts) + "rules:\n" + Rule("NET-B", R"(Using network (?P<network>IB))", "    enabled: no\n")),
      "t.yaml:12:14: error: enabled must be true or false [E-BAD-VALUE]\n"
      "        enabled: no\n"
      "                 ^\n");
}

TEST(RuleLoader, DisableListTurnsOffRulesOfEarlierLayers) {
  RuleLoader loader;
  loader.AddSource("a.yaml", Condition("      - {fact: network, exists: true}\n") + "rules:\n" +
                                 Rule("NET-A", R"(Using network (?P<network>\S+))") +
                                 Rule("NET-B", R"(Using network (?P<network>IB))"));
  loader.BeginLayer();
  loader.AddSource("site.yaml", "disable: [NET-A, COND]\n");
  std::vector<Diagnostic> diags;
  auto set = loader.Build(&diags);
  ASSERT_TRUE(set) << (diags.empty() ? "" : diags[0].message);
  ASSERT_EQ(set->rules().size(), 1u);
  EXPECT_EQ(set->rules()[0].spec.id.value, "NET-B");
  EXPECT_TRUE(set->correlations().empty());
  ASSERT_EQ(set->disabled_correlations().size(), 1u);
  EXPECT_EQ(MatchedIds(*set, "n1:1:1 [0] NCCL INFO Using network Socket"), std::vector<std::string>{});
}

TEST(RuleLoader, RejectsDisableOfAnUnknownRule) {
  RuleLoader loader;
  loader.AddSource("a.yaml", std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))"));
  loader.BeginLayer();
  loader.AddSource("site.yaml", "disable:\n  - NET-A\n  - NET-Z\n");
  loader.Disable("NO-SUCH");
  std::vector<Diagnostic> diags;
  EXPECT_FALSE(loader.Build(&diags));
  std::string out;
  for (const auto& d : diags) out += RenderDiagnostic(d, loader.sources());
  EXPECT_EQ(out,
            "site.yaml:3:5: error: disable names unknown rule 'NET-Z' [E-UNKNOWN-RULE]\n"
            "      - NET-Z\n"
            "        ^\n"
            "help: no rule or correlation has this id; see 'ncclscan rules --list'\n"
            "ncclscan: error: --disable names unknown rule 'NO-SUCH' [E-UNKNOWN-RULE]\n"
            "help: no rule or correlation has this id; see 'ncclscan rules --list'\n");
}

// One test per loader code whose message no other test shows whole.

TEST(RuleLoader, RejectsRuleWithoutPattern) {
  std::string text = std::string(kFacts) +
                     "rules:\n"
                     "  - id: NET-A\n"
                     "    title: t\n"
                     "    category: transport\n"
                     "    family: nccl\n"
                     "    facts: {network: x}\n";
  EXPECT_EQ(Load(text),
            "t.yaml:6:5: error: rule NET-A needs a 'pattern' (or 'fields') [E-MISSING-KEY]\n"
            "      - id: NET-A\n"
            "        ^\n"
            "t.yaml:6:9: error: rule NET-A needs examples with at least one 'match' and one 'no_match' line "
            "[E-MISSING-KEY]\n"
            "      - id: NET-A\n"
            "            ^\n"
            "help: sample lines are checked at every load; they are the rule's regression test\n");
}

TEST(RuleLoader, RejectsUnknownFamily) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))");
  text.replace(text.find("family: nccl"), 12, "family: ncc1");
  EXPECT_EQ(Load(text),
            "t.yaml:9:13: error: unknown family 'ncc1' [E-BAD-VALUE]\n"
            "        family: ncc1\n"
            "                ^\n"
            "help: use one of: nccl, torch, elastic, any\n");
}

TEST(RuleLoader, RejectsExampleWithAnotherCapture) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))");
  text.replace(text.find("      match: ["), std::string::npos,
               "      match:\n"
               "        - line: \"n1:1:1 [0] NCCL INFO Using network IB\"\n"
               "          captures: {network: Socket}\n"
               "      no_match: [\"n1:1:1 [0] NCCL INFO Not using network IB\"]\n");
  EXPECT_EQ(Load(text),
            "t.yaml:14:17: error: rule NET-A: capture 'network' is 'IB', example expects 'Socket' [E-SAMPLE-MISMATCH]\n"
            "            - line: \"n1:1:1 [0] NCCL INFO Using network IB\"\n"
            "                    ^\n");
}

TEST(RuleLoader, RejectsExplainsOfAnUnknownRule) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))",
                          "    finding: {severity: error, explanation: x, explains: [NET-Z]}\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:59: error: explains unknown rule 'NET-Z' [E-UNKNOWN-RULE]\n"
            "        finding: {severity: error, explanation: x, explains: [NET-Z]}\n"
            "                                                              ^\n");
}

TEST(RuleLoader, RejectsUnknownFactWithHelp) {
  std::string text = std::string(kFacts) + "rules:\n" + Rule("NET-A", R"(Using network (?P<network>\S+))");
  text.replace(text.find("facts: {network:"), 16, "facts: {netwrk:");
  EXPECT_EQ(
      Load(text),
      "t.yaml:11:13: error: unknown fact 'netwrk' [E-UNKNOWN-FACT]\n"
      "        facts: {netwrk: \"{network}\"}\n"
      "                ^\n"
      "help: declare it under 'facts:' in a rule file (docs/rules.md §1)\n"
      "t.yaml:6:9: error: rule NET-A sets no facts, no identity, remembers nothing and has no finding [E-MISSING-KEY]\n"
      "      - id: NET-A\n"
      "            ^\n"
      "help: a rule must produce something\n");
}

TEST(RuleLoader, RejectsPatternWithoutLiteralWithHelp) {
  std::string text =
      std::string(kFacts) + "rules:\n" +
      Rule("NET-A", R"((?P<network>\w+) \d+)", "", "n1:1:1 [0] NCCL INFO abc 12", "n1:1:1 [0] NCCL INFO -");
  EXPECT_EQ(Load(text),
            "t.yaml:10:14: error: pattern of rule NET-A has no literal of 3 or more characters to prefilter on "
            "[E-RULE-NO-LITERAL]\n"
            "        pattern: '(?P<network>\\w+) \\d+'\n"
            "                 ^\n"
            "help: every line would run this regex; anchor it on a fixed word of the message\n");
}

TEST(RuleLoader, RejectsTemplateWithUnknownVariableWithHelp) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))",
                          "    finding: {severity: error, explanation: \"uses {netwrk}\"}\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:51: error: explanation: unknown variable '{netwrk}' [E-TEMPLATE]\n"
            "        finding: {severity: error, explanation: \"uses {netwrk}\"}\n"
            "                                                      ^\n"
            "help: known here: count, hosts, network, ranks\n");
}

// Every rule needs a no_match line that gets past the prefilter (holds a key
// atom) and is still rejected: one the prefilter drops tests nothing.
TEST(RuleLoader, RejectsRuleWithoutANearMiss) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "", "n1:1:1 [0] NCCL INFO Using network IB",
                          "n1:1:1 [0] NCCL INFO Using nothing");
  EXPECT_EQ(Load(text),
            "t.yaml:14:18: error: rule NET-A has no no_match example that reaches its regex [E-SAMPLE-NO-NEAR-MISS]\n"
            "          no_match: [\"n1:1:1 [0] NCCL INFO Using nothing\"]\n"
            "                     ^\n"
            "help: add a no_match line that contains 'using network ' but must not match\n");
  // The INFO twin of a WARN-only rule is a near miss: the level check rejects it.
  std::string warn_only = std::string(kFacts) + "rules:\n" +
                          Rule("NET-A", R"(Using network (?P<network>\S+))", "    level: [WARN]\n",
                               "n1:1:1 [0] a.cc:1 NCCL WARN Using network IB", "n1:1:1 [0] NCCL INFO Using network IB");
  EXPECT_EQ(Load(warn_only), "");
  // A pattern that is one fixed phrase cannot reject a line holding it: exempt.
  std::string phrase = std::string(kFacts) + "rules:\n" +
                       Rule("NET-A", R"(Using network (?P<network>IB))", "", "n1:1:1 [0] NCCL INFO Using network IB",
                            "n1:1:1 [0] NCCL INFO Using nothing");
  EXPECT_EQ(Load(phrase), "");
}

TEST(RuleLoader, ReportsUnreadableRuleDirectoriesAndFiles) {
  std::string dir = ::testing::TempDir() + "ncclscan_rules_io";
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "' && ln -s nowhere '" + dir + "/gone.yaml'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  RuleLoader loader;
  EXPECT_FALSE(loader.AddDirectory(dir + "/missing"));
  EXPECT_TRUE(loader.AddDirectory(dir));
  std::vector<Diagnostic> diags;
  EXPECT_FALSE(loader.Build(&diags));
  std::string out;
  for (const auto& d : diags) out += RenderDiagnostic(d, loader.sources());
  EXPECT_EQ(out, dir + "/missing: error: cannot read rule directory: No such file or directory [E-IO]\n" + dir +
                     "/gone.yaml: error: cannot read rule file: No such file or directory [E-IO]\n");
}

// Facts and events the engine depends on by name (rules/engine_contract.h).
TEST(RuleLoader, RejectsEngineFactOfAnotherShape) {
  EXPECT_EQ(Load("facts:\n"
                 "  - name: last_opcount\n"
                 "    merge: last\n"
                 "    keyed: true\n"
                 "    key: pg\n"),
            "t.yaml:2:11: error: the engine needs fact 'last_opcount' (merge max, keyed by comm, fields [op, count, "
            "datatype, root]) for the extreme correlation's cut-off-rank test, the consensus model's COLL trace and "
            "the run's story; this declaration differs: merge max, not last, key: comm, not key: pg, fields [op, "
            "count, datatype, root] first [E-ENGINE-FACT]\n"
            "      - name: last_opcount\n"
            "              ^\n"
            "help: declare it as rules/facts.yaml does, or name your fact differently\n");
}

// The engine reads a fact's fields by position: a declaration that lists them
// in another order fails the load (the consensus model would compare counts
// with datatypes).
TEST(RuleLoader, RejectsEngineFactWithItsFieldsReordered) {
  const std::string out = Load(
      "facts:\n"
      "  - name: last_opcount\n"
      "    merge: max\n"
      "    hex: true\n"
      "    keyed: true\n"
      "    key: comm\n"
      "    fields: [op, datatype, count, root]\n");
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "t.yaml:2:11: error: the engine needs fact 'last_opcount' (merge max, keyed by comm, fields [op, count, "
            "datatype, root]) for the extreme correlation's cut-off-rank test, the consensus model's COLL trace and "
            "the run's story; this declaration differs: fields [op, count, datatype, root] first [E-ENGINE-FACT]");
}

// A rule that sets a fact with fields must fill each from a capture or lookup
// of that name: the load fails at the fact, naming the field.
TEST(RuleLoader, RuleSettingAFactWithFieldsNeedsEachCapture) {
  const std::string out = Load(
      "facts:\n"
      "  - name: t_call\n"
      "    fields: [op, count]\n"
      "rules:\n"
      "  - id: T-COLL\n"
      "    title: t\n"
      "    category: desync\n"
      "    family: nccl\n"
      "    pattern: '(?P<op>\\w+): opCount (?P<opcount>[0-9a-f]+)'\n"
      "    facts:\n"
      "      t_call: \"{opcount}\"\n"
      "    examples:\n"
      "      match: ['AllReduce: opCount 2f']\n"
      "      no_match: ['x']\n");
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "t.yaml:11:7: error: fact 't_call' carries the field 'count', and this rule has no capture or lookup "
            "'count' [E-FACT-FIELD]");
}

// Renaming any fact the engine reads in the built-in rule files fails the
// load, at the facts' declarations, instead of silently turning a feature off
// (renaming world_size used to drop the culprit from CONSENSUS-NEVER-JOINED).
TEST(RuleLoader, RenamingAnEngineFactFailsTheLoad) {
  ASSERT_EQ(EngineFacts().size(), static_cast<size_t>(kNumEngineFacts));
  for (int i = 0; i < kNumEngineFacts; ++i) {
    const EngineFact& ef = EngineFacts()[i];
    ASSERT_EQ(static_cast<int>(ef.id), i) << ef.name;
    const std::string decl = std::string("- name: ") + ef.name + "\n";
    RuleLoader loader;
    loader.RequireEngineFacts();
    loader.set_check_examples(false);
    int renamed = 0;
    for (int k = 0; k < kNumEmbeddedRuleFiles; ++k) {
      std::string text = kEmbeddedRuleFiles[k].text;
      for (size_t at = text.find(decl); at != std::string::npos; at = text.find(decl, at + 1)) {
        text.insert(at + decl.size() - 1, "_renamed");
        ++renamed;
      }
      loader.AddSource(kEmbeddedRuleFiles[k].name, text);
    }
    ASSERT_EQ(renamed, 1) << ef.name << " is declared once in the rule files";
    std::vector<Diagnostic> diags;
    EXPECT_FALSE(loader.Build(&diags)) << ef.name;
    bool named = false;
    for (const auto& d : diags) {
      if (d.code != "E-ENGINE-FACT" || d.message.find(std::string("'") + ef.name + "'") == std::string::npos) continue;
      named = true;
      EXPECT_GT(d.pos.line, 0) << ef.name << ": at a file:line:col of the facts declared";
      EXPECT_NE(d.pos.file, "ncclscan") << ef.name;
    }
    EXPECT_TRUE(named) << ef.name;
  }
  // Unchanged, the same files load.
  RuleLoader loader;
  loader.RequireEngineFacts();
  loader.set_check_examples(false);
  for (int k = 0; k < kNumEmbeddedRuleFiles; ++k)
    loader.AddSource(kEmbeddedRuleFiles[k].name, kEmbeddedRuleFiles[k].text);
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(loader.Build(&diags)) << (diags.empty() ? "" : diags[0].message);
}

TEST(RuleLoader, RejectsIdentityEventTheEngineDoesNotKnow) {
  std::string text = std::string(kFacts) + "rules:\n" +
                     Rule("NET-A", R"(Using network (?P<network>\S+))", "    identity: {event: Started}\n");
  EXPECT_EQ(Load(text),
            "t.yaml:12:23: error: identity event 'Started' is not one the engine knows [E-ENGINE-EVENT]\n"
            "        identity: {event: Started}\n"
            "                          ^\n"
            "help: use one of: Init START, Init COMPLETE, Abort START, Abort COMPLETE, Abort, Destroy COMPLETE\n");
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

// A scan loads the built-in files without their comments and examples
// (LeanRuleText): the rules it compiles are the same, field for field.
TEST(RuleLoader, LeanBuiltInRulesAreTheWholeOnesWithoutExamples) {
  std::string e1, e2;
  auto whole = LoadRules({}, &e1, nullptr, {}, /*examples=*/true);
  auto lean = LoadRules({}, &e2, nullptr, {}, /*examples=*/false);
  ASSERT_TRUE(whole) << e1;
  ASSERT_TRUE(lean) << e2;
  EXPECT_EQ(lean->content_hash(), whole->content_hash());  // of the files as shipped
  ASSERT_EQ(lean->rules().size(), whole->rules().size());
  for (size_t i = 0; i < whole->rules().size(); ++i) {
    const LineRule& a = whole->rules()[i].spec;
    const LineRule& b = lean->rules()[i].spec;
    EXPECT_EQ(b.id.value, a.id.value);
    EXPECT_EQ(b.pattern.value, a.pattern.value) << a.id.value;
    EXPECT_EQ(b.pattern.pos.line, a.pattern.pos.line) << a.id.value;  // blanked line for line
    EXPECT_EQ(b.finding.explanation.value, a.finding.explanation.value) << a.id.value;
    EXPECT_EQ(b.finding.remediation.value, a.finding.remediation.value) << a.id.value;
    EXPECT_EQ(b.references, a.references) << a.id.value;
    ASSERT_EQ(b.facts.size(), a.facts.size()) << a.id.value;
    for (size_t k = 0; k < a.facts.size(); ++k) EXPECT_EQ(b.facts[k].value.value, a.facts[k].value.value);
    ASSERT_EQ(b.lookups.size(), a.lookups.size()) << a.id.value;
    for (size_t k = 0; k < a.lookups.size(); ++k) {
      EXPECT_EQ(b.lookups[k].map, a.lookups[k].map) << a.id.value;
      EXPECT_EQ(b.lookups[k].default_value, a.lookups[k].default_value) << a.id.value;
    }
    EXPECT_TRUE(b.match.empty() && b.no_match.empty()) << a.id.value;
  }
  ASSERT_EQ(lean->correlations().size(), whole->correlations().size());
  for (size_t i = 0; i < whole->correlations().size(); ++i) {
    EXPECT_EQ(lean->correlations()[i].spec.id.value, whole->correlations()[i].spec.id.value);
    EXPECT_EQ(lean->correlations()[i].spec.finding.explanation.value,
              whole->correlations()[i].spec.finding.explanation.value);
  }
}

TEST(RuleLoader, LeanTextBlanksCommentsAndExamplesButNotABlockScalarsText) {
  const std::string text =
      "# a comment\n"
      "rules:\n"
      "  - id: X\n"
      "    explanation: >-\n"
      "      # not a comment: the text\n"
      "      more\n"
      "    examples:\n"
      "      match:\n"
      "        - \"a\"\n"
      "\n"
      "      no_match: [b]\n"
      "    # comment\n"
      "    title: t\n";
  EXPECT_EQ(LeanRuleText(text),
            "\n"
            "rules:\n"
            "  - id: X\n"
            "    explanation: >-\n"
            "      # not a comment: the text\n"
            "      more\n"
            "\n\n\n\n\n\n"
            "    title: t\n");
}

}  // namespace
}  // namespace ncclscan
