// The judge (engine/corpus/judge.h): SHA-256 against known digests and sha256sum, the
// split on known addresses, truth.json validation, each judgement, and the
// table totals.
#include "engine/corpus/judge.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "parsers/sha256.h"

namespace ncclscan {
namespace {

// Digests printed by `printf %s TEXT | sha256sum`; the lengths cross the
// one-block / two-block padding edges (55, 56, 64 bytes) and several blocks.
TEST(Sha256, KnownDigests) {
  struct Case {
    std::string text;
    const char* hex;
  };
  const Case cases[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {std::string(55, 'a'), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {std::string(56, 'a'), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {std::string(64, 'a'), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {std::string(119, 'a'), "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {std::string(1000, 'a'), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"},
      {"github.com/nvidia/nccl/issues/1234", "c40847ba6313c147a972f789f7df74e2d078b2966492794231c0b869eb7ad2d7"},
  };
  for (const auto& c : cases) EXPECT_EQ(Sha256Hex(c.text), c.hex) << c.text.size() << " bytes";
}

// The same digests as the system's sha256sum, for texts of every length up to
// three blocks (skipped where sha256sum is not installed).
TEST(Sha256, AgreesWithSha256sum) {
  if (std::system("command -v sha256sum >/dev/null 2>&1") != 0) GTEST_SKIP() << "no sha256sum";
  for (size_t n = 0; n <= 192; n += 7) {
    std::string text;
    for (size_t i = 0; i < n; ++i) text += static_cast<char>('A' + (i * 7 + n) % 26);
    std::string cmd = "printf %s '" + text + "' | sha256sum";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[65] = {};
    ASSERT_EQ(fread(buf, 1, 64, p), 64u);
    pclose(p);
    EXPECT_EQ(Sha256Hex(text), std::string(buf, 64)) << n << " bytes";
  }
}

TEST(JudgeSplit, NormalisesTheAddress) {
  EXPECT_EQ(NormaliseSource("https://www.GitHub.com/NVIDIA/nccl/issues/1234/#issuecomment-99"),
            "github.com/nvidia/nccl/issues/1234");
  EXPECT_EQ(NormaliseSource("http://github.com/NVIDIA/nccl/issues/1234"), "github.com/nvidia/nccl/issues/1234");
  EXPECT_EQ(NormaliseSource("github.com/nvidia/nccl/issues/1234///"), "github.com/nvidia/nccl/issues/1234");
  // Only a leading www. goes, and only a leading scheme.
  EXPECT_EQ(NormaliseSource("https://docs.www.example.com/a"), "docs.www.example.com/a");
  EXPECT_EQ(NormaliseSource("example.com/r?u=http://x"), "example.com/r?u=http://x");
}

// Buckets from `printf %s ADDRESS | sha256sum`: int(first 8 hex, 16) % 100,
// on both sides of the edge at 30.
TEST(JudgeSplit, KnownBuckets) {
  struct Case {
    const char* address;
    int bucket;
  };
  const Case cases[] = {
      {"https://github.com/NVIDIA/nccl/issues/1234", 86},  // c40847ba
      {"https://github.com/NVIDIA/nccl/issues/18", 29},    // 823968ad
      {"https://github.com/NVIDIA/nccl/issues/36", 30},    // 894d9f3e
      {"https://github.com/NVIDIA/nccl/issues/33", 0},     // 21cf89f8
      {"https://github.com/NVIDIA/nccl/issues/25", 99},    // 34be5f6b
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SplitBucket(c.address), c.bucket) << c.address;
    EXPECT_EQ(IsSetAside(c.address), c.bucket < 30) << c.address;
  }
  EXPECT_EQ(SplitBucket("https://www.github.com/NVIDIA/nccl/issues/18/#x"), 29);
}

constexpr const char* kFailingTruth = R"({
  "source": "https://github.com/NVIDIA/nccl/issues/1234",
  "established": "rank 3 on node-7 fell back to sockets",
  "confidence": "established",
  "status": "failed",
  "categories": ["socket_fallback", "network_iface"],
  "accept": {"categories": ["transport"], "rules": ["IB-NOT-USED"]},
  "culprit": {"ranks": [3], "hosts": ["node-7"]},
  "choice_needed": true,
  "traps": ["must not blame rank 0"]
})";

Truth ParsedTruth(const char* json) {
  Truth t;
  std::string err;
  EXPECT_TRUE(ParseTruth(json, &t, &err)) << err;
  return t;
}

TEST(JudgeTruth, ReadsEveryField) {
  Truth t = ParsedTruth(kFailingTruth);
  EXPECT_EQ(t.source, "https://github.com/NVIDIA/nccl/issues/1234");
  EXPECT_EQ(t.status, "failed");
  EXPECT_EQ(t.confidence, "established");
  EXPECT_EQ(t.categories, (std::vector<std::string>{"socket_fallback", "network_iface"}));
  EXPECT_EQ(t.accept_categories, std::vector<std::string>{"transport"});
  EXPECT_EQ(t.accept_rules, std::vector<std::string>{"IB-NOT-USED"});
  EXPECT_TRUE(t.has_culprit);
  EXPECT_EQ(t.culprit_ranks, std::vector<int>{3});
  EXPECT_EQ(t.culprit_hosts, std::vector<std::string>{"node-7"});
  EXPECT_TRUE(t.choice_needed);
  EXPECT_EQ(t.traps.size(), 1u);
}

// Every problem at once, in the order of the fields.
TEST(JudgeTruth, RejectsAMalformedTruthWithEveryProblem) {
  Truth t;
  std::string err;
  EXPECT_FALSE(ParseTruth("[1]", &t, &err));
  EXPECT_EQ(err, "not a JSON object");
  EXPECT_FALSE(ParseTruth(R"({"source": "", "status": "broken", "categories": ["sockets"],
                              "accept": {"categories": ["network"], "rules": ["lower-case"]},
                              "culprit": {"ranks": ["3"]}, "choice_needed": "yes"})",
                          &t, &err));
  EXPECT_EQ(err,
            "\"source\" missing or empty; status: unknown value \"broken\"; categories: unknown value \"sockets\"; "
            "categories: unknown value \"network\"; accept.rules: \"lower-case\" is not a rule id; culprit.ranks "
            "holds something other than a rank number; culprit names no rank and no host (write null); "
            "\"choice_needed\" missing or not true/false");
}

