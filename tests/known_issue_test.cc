// Known issues (docs/rules.md §2): version ranges, the loader's checks of a
// structured reference, and what a finding says about the log's version —
// affected, should be fixed, unknown — including a version-bound rule that
// stays silent where the log's version is not affected.
#include <gtest/gtest.h>

#include <string>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "rules/rule_loader.h"
#include "rules/version_range.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

Version V(const char* s) {
  Version v;
  EXPECT_TRUE(ParseVersion(s, &v)) << s;
  return v;
}

TEST(Version, ReadsTheLeadingNumbersOfWhatLogsPrint) {
  EXPECT_EQ(V("2.21.5+cuda12.4").ToString(), "2.21.5");
  EXPECT_EQ(V("2.6.0a0+ecf3bae40a.nv25.01").ToString(), "2.6.0");
  EXPECT_EQ(V("2.19").ToString(), "2.19");
  Version v;
  EXPECT_FALSE(ParseVersion("v2.19.3", &v));
  EXPECT_FALSE(ParseExactVersion("2.19.3+cuda", &v));
  EXPECT_FALSE(ParseExactVersion("1.2.3.4.5", &v));
  EXPECT_EQ(CompareVersions(V("2.19"), V("2.19.0")), 0);
  EXPECT_LT(CompareVersions(V("2.9.9"), V("2.19.0")), 0);
}

struct RangeRow {
  const char* range;
  const char* version;
  bool in;
};

TEST(VersionRange, ContainsTable) {
  const RangeRow rows[] = {
      {">=2.19.1,<2.21.5", "2.19.3", true},
      {">=2.19.1,<2.21.5", "2.21.5", false},
      {">=2.19.1,<2.21.5", "2.18.6", false},
      {"<2.19", "2.18.6+cuda12.1", true},
      {"<2.19", "2.19.0", false},
      {"==2.19", "2.19.4", true},
      {"==2.19", "2.20.3", false},
      {"2.25.1", "2.25.1", true},
      {"> 2.26.2, <= 2.27.3", "2.27.3", true},
      {">2.26.2", "2.26.2", false},
      {"*", "2.4.8", true},
  };
  for (const RangeRow& r : rows) {
    VersionRange range;
    std::string err;
    size_t off = 0;
    ASSERT_TRUE(range.Parse(r.range, &err, &off)) << r.range << ": " << err;
    EXPECT_EQ(range.Contains(V(r.version)), r.in) << r.range << " vs " << r.version;
  }
}

TEST(VersionRange, SaysWhatIsWrongAndWhere) {
  const struct {
    const char* range;
    const char* error;
    size_t offset;
  } rows[] = {
      {">=2.19.1,<2.21.x", "'2.21.x' is not a version (N.N.N)", 10},
      {"~2.19", "unknown comparison '~'", 0},
      {">=2.19,", "empty comparison in version range", 7},
      {"", "empty version range", 0},
  };
  for (const auto& r : rows) {
    VersionRange range;
    std::string err;
    size_t off = 99;
    EXPECT_FALSE(range.Parse(r.range, &err, &off)) << r.range;
    EXPECT_EQ(err, r.error) << r.range;
    EXPECT_EQ(off, r.offset) << r.range;
    EXPECT_TRUE(range.empty()) << "a range that failed to parse holds no bound: " << r.range;
  }
}

std::string RuleWithReferences(const std::string& refs) {
  return "rules:\n"
         "  - id: SITE-TRUNC\n"
         "    title: t\n"
         "    category: bootstrap\n"
         "    family: nccl\n"
         "    pattern: 'Message truncated : received (?P<got>\\d+) bytes'\n"
         "    finding: {severity: error, explanation: x}\n"
         "    references:\n" +
         refs +
         "    examples:\n"
         "      match: [\"n1:1:2 [0] NCCL WARN Message truncated : received 256 bytes instead of 4\"]\n"
         "      no_match: [\"n1:1:2 [0] NCCL INFO Message truncated : received no bytes\"]\n";
}

std::string Load(const std::string& text) {
  RuleLoader loader;
  loader.AddSource("t.yaml", text);
  std::vector<Diagnostic> diags;
  loader.Build(&diags);
  std::string r;
  for (const auto& d : diags) r += RenderDiagnostic(d, loader.sources());
  return r;
}

