// Cross-rank rules (engine/correlate) end to end, from log text to findings.
#include "engine/models/correlate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/run/analyze.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

// The findings of `rule` in a scan of one log with `text`: "ranks|hosts" each.
std::vector<std::string> FindingsOf(const std::string& rule, const std::string& text) {
  TempDir dir;
  std::string path = dir.Write("job.log", text);
  ScanOptions opts;
  opts.jobs = 1;
  Analysis a = Analyze(BuiltInRules(), {path}, opts);
  std::vector<std::string> out;
  for (const Finding& f : a.diagnosis.findings) {
    if (f.rule_id != rule) continue;
    std::string s;
    for (int r : f.ranks) s += (s.empty() ? "" : ",") + std::to_string(r);
    s += "|";
    for (size_t i = 0; i < f.hosts.size(); ++i) s += (i ? "," : "") + f.hosts[i];
    out.push_back(s);
  }
  return out;
}

// Regression (corpus real-h1-nccl-897): pasted channel fragments name their
// ranks but no host; the rank without GPUDirect RDMA is still named.
TEST(Consensus, OverHostsFallsBackToRanksWhenNoHostIsKnown) {
  EXPECT_EQ(FindingsOf("GDR-MISSING-HOST",
                       "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
                       "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n"),
            std::vector<std::string>{"2|"});
  // All agree: nothing to report.
  EXPECT_EQ(FindingsOf("GDR-MISSING-HOST",
                       "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
                       "9[1a000] -> 2[6b000] [receive] via NET/IB/1/GDRDMA\n"),
            std::vector<std::string>{});
}

TEST(Consensus, KnownHostsAloneVote) {
  // Rank 9's host is known: the unhosted rank 2 does not stand for a host of its
  // own next to it (it may well share node-a), so there is no second host to compare.
  EXPECT_EQ(FindingsOf("GDR-MISSING-HOST",
                       "node-a:7:8 [1] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
                       "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n"),
            std::vector<std::string>{});
  // Two known hosts that differ: the host is named as before.
  EXPECT_EQ(FindingsOf("GDR-MISSING-HOST",
                       "node-a:7:8 [1] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
                       "node-b:5:6 [0] NCCL INFO Channel 00/0 : 9[1a000] -> 2[6b000] [receive] via NET/IB/1\n"),
            std::vector<std::string>{"|node-b"});
}

}  // namespace
}  // namespace ncclscan