TEST(JudgeTruth, HealthyAcceptsNothingAndFailingAcceptsSomething) {
  Truth t;
  std::string err;
  EXPECT_FALSE(ParseTruth(R"({"source": "x", "status": "healthy", "categories": ["healthy"],
                              "accept": {"categories": ["transport"]}, "culprit": null, "choice_needed": false})",
                          &t, &err));
  EXPECT_EQ(err, "a healthy case accepts no finding (accept must be empty)");
  EXPECT_FALSE(ParseTruth(R"({"source": "x", "status": "hung", "categories": ["hang"],
                              "accept": {"categories": [], "rules": []}, "culprit": null, "choice_needed": true})",
                          &t, &err));
  EXPECT_EQ(err, "a failing case must accept some category or rule; choice_needed without a culprit");
}

Claim PrimaryClaim(const std::string& status, const std::string& rule, const std::string& category,
                   const std::string& severity, std::vector<int> ranks = {}, std::vector<std::string> hosts = {}) {
  Claim c;
  c.status = status;
  c.has_primary = true;
  c.rule = rule;
  c.category = category;
  c.severity = severity;
  c.suspect_ranks = std::move(ranks);
  c.suspect_hosts = std::move(hosts);
  return c;
}

Claim NoPrimary(const std::string& status) {
  Claim c;
  c.status = status;
  return c;
}

TEST(JudgeStatus, OnlyOkAndHealthyClaimHealth) {
  for (const char* s : {"ok", "healthy"}) EXPECT_TRUE(ClaimsHealthy(s)) << s;
  for (const char* s : {"warn", "fail", "unknown", "partial", "hung", "crashed", "failed", "incomplete", "OK", ""}) {
    EXPECT_FALSE(ClaimsHealthy(s)) << s;
  }
  for (const char* s : {"warn", "fail", "hung", "crashed", "failed", "degraded"}) EXPECT_TRUE(ClaimsFailure(s)) << s;
  for (const char* s : {"ok", "healthy", "unknown", "partial", "incomplete"}) EXPECT_FALSE(ClaimsFailure(s)) << s;
}