TEST(KnownIssueLoader, AcceptsPlainAndStructuredReferences) {
  EXPECT_EQ(Load(RuleWithReferences("      - https://docs.example/a\n"
                                    "      - url: https://github.com/NVIDIA/nccl/issues/1176\n"
                                    "        title: bootstrap messages reordered\n"
                                    "        affected: \">=2.19.1,<2.21.5\"\n"
                                    "        fixed_in: \"2.21.5\"\n"
                                    "        affected_only: true\n"
                                    "      - url: https://github.com/pytorch/pytorch/pull/1\n"
                                    "        title: a torch fix\n"
                                    "        component: torch\n"
                                    "        fixed_in: \"2.4.0\"\n")),
            "");
}

TEST(KnownIssueLoader, RejectsBadRangeWithCaretUnderTheBadPart) {
  EXPECT_EQ(Load(RuleWithReferences("      - url: https://github.com/NVIDIA/nccl/issues/1176\n"
                                    "        title: t\n"
                                    "        affected: \">=2.19.1,<2.21.x\"\n"
                                    "        fixed_in: \"2.21.5\"\n")),
            "t.yaml:11:30: error: bad version range: '2.21.x' is not a version (N.N.N) [E-BAD-VALUE]\n"
            "            affected: \">=2.19.1,<2.21.x\"\n"
            "                                 ^\n"
            "help: write comparisons joined by ',', e.g. \">=2.19.1,<2.21.5\" (operators >= > <= < ==)\n");
}

TEST(KnownIssueLoader, RejectsUnknownKeyMissingPartsAndInconsistentVersions) {
  EXPECT_EQ(Load(RuleWithReferences("      - url: https://github.com/NVIDIA/nccl/issues/1\n"
                                    "        titel: t\n"
                                    "      - url: https://github.com/NVIDIA/nccl/issues/2\n"
                                    "        title: t\n"
                                    "        affected: \"<2.20\"\n"
                                    "        fixed_in: \"2.19.3\"\n"
                                    "        component: cuda\n")),
            "t.yaml:10:9: error: unknown key 'titel' in known issue [E-UNKNOWN-KEY]\n"
            "            titel: t\n"
            "            ^\n"
            "help: allowed keys: affected, affected_only, component, fixed_in, title, url, when\n"
            "t.yaml:9:9: error: known issue https://github.com/NVIDIA/nccl/issues/1 needs a 'title' [E-MISSING-KEY]\n"
            "          - url: https://github.com/NVIDIA/nccl/issues/1\n"
            "            ^\n"
            "t.yaml:9:9: error: known issue https://github.com/NVIDIA/nccl/issues/1 needs 'affected' or 'fixed_in' "
            "[E-MISSING-KEY]\n"
            "          - url: https://github.com/NVIDIA/nccl/issues/1\n"
            "            ^\n"
            "help: a plain URL is enough for a reference that names no versions\n"
            "t.yaml:15:20: error: component must be 'nccl' or 'torch' [E-BAD-VALUE]\n"
            "            component: cuda\n"
            "                       ^\n"
            "t.yaml:14:19: error: fixed_in 2.19.3 lies inside the affected range '<2.20' [E-BAD-VALUE]\n"
            "            fixed_in: \"2.19.3\"\n"
            "                      ^\n");
}

TEST(KnownIssueLoader, RejectsTwoVersionBoundReferences) {
  EXPECT_EQ(Load(RuleWithReferences(
                "      - {url: \"https://x.example/1\", title: a, fixed_in: \"2.20\", affected_only: true}\n"
                "      - {url: \"https://x.example/2\", title: b, fixed_in: \"2.21\", affected_only: true}\n")),
            "t.yaml:10:81: error: only one reference of a rule may say affected_only [E-BAD-VALUE]\n"
            "          - {url: \"https://x.example/2\", title: b, fixed_in: \"2.21\", affected_only: true}\n"
            "                                                                                    ^\n"
            "help: the rule's finding is one known issue; give it the affected range of that one\n");
}

