// Numbers read from log text that do not fit (ranks, local ranks, devices, time
// fields): dropped and the line flagged, never cast down ("[rank4294967297]:"
// was rank 1), and the scan goes on.
#include <gtest/gtest.h>

#include <string>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "parsers/line_parser.h"
#include "parsers/path_hints.h"
#include "parsers/text_util.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

TEST(ConsumeIntBelow, ConsumesEveryDigitAndSaysWhetherTheValueFits) {
  struct Row {
    const char* in;
    IntParse want;
    int64_t value;
    const char* rest;
  };
  const Row rows[] = {
      {"0]", IntParse::kOk, 0, "]"},
      {"16777215:", IntParse::kOk, 16777215, ":"},
      {"16777216:", IntParse::kOutOfRange, -1, ":"},
      {"4294967297]", IntParse::kOutOfRange, -1, "]"},
      {"99999999999999999999999999]", IntParse::kOutOfRange, -1, "]"},
      {"x1", IntParse::kNone, -1, "x1"},
      {"", IntParse::kNone, -1, ""},
  };
  for (const Row& r : rows) {
    std::string_view s = r.in;
    int64_t v = -1;
    EXPECT_EQ(static_cast<int>(ConsumeIntBelow(&s, kMaxRanks, &v)), static_cast<int>(r.want)) << r.in;
    EXPECT_EQ(v, r.value) << r.in;
    EXPECT_EQ(std::string(s), r.rest) << r.in;
  }
}

struct Parsed {
  std::string text;
  int rank_hint, local_rank_hint, pg_rank, dev;
  bool bad_number;
  bool timed;
};

Parsed ParseOne(const std::string& raw) {
  LineParser parser;
  Arena arena;
  ParsedLine pl;
  std::string_view rest;
  parser.Parse(raw, &arena, &pl, &rest);
  return Parsed{std::string(pl.text), pl.rank_hint, pl.local_rank_hint, pl.pg_rank, pl.dev,
                pl.bad_number,        pl.time >= 0};
}

TEST(Numbers, RankPrefixThatDoesNotFitIsStrippedAndFlagged) {
  Parsed p = ParseOne("[rank4294967297]: step 3 failed");
  EXPECT_EQ(p.text, "step 3 failed");
  EXPECT_EQ(p.rank_hint, -1);
  EXPECT_TRUE(p.bad_number);
  p = ParseOne("[rank16777215]: step 3 failed");  // the largest that fits
  EXPECT_EQ(p.rank_hint, 16777215);
  EXPECT_FALSE(p.bad_number);
}

TEST(Numbers, MpiTorchrunPgAndDeviceNumbersThatDoNotFit) {
  Parsed p = ParseOne("[1,4294967297]<stdout>:hello");
  EXPECT_EQ(p.text, "hello");
  EXPECT_EQ(p.rank_hint, -1);
  EXPECT_TRUE(p.bad_number);
  p = ParseOne("[default4294967299]:hello");
  EXPECT_EQ(p.text, "hello");
  EXPECT_EQ(p.local_rank_hint, -1);
  EXPECT_TRUE(p.bad_number);
  p = ParseOne("[E1122 10:15:32.1 ProcessGroupNCCL.cpp:1] [Rank 4294967297] Watchdog caught");
  EXPECT_EQ(p.pg_rank, -1);
  EXPECT_TRUE(p.bad_number);
  p = ParseOne("n1:7:7 [4294967299] NCCL INFO Using network IB");
  EXPECT_EQ(p.dev, -1);
  EXPECT_TRUE(p.bad_number);
  p = ParseOne("n1:7:7 [3] NCCL INFO Using network IB");
  EXPECT_EQ(p.dev, 3);
  EXPECT_FALSE(p.bad_number);
}

TEST(Numbers, TimeFieldsThatDoNotFitAreNoTime) {
  // The hour 4294967306 is 10 modulo 2^32.
  EXPECT_FALSE(ParseOne("[E1122 4294967306:15:32.1 ProcessGroupNCCL.cpp:1] [Rank 1] x").timed);
  EXPECT_TRUE(ParseOne("[E1122 10:15:32.1 ProcessGroupNCCL.cpp:1] [Rank 1] x").timed);
  EXPECT_FALSE(ParseOne("Nov 22 4294967306:15:32 gpu-a17 python[123]: x").timed);
  EXPECT_TRUE(ParseOne("Nov 22 10:15:32 gpu-a17 python[123]: x").timed);
}

TEST(Numbers, PathNumbersThatDoNotFit) {
  EXPECT_EQ(ParsePathHints("/logs/rank4294967297.log").rank, -1);
  // Attempt 4294967297 is 1 modulo 2^32; local ranks of 10+ digits are no local ranks already.
  PathHints h = ParsePathHints("/logs/job42_3a9kq1zq/attempt_4294967297/3/stderr.log");
  EXPECT_EQ(h.local_rank, 3);
  EXPECT_EQ(h.attempt, -1);
  h = ParsePathHints("/logs/job42_3a9kq1zq/attempt_1/999999999/stderr.log");
  EXPECT_EQ(h.local_rank, -1);
  EXPECT_EQ(h.attempt, 1);
}

// End to end: the line with the rank that does not fit is still scanned, but
// its finding is not attributed to rank 1; the next line's rank 1 is.
TEST(Numbers, ScanDoesNotAttributeAWrappedRank) {
  TempDir dir;
  std::string path = dir.Write(
      "job.log",
      "[rank4294967297]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 4294967297] Process group "
      "watchdog thread terminated with exception: NCCL error\n"
      "[rank1]:[E1122 10:15:32.123 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=4, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1000) ran for 1001 milliseconds "
      "before timing out.\n");
  ScanOptions opts;
  opts.jobs = 1;
  Analysis a = Analyze(BuiltInRules(), {path}, opts);
  EXPECT_EQ(a.state->counters().lines, 2u);
  std::string got;
  for (const Finding& f : a.diagnosis.findings) {
    got += f.rule_id + ":";
    for (int r : f.ranks) got += std::to_string(r) + ",";
    got += " ";
  }
  EXPECT_EQ(got, "TORCH-WATCHDOG-TIMEOUT:1, TORCH-ASYNC-NCCL-ERROR: ");
}

}  // namespace
}  // namespace ncclscan