TEST(JudgeFailing, CauseRightByRuleOrByCategory) {
  Truth t = ParsedTruth(kFailingTruth);
  EXPECT_TRUE(Judge("c", t, PrimaryClaim("fail", "IB-NOT-USED", "other", "warning")).cause_right);
  EXPECT_TRUE(Judge("c", t, PrimaryClaim("fail", "NET-SOCKET-MULTINODE", "transport", "warning")).cause_right);
  Judgement wrong = Judge("c", t, PrimaryClaim("fail", "TORCH-WATCHDOG-TIMEOUT", "timeout", "error"));
  EXPECT_FALSE(wrong.cause_right);
  EXPECT_FALSE(wrong.false_healthy);
  EXPECT_TRUE(wrong.Miss());
  EXPECT_FALSE(Judge("c", t, NoPrimary("unknown")).cause_right);
}

TEST(JudgeFailing, FalseHealthyOnlyWhenTheToolClaimsHealth) {
  Truth t = ParsedTruth(kFailingTruth);
  EXPECT_TRUE(Judge("c", t, NoPrimary("ok")).false_healthy);
  EXPECT_TRUE(Judge("c", t, NoPrimary("healthy")).false_healthy);
  for (const char* s : {"unknown", "partial", "hung", "crashed", "incomplete", "warn"}) {
    EXPECT_FALSE(Judge("c", t, NoPrimary(s)).false_healthy) << s;
  }
}

TEST(JudgeHealthy, FalseAlarmOnAWarningPrimaryOrAFailureStatus) {
  Truth t = ParsedTruth(R"({"source": "https://github.com/NVIDIA/nccl/issues/1292", "status": "healthy",
                            "categories": ["healthy", "plugin"], "accept": {"categories": [], "rules": []},
                            "culprit": null, "choice_needed": false})");
  Judgement ok = Judge("h", t, NoPrimary("ok"));
  EXPECT_FALSE(ok.false_alarm);
  EXPECT_TRUE(ok.healthy_right);
  EXPECT_FALSE(ok.Miss());
  EXPECT_TRUE(Judge("h", t, PrimaryClaim("warn", "NCCL-NET-PLUGIN-LOAD-FAILED", "transport", "warning")).false_alarm);
  // A new failure status is an alarm even with nothing ranked.
  EXPECT_TRUE(Judge("h", t, NoPrimary("hung")).false_alarm);
  // An info primary under "ok" is no alarm.
  EXPECT_TRUE(Judge("h", t, PrimaryClaim("ok", "NCCL-VERSION", "version", "info")).healthy_right);
  // "unknown" is neither an alarm nor a right answer.
  Judgement unknown = Judge("h", t, NoPrimary("unknown"));
  EXPECT_FALSE(unknown.false_alarm);
  EXPECT_FALSE(unknown.healthy_right);
  EXPECT_TRUE(unknown.Miss());
}

TEST(JudgeCulprit, RightWrongAndSuperset) {
  Truth t = ParsedTruth(kFailingTruth);
  auto culprit = [&](std::vector<int> ranks, std::vector<std::string> hosts) {
    Judgement j = Judge("c", t, PrimaryClaim("fail", "DIVERGENT-RANK", "transport", "critical", ranks, hosts));
    EXPECT_TRUE(j.culprit_needed);
    return j.culprit_right;
  };
  EXPECT_TRUE(culprit({3}, {}));
  EXPECT_TRUE(culprit({}, {"node-7"}));
  EXPECT_TRUE(culprit({3, 5}, {"node-7"}));  // every suspect host is the culprit host
  EXPECT_FALSE(culprit({0}, {}));
  EXPECT_FALSE(culprit({3, 5}, {}));                    // a superset blames rank 5 too
  EXPECT_FALSE(culprit({}, {}));                        // a victim's report names nobody
  EXPECT_FALSE(culprit({3, 4}, {"node-7", "node-8"}));  // superset in both
}

// Whether suspect `hosts` name the culprit `culprits` (hosts only, a choice needed).
bool HostsNameCulprit(std::vector<std::string> culprits, std::vector<std::string> hosts) {
  Truth t = ParsedTruth(kFailingTruth);
  t.culprit_ranks = {};
  t.culprit_hosts = std::move(culprits);
  return Judge("c", t, PrimaryClaim("fail", "X", "transport", "error", {}, std::move(hosts))).culprit_right;
}

