// The rule tree (rules/rule_node.h) and the prefilter atoms (rules/pattern_atoms.h)
// that the build parses and analyses once and a scan decodes: what is embedded
// must be what the files and RE2 say now, and bad bytes must never be trusted.
#include "rules/rule_node.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <vector>

#include "rules/pattern_atoms.h"
#include "rules/rule_loader.h"

namespace ncclscan {
namespace {

std::vector<RuleNode> Parse(const std::string& text) {
  std::vector<RuleNode> docs;
  for (const YAML::Node& d : YAML::LoadAll(text)) docs.push_back(RuleNode::FromYaml(d));
  return docs;
}

// The trees the build embedded are the lean text of the files as shipped:
// a rule file edited without a rebuild of the trees would fail here.
TEST(RuleNode, TheBuildsTreesAreTheFilesAsShipped) {
  ASSERT_GT(kNumEmbeddedRuleFiles, 10);
  for (int i = 0; i < kNumEmbeddedRuleFiles; ++i) {
    std::vector<RuleNode> built;
    const EmbeddedRuleTrees& t = kEmbeddedRuleTrees[i];
    ASSERT_TRUE(DecodeRuleDocuments(std::string_view(t.bytes, t.size), &built)) << kEmbeddedRuleFiles[i].name;
    EXPECT_TRUE(built == Parse(LeanRuleText(kEmbeddedRuleFiles[i].text))) << kEmbeddedRuleFiles[i].name;
  }
}

// The build's prefilter atoms are RE2's analysis of every built-in pattern, now.
TEST(PatternAtoms, TheBuildsAnalysisIsRE2sForEveryBuiltInPattern) {
  std::map<std::string, PatternAtoms, std::less<>> known;
  ASSERT_TRUE(DecodePatternAtoms(std::string_view(kEmbeddedPatternAtoms.bytes, kEmbeddedPatternAtoms.size), &known));
  std::set<std::string> patterns;
  for (int i = 0; i < kNumEmbeddedRuleFiles; ++i) {
    for (const RuleNode& d : Parse(LeanRuleText(kEmbeddedRuleFiles[i].text))) {
      for (const RuleNode& r : d["rules"]) {
        if (r["pattern"].IsScalar()) patterns.insert(r["pattern"].Scalar());
      }
    }
  }
  EXPECT_GT(patterns.size(), 250u);
  EXPECT_EQ(known.size(), patterns.size());
  for (const std::string& p : patterns) {
    auto it = known.find(p);
    ASSERT_NE(it, known.end()) << p;
    EXPECT_TRUE(it->second == AnalyzePattern(p)) << p;
  }
}

TEST(PatternAtoms, KeyAtomsAndGatesOfAPattern) {
  const PatternAtoms a = AnalyzePattern(R"(NET/IB : No device found|Using network Socket)");
  EXPECT_FALSE(a.no_literal);
  EXPECT_EQ(a.key_atoms.size(), 2u);
  EXPECT_TRUE(AnalyzePattern(R"(\d+ \w+)").no_literal);
  std::map<std::string, PatternAtoms> table{{"x(y+)z", AnalyzePattern("x(y+)z")}, {"abc|def", a}};
  std::string bytes;
  EncodePatternAtoms(table, &bytes);
  std::map<std::string, PatternAtoms, std::less<>> back;
  ASSERT_TRUE(DecodePatternAtoms(bytes, &back));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back["abc|def"] == a);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::map<std::string, PatternAtoms, std::less<>> partial;
    EXPECT_FALSE(DecodePatternAtoms(std::string_view(bytes).substr(0, cut), &partial)) << cut;
  }
}