// End to end: one site rule, bound to the versions #1176 affects, on logs of
// several NCCL versions.
class KnownIssueScan : public ::testing::Test {
 protected:
  void SetUp() override {
    rules_dir_.Write("site.yaml", RuleWithReferences("      - url: https://github.com/NVIDIA/nccl/issues/1176\n"
                                                     "        title: bootstrap messages reordered\n"
                                                     "        affected: \">=2.19.1,<2.21.5\"\n"
                                                     "        fixed_in: \"2.21.5\"\n"
                                                     "        affected_only: true\n"
                                                     "      - url: https://github.com/NVIDIA/nccl/issues/2\n"
                                                     "        title: another mechanism\n"
                                                     "        fixed_in: \"2.20.3\"\n"));
    std::string err;
    rules_ = LoadRules({rules_dir_.path()}, &err);
    ASSERT_TRUE(rules_) << err;
  }

  // The diagnosis of one log whose banner says `version` ("" = no banner).
  Analysis Scan(const std::string& version) {
    std::string log;
    if (!version.empty()) log += "n1:1:1 [0] NCCL INFO NCCL version " + version + "+cuda12.2\n";
    log += "n1:1:2 [0] bootstrap.cc:1 NCCL WARN Message truncated : received 256 bytes instead of 4\n";
    std::string path = logs_.Write("v" + version + ".log", log);
    return Analyze(*rules_, {path}, ScanOptions());
  }

  static const Finding* Find(const Analysis& a, const std::string& id) {
    for (const Finding& f : a.diagnosis.findings) {
      if (f.rule_id == id) return &f;
    }
    return nullptr;
  }

  TempDir rules_dir_, logs_;
  std::unique_ptr<RuleSet> rules_;
};

TEST_F(KnownIssueScan, AffectedVersionFiresAndSaysSo) {
  Analysis a = Scan("2.19.3");
  const Finding* f = Find(a, "SITE-TRUNC");
  ASSERT_TRUE(f);
  ASSERT_EQ(f->known_issues.size(), 2u);
  EXPECT_EQ(f->known_issues[0].status, "affected");
  EXPECT_EQ(KnownIssueLine(f->known_issues[0]),
            "known issue: bootstrap messages reordered (https://github.com/NVIDIA/nccl/issues/1176), fixed in NCCL "
            "2.21.5; this log's NCCL 2.19.3 is affected");
  EXPECT_EQ(f->known_issues[1].status, "affected");  // no range: every release before 2.20.3
  EXPECT_EQ(f->references, (std::vector<std::string>{"https://github.com/NVIDIA/nccl/issues/1176",
                                                     "https://github.com/NVIDIA/nccl/issues/2"}));
  std::string text = RenderText(*a.state, a.diagnosis, ReportOptions());
  EXPECT_NE(text.find("    known issue: bootstrap messages reordered (https://github.com/NVIDIA/nccl/issues/1176), "
                      "fixed in NCCL 2.21.5; this log's NCCL 2.19.3 is affected\n"),
            std::string::npos)
      << text;
  std::string md = RenderMarkdown(*a.state, a.diagnosis);
  EXPECT_NE(md.find("**Known issue:** bootstrap messages reordered"), std::string::npos) << md;
  std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("\"schema_version\":\"1.2\""), std::string::npos);
  EXPECT_NE(json.find("\"known_issues\":[{\"url\":\"https://github.com/NVIDIA/nccl/issues/1176\",\"title\":"
                      "\"bootstrap messages reordered\",\"component\":\"nccl\",\"affected\":\">=2.19.1,<2.21.5\","
                      "\"fixed_in\":\"2.21.5\",\"affected_only\":true,\"status\":\"affected\",\"versions\":"
                      "[\"2.19.3\"]}"),
            std::string::npos)
      << json;
}

TEST_F(KnownIssueScan, VersionBoundRuleIsSilentWhereTheLogIsNotAffected) {
  EXPECT_FALSE(Find(Scan("2.21.5"), "SITE-TRUNC"));
  EXPECT_FALSE(Find(Scan("2.18.6"), "SITE-TRUNC"));
  // The built-in rule for the same line is not version-bound: it still speaks.
  EXPECT_TRUE(Find(Scan("2.21.5"), "NCCL-BOOTSTRAP-TRUNCATED"));
}

