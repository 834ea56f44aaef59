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

// The hosts of a scan of files {name, text}, per finding of `rule`.
std::vector<std::string> HostsOf(const std::string& rule,
                                 const std::vector<std::pair<std::string, std::string>>& files) {
  TempDir dir;
  std::vector<std::string> paths;
  for (const auto& [name, text] : files) paths.push_back(dir.Write(name, text));
  ScanOptions opts;
  opts.jobs = 1;
  Analysis a = Analyze(BuiltInRules(), paths, opts);
  std::vector<std::string> out;
  for (const Finding& f : a.diagnosis.findings) {
    if (f.rule_id != rule) continue;
    std::string s;
    for (size_t i = 0; i < f.hosts.size(); ++i) s += (i ? "," : "") + f.hosts[i];
    out.push_back(s);
  }
  return out;
}

// Regression (corpus h2-nccl-1267): NCCL <= 2.21 prints its version banner
// without a prefix. In a file whose prefixed lines all come from one process
// it is that process's banner, so the host is known; of two hosts, the older
// release is named (tie: newest). Before, the subjects were the file names.
TEST(Consensus, AnUnprefixedBannerBelongsToTheOneProcessOfItsFile) {
  const std::string a = "node-a:11:11 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.1<0>\nNCCL version 2.14.3+cuda11.7\n";
  const std::string b = "node-b:22:22 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.2<0>\nNCCL version 2.19.3+cuda12.3\n";
  EXPECT_EQ(HostsOf("NCCL-VERSION-MISMATCH", {{"a.log", a}, {"b.log", b}}), std::vector<std::string>{"node-a"});
  // A file of two processes: whose banner it is is unknown, so no host is named (the
  // finding's subject is the file).
  const std::string two = "node-c:33:33 [0] NCCL INFO Bootstrap : Using ens7:10.0.0.3<0>\n" + b;
  EXPECT_EQ(HostsOf("NCCL-VERSION-MISMATCH", {{"a.log", a}, {"two.log", two}}), std::vector<std::string>{""});
}

// One reporter and a peer address no process of the job owns: an error that
// came back through bootstrap code may be a foreign connection to the bootstrap
// port (NVIDIA/nccl#1612), so nobody is named; one that came back through
// transport or proxy code was on a channel to a peer of the job, which is named
// (corpus real-remote-rank-crash-broken-pipe).
TEST(PeerMap, ALoneReporterNamesAnUnknownPeerOnlyPastBootstrap) {
  const std::string warn =
      "n1:7:9 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.2.0.9<58355> failed : "
      "Broken pipe\nn1:7:9 [1] NCCL INFO misc/socket.cc:535 -> 6\n";
  EXPECT_EQ(FindingsOf("PEER-CLOSED-STORM", warn + "n1:7:9 [1] NCCL INFO bootstrap.cc:701 -> 6\n"),
            std::vector<std::string>{});
  EXPECT_EQ(FindingsOf("PEER-CLOSED-STORM", warn + "n1:7:9 [1] NCCL INFO transport/net_socket.cc:368 -> 6\n"
                                                   "n1:7:9 [1] NCCL INFO proxy.cc:991 -> 6\n"),
            std::vector<std::string>{"|10.2.0.9"});
}

// COLL traces pasted without their Init lines: no comm pointer is tied to a
// commId. Where each rank traced one communicator, it is the same one and the
// ranks' calls are compared; where a rank traced two, nothing is guessed
// (corpus cons-coll-op-mismatch-no-init-lines-4r).
TEST(Consensus, TracesWithoutInitLinesJoinOnlyOneCommunicatorPerRank) {
  auto call = [](int rank, const std::string& op, const std::string& comm, int opcount) {
    return "[rank" + std::to_string(rank) + "]:n1:" + std::to_string(100 + rank) + ":" + std::to_string(100 + rank) +
           " [" + std::to_string(rank) + "] NCCL INFO " + op + ": opCount " + std::to_string(opcount) +
           " sendbuff 0x7f00 recvbuff 0x7f00 count 16 datatype 4 op 0 root 0 comm " + comm + " [nranks=3] stream 0x1\n";
  };
  std::string one;
  for (int r = 0; r < 3; ++r) {
    const std::string comm = "0x55d0c1a0e9" + std::to_string(r) + "0";
    one += call(r, "Broadcast", comm, 5) + call(r, r == 2 ? "AllGather" : "Broadcast", comm, 6);
  }
  EXPECT_EQ(FindingsOf("CONSENSUS-CALL-MISMATCH", one), std::vector<std::string>{"2|n1"});
  // Rank 0 also traced a second communicator: which of its pointers is the others' is unknown.
  EXPECT_EQ(FindingsOf("CONSENSUS-CALL-MISMATCH", one + call(0, "AllReduce", "0x55d0c1a0f000", 1)),
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