// The literal a pattern's every match starts with: the regex then runs
// anchored where it occurs (RuleSet::MatchRegex), and must find what the
// unanchored search finds.
TEST(PatternAtoms, MatchPrefixIsWhatEveryMatchStartsWith) {
  EXPECT_EQ(AnalyzePattern(R"(comm (?P<comm>0x[0-9a-f]+) rank (\d+))").match_prefix, "comm ");
  EXPECT_EQ(AnalyzePattern(R"(NET/IB\(x\) : (\w+))").match_prefix, "NET/IB(x) : ");
  EXPECT_EQ(AnalyzePattern(R"(Got completions? from (\S+))").match_prefix, "Got completion");
  EXPECT_EQ(AnalyzePattern(R"(comm 0x\w+ rank)").match_prefix, "");  // no capture: nothing to gain
  EXPECT_EQ(AnalyzePattern(R"((ab)+cd)").match_prefix, "");          // a repetition first
  EXPECT_EQ(AnalyzePattern(R"(abcd(x)|efgh(y))").match_prefix, "");  // top-level alternation
  EXPECT_EQ(AnalyzePattern(R"((?i)abcd (x))").match_prefix, "");     // case folded
  EXPECT_EQ(AnalyzePattern(R"(ab?cd (x))").match_prefix, "");        // "a" alone is too short
  EXPECT_EQ(AnalyzePattern(R"(\bWARN (x))").match_prefix, "");       // an assertion first
  // Anchored at each occurrence, the leftmost match and its groups are the
  // unanchored search's, on every built-in pattern that has a prefix.
  std::map<std::string, PatternAtoms, std::less<>> known;
  ASSERT_TRUE(DecodePatternAtoms(std::string_view(kEmbeddedPatternAtoms.bytes, kEmbeddedPatternAtoms.size), &known));
  const std::vector<std::string> lines = {
      "x comm 0x1 comm 0x55d0 rank 3 nranks 8 cudaDev 0 busId 1b000 commId 0xab - Init COMPLETE",
      "NET/IB : Got completion from peer 10.0.0.2<33445> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
      "Bootstrap : Using eth0:10.0.0.1<0> Bootstrap : Using ib0:10.1.0.1<0>",
  };
  int prefixed = 0;
  for (const auto& [pattern, atoms] : known) {
    if (atoms.match_prefix.empty()) continue;
    ++prefixed;
    RE2 re(pattern, RegexOptions());
    const int n = re.NumberOfCapturingGroups() + 1;
    for (const std::string& line : lines) {
      std::vector<re2::StringPiece> a(n), b(n);
      const bool want = re.Match(line, 0, line.size(), RE2::UNANCHORED, a.data(), n);
      bool got = false;
      for (size_t at = line.find(atoms.match_prefix); at != std::string::npos && !got;
           at = line.find(atoms.match_prefix, at + 1)) {
        got = re.Match(line, at, line.size(), RE2::ANCHOR_START, b.data(), n);
      }
      ASSERT_EQ(got, want) << pattern << " on " << line;
      for (int g = 0; want && g < n; ++g) EXPECT_EQ(a[g].data(), b[g].data()) << pattern << " group " << g;
    }
  }
  EXPECT_GT(prefixed, 80);
}

// Every kind of node, quoted and plain scalars, a duplicate key and two
// documents survive the encoding with their positions; a cut encoding, or one
// with a byte changed, is refused or decoded into some tree, never read past.
TEST(RuleNode, EncodingKeepsEveryNodeAndRefusesACutOne) {
  const std::string text =
      "rules:\n"
      "  - id: A\n"
      "    pattern: 'quoted (x)'\n"
      "    level: [info, warn]\n"
      "    empty:\n"
      "    n: ~\n"
      "    id: B\n"
      "---\n"
      "facts: {a: 1, b: \"two\"}\n";
  const std::string bytes = EncodeRuleDocuments(text);
  std::vector<RuleNode> docs;
  ASSERT_TRUE(DecodeRuleDocuments(bytes, &docs));
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_TRUE(docs == Parse(text));
  const RuleNode& rule = *docs[0]["rules"].begin();
  EXPECT_EQ(rule["pattern"].Scalar(), "quoted (x)");
  EXPECT_TRUE(rule["pattern"].Quoted());
  EXPECT_FALSE(rule["id"].Quoted());
  EXPECT_EQ(rule["pattern"].line(), 2);
  EXPECT_EQ(rule["pattern"].column(), 13);
  EXPECT_EQ(rule["id"].Scalar(), "A");  // the first of a duplicate key
  EXPECT_EQ(rule.entries().size(), 6u);
  EXPECT_TRUE(rule["empty"].IsNull());
  EXPECT_TRUE(rule["n"].IsNull());
  EXPECT_FALSE(rule["missing"].IsDefined());
  EXPECT_TRUE(!rule["missing"]);
  EXPECT_EQ(rule["level"].items().size(), 2u);
  EXPECT_EQ(docs[1]["facts"]["b"].Scalar(), "two");
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    std::vector<RuleNode> partial;
    EXPECT_FALSE(DecodeRuleDocuments(std::string_view(bytes).substr(0, cut), &partial)) << cut;
  }
  for (size_t at = 0; at < bytes.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string changed = bytes;
      changed[at] = static_cast<char>(changed[at] ^ (1 << bit));
      std::vector<RuleNode> any;
      DecodeRuleDocuments(changed, &any);  // must not crash or read past the end (ASan)
    }
  }
}

}  // namespace
}  // namespace ncclscan