TEST_F(KnownIssueScan, UnknownVersionStillFiresAndSaysTheVersionIsUnknown) {
  Analysis a = Scan("");
  const Finding* f = Find(a, "SITE-TRUNC");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->known_issues[0].status, "unknown");
  EXPECT_EQ(KnownIssueLine(f->known_issues[0]),
            "known issue: bootstrap messages reordered (https://github.com/NVIDIA/nccl/issues/1176), fixed in NCCL "
            "2.21.5; the log does not say its NCCL version, so the finding stands unconfirmed");
}

TEST_F(KnownIssueScan, ReferenceThatIsNotVersionBoundSaysShouldBeFixed) {
  // 2.20.3 is affected by #1176 (so the rule fires) and has the fix of the second issue.
  Analysis a = Scan("2.20.3");
  const Finding* f = Find(a, "SITE-TRUNC");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->known_issues[1].status, "fixed");
  EXPECT_EQ(KnownIssueLine(f->known_issues[1]),
            "known issue: another mechanism (https://github.com/NVIDIA/nccl/issues/2), fixed in NCCL 2.20.3; should "
            "be fixed in this version (NCCL 2.20.3): if it still happens, look further");
}

// `when:` ties an issue to some of a rule's findings: TORCH-CUDA-ERROR's NCCL
// 2.28.3 issues concern "no kernel image", not every CUDA error (corpus
// m4-logs-tr141-exp2 carried them under "unknown error").
TEST(KnownIssueWhen, OnlyTheFindingsWhoseGroupContainsIt) {
  TempDir logs;
  auto issues_of = [&](const std::string& err) {
    const std::string path = logs.Write("r.log", "[rank0]: RuntimeError: CUDA error: " + err + "\n");
    Analysis a = Analyze(BuiltInRules(), {path}, ScanOptions());
    for (const Finding& f : a.diagnosis.findings) {
      if (f.rule_id == "TORCH-CUDA-ERROR") return f.known_issues.size();
    }
    return size_t{99};
  };
  EXPECT_EQ(issues_of("no kernel image is available for execution on the device"), 2u);
  EXPECT_EQ(issues_of("unknown error"), 0u);
  // A number matches in full: status 4's issue is not status 14's.
  auto titles_of = [&](const std::string& status) {
    const std::string path = logs.Write("ib.log",
                                        "n1:7:9 [3] transport/net_ib.cc:1700 NCCL WARN NET/IB : Got "
                                        "completion from peer 10.1.0.9<40312> with status=" +
                                            status + " opcode=1 len=0 vendor err 129 (Send)\n");
    Analysis a = Analyze(BuiltInRules(), {path}, ScanOptions());
    std::string titles;
    for (const Finding& f : a.diagnosis.findings) {
      for (const auto& k : f.known_issues) titles += k.issue->title.substr(0, 9) + ";";
    }
    return titles;
  };
  EXPECT_EQ(titles_of("12"), "status 12;");
  EXPECT_EQ(titles_of("4"), "status 4 ;");
  EXPECT_EQ(titles_of("14"), "");
}

TEST(KnownIssueLoader, WhenNeedsGroupBy) {
  EXPECT_NE(Load(RuleWithReferences("      - url: https://github.com/NVIDIA/nccl/issues/1176\n"
                                    "        title: bootstrap messages reordered\n"
                                    "        fixed_in: \"2.21.5\"\n"
                                    "        when: \"256\"\n"))
                .find("has 'when' but the rule has no group_by"),
            std::string::npos);
}

// Every built-in known issue is well formed (the loader checked it) and names
// a fixing release or an affected range.
TEST(KnownIssueBuiltIn, EachHasATitleAndVersions) {
  const RuleSet& rules = BuiltInRules();
  size_t n = 0;
  auto check = [&](const std::string& id, const std::vector<KnownIssue>& issues) {
    for (const KnownIssue& k : issues) {
      ++n;
      EXPECT_FALSE(k.title.empty()) << id;
      EXPECT_TRUE(k.fixed_version.ok() || !k.affected_range.empty()) << id << " " << k.url.value;
    }
  };
  for (const auto& r : rules.rules()) check(r.spec.id.value, r.spec.known_issues);
  for (const auto& c : rules.correlations()) check(c.spec.id.value, c.spec.known_issues);
  SUCCEED() << n << " known issues";
}

}  // namespace
}  // namespace ncclscan