// Two machines named alike are told apart by address: "ubuntu[10.0.0.2]" is the
// machine at 10.0.0.2, not the one at 10.0.0.1, and not every "ubuntu".
TEST(JudgeCulprit, AHostLabelWithAnAddressNamesThatAddress) {
  auto right = [](std::vector<std::string> hosts) { return HostsNameCulprit({"10.0.0.2"}, std::move(hosts)); };
  EXPECT_TRUE(right({"ubuntu[10.0.0.2]"}));
  EXPECT_TRUE(right({"10.0.0.2"}));
  EXPECT_FALSE(right({"ubuntu[10.0.0.1]"}));
  EXPECT_FALSE(right({"ubuntu"}));
  EXPECT_FALSE(right({"ubuntu[10.0.0.2]", "ubuntu[10.0.0.1]"}));
  EXPECT_FALSE(right({"x10.0.0.2"}));
}

TEST(JudgeCulprit, AShortHostNameNamesItsFullyQualifiedName) {
  auto right = [](std::vector<std::string> hosts) {
    return HostsNameCulprit({"ip-172-31-45-209.eu-north-1.compute.internal", "10.0.0.25"}, std::move(hosts));
  };
  EXPECT_TRUE(right({"ip-172-31-45-209"}));
  EXPECT_TRUE(right({"ip-172-31-45-209.eu-north-1"}));
  EXPECT_FALSE(right({"ip-172-31-45"}));
  EXPECT_FALSE(right({"ip-172-31-45-20"}));
  EXPECT_FALSE(right({"10.0.0"}));  // an address is not a short name
}

TEST(JudgeCulprit, NotNeededWithoutAChoice) {
  Truth t = ParsedTruth(kFailingTruth);
  t.choice_needed = false;
  Judgement j = Judge("c", t, PrimaryClaim("fail", "IB-NOT-USED", "transport", "warning", {0}));
  EXPECT_FALSE(j.culprit_needed);
  EXPECT_FALSE(j.Miss());
}

TEST(JudgeClaim, ReadsThePrimaryAndItsSuspects) {
  Claim c;
  std::string err;
  ASSERT_TRUE(ReadClaim(R"({"verdict": {"status": "fail", "primary": "DIVERGENT-RANK"},
      "findings": [{"rule": "TORCH-WATCHDOG-TIMEOUT", "category": "timeout", "severity": "error", "primary": false,
                    "ranks": "0-7", "hosts": ["a"], "suspects": {"ranks": "", "hosts": []}},
                   {"rule": "DIVERGENT-RANK", "category": "desync", "severity": "critical", "primary": true,
                    "ranks": "0-7", "hosts": ["a", "b"], "suspects": {"ranks": "2-3,6", "hosts": ["b"]}}]})",
                        &c, &err))
      << err;
  EXPECT_EQ(c.status, "fail");
  EXPECT_TRUE(c.has_primary);
  EXPECT_EQ(c.rule, "DIVERGENT-RANK");
  EXPECT_EQ(c.category, "desync");
  EXPECT_EQ(c.severity, "critical");
  EXPECT_EQ(c.suspect_ranks, (std::vector<int>{2, 3, 6}));
  EXPECT_EQ(c.suspect_hosts, std::vector<std::string>{"b"});
}

// A finding without suspects names its ranks and hosts; no primary is none.
TEST(JudgeClaim, FallsBackToRanksAndHosts) {
  Claim c;
  std::string err;
  ASSERT_TRUE(ReadClaim(R"({"verdict": {"status": "hung", "primary": "X"},
      "findings": [{"rule": "X", "category": "hang", "severity": "error", "ranks": "5", "hosts": ["n1"]}]})",
                        &c, &err));
  EXPECT_EQ(c.suspect_ranks, std::vector<int>{5});
  EXPECT_EQ(c.suspect_hosts, std::vector<std::string>{"n1"});
  Claim none;
  ASSERT_TRUE(ReadClaim(R"({"verdict": {"status": "ok", "primary": null}, "findings": []})", &none, &err));
  EXPECT_FALSE(none.has_primary);
  // A finding marked primary is the primary even where the verdict does not name it.
  Claim marked;
  ASSERT_TRUE(ReadClaim(R"({"verdict": {"status": "hung"},
      "findings": [{"rule": "Z", "category": "hang", "severity": "error", "primary": true}]})",
                        &marked, &err));
  EXPECT_TRUE(marked.has_primary);
  EXPECT_EQ(marked.rule, "Z");
  EXPECT_FALSE(ReadClaim(R"({"verdict": {"status": "fail", "primary": "Y"}, "findings": []})", &none, &err));
  EXPECT_EQ(err, "verdict.primary names Y but no finding is the primary");
}

TEST(JudgeClaim, RankListsAreBounded) {
  std::vector<int> r;
  ASSERT_TRUE(ParseRankList("0-2,9", &r));
  EXPECT_EQ(r, (std::vector<int>{0, 1, 2, 9}));
  ASSERT_TRUE(ParseRankList("0-16000000", &r));
  EXPECT_EQ(r.size(), kMaxExpandedRanks + 1);
  EXPECT_EQ(r.back(), -1);
  EXPECT_FALSE(ParseRankList("3-1", &r));
  EXPECT_FALSE(ParseRankList("1,,2", &r));
}

// A case counts once in the total and once in each of its categories; the
// split decides which table.
TEST(JudgeTables, TotalsCountEachCaseOnce) {
  Truth study = ParsedTruth(kFailingTruth);  // bucket 86: study
  Truth aside = study;
  aside.source = "https://github.com/NVIDIA/nccl/issues/18";  // bucket 29: set aside
  aside.categories = {"socket_fallback"};
  Truth healthy = ParsedTruth(R"({"source": "https://github.com/NVIDIA/nccl/issues/36", "status": "healthy",
      "categories": ["healthy"], "accept": {}, "culprit": null, "choice_needed": false})");
  std::vector<Judgement> js = {
      Judge("right", study, PrimaryClaim("fail", "X", "transport", "warning", {3})),
      Judge("wrong", study, PrimaryClaim("fail", "X", "timeout", "error", {0, 3})),
      Judge("silent", study, NoPrimary("ok")),
      Judge("alarm", healthy, PrimaryClaim("warn", "X", "transport", "warning")),
      Judge("aside", aside, PrimaryClaim("fail", "X", "transport", "warning", {3})),
  };
  SplitTally s = CountSplit(js, false);
  EXPECT_EQ(s.total.cases, 4);
  EXPECT_EQ(s.total.failing, 3);
  EXPECT_EQ(s.total.cause_right, 1);
  EXPECT_EQ(s.total.culprit_needed, 3);
  EXPECT_EQ(s.total.culprit_right, 1);
  EXPECT_EQ(s.total.false_healthy, 1);
  EXPECT_EQ(s.total.healthy, 1);
  EXPECT_EQ(s.total.false_alarms, 1);
  EXPECT_EQ(s.by_category.size(), 3u);
  EXPECT_EQ(s.by_category["socket_fallback"].cases, 3);
  EXPECT_EQ(s.by_category["network_iface"].cause_right, 1);
  EXPECT_EQ(s.by_category["healthy"].false_alarms, 1);
  SplitTally a = CountSplit(js, true);
  EXPECT_EQ(a.total.cases, 1);
  EXPECT_EQ(a.total.cause_right, 1);
  EXPECT_EQ(a.by_category.size(), 1u);

  const std::string tables = RenderJudgeTables(js);
  EXPECT_NE(tables.find("study: 4 cases\n"), std::string::npos) << tables;
  EXPECT_NE(tables.find("set aside: 1 case\n"), std::string::npos) << tables;
  EXPECT_NE(
      tables.find(
          "  total                    4        3      1/3  33%            1/3              1        1             1\n"),
      std::string::npos)
      << tables;
  EXPECT_EQ(RenderJudgeMisses(js),
            "MISS wrong [study]: expected failed: primary in categories transport or rules IB-NOT-USED, suspects "
            "within ranks 3 hosts node-7; got status fail, primary X (timeout, error), suspects ranks 0,3\n"
            "MISS silent [study]: expected failed: primary in categories transport or rules IB-NOT-USED, suspects "
            "within ranks 3 hosts node-7; got status ok, primary none\n"
            "MISS alarm [study]: expected healthy (status ok, nothing at warning or above); got status warn, "
            "primary X (transport, warning), suspects nobody\n");
}

}  // namespace
}  // namespace ncclscan
