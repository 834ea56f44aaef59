#include "engine/models/consensus.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "engine/models/diagnosis.h"
#include "engine/run/analyze.h"
#include "rules/rule_loader.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

const RuleSet& Rules() { return BuiltInRules(); }

FrEntry Coll(int64_t seq, const std::string& name, const std::string& state, std::vector<int64_t> shape = {4, 5},
             const std::string& dtype = "Float") {
  FrEntry e;
  e.record_id = seq;
  e.pg_id = "0";
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = seq;
  e.p2p_seq_id = 0;
  e.profiling_name = name;
  e.state = state;
  e.input_sizes = {shape};
  e.output_sizes = {shape};
  e.input_dtypes = {dtype};
  e.output_dtypes = {dtype};
  e.top_frame = "train_step (train.py:88)";
  return e;
}

FrEntry P2p(int64_t seq, const std::string& name, std::vector<int64_t> shape = {8}) {
  FrEntry e = Coll(0, name, "started", shape);
  e.collective_seq_id = 0;
  e.p2p_seq_id = seq;
  e.is_p2p = true;
  return e;
}

// A world of `n` ranks in pg "0"; each rank's entries from `entries(rank)`.
template <typename F>
std::vector<FrFile> World(int n, F entries, std::vector<int> skip = {}) {
  std::vector<FrFile> files;
  FrProcessGroup pg;
  pg.name = "0";
  pg.desc = "default_pg";
  for (int r = 0; r < n; ++r) pg.ranks.push_back(r);
  for (int r = 0; r < n; ++r) {
    if (std::count(skip.begin(), skip.end(), r)) continue;
    FrFile f;
    f.path = "nccl_trace_rank_" + std::to_string(r);
    f.rank = r;
    f.dump.version = "2.4";
    f.dump.pg_config["0"] = pg;
    f.dump.entries = entries(r);
    files.push_back(std::move(f));
  }
  return files;
}

std::vector<Finding> Check(const std::vector<FrFile>& files) {
  JobState state(&Rules());
  for (const auto& f : files) state.AddFlightRecorder(f);
  state.Finalize();
  std::vector<Finding> out;
  RunCollectiveChecks(state, &out);
  return out;
}

const Finding* Find(const std::vector<Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.rule_id == id) return &f;
  }
  return nullptr;
}

TEST(Consensus, HealthyDumpsSayNothing) {
  auto fs = Check(World(4, [](int) {
    return std::vector<FrEntry>{Coll(1, "nccl:all_reduce", "completed"), Coll(2, "nccl:all_reduce", "completed")};
  }));
  EXPECT_TRUE(fs.empty()) << fs[0].rule_id << ": " << fs[0].explanation;
}

TEST(Consensus, MissingDumpNamesTheRankWithoutAFile) {
  auto fs = Check(World(4, [](int) { return std::vector<FrEntry>{Coll(1, "nccl:all_reduce", "started")}; }, {2}));
  const Finding* f = Find(fs, "CONSENSUS-MISSING-DUMP");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{2});
}

TEST(Consensus, BehindNamesTheRankThatNeverEnqueued) {
  auto fs = Check(World(4, [](int r) {
    std::vector<FrEntry> e{Coll(1, "nccl:all_reduce", "completed")};
    if (r != 3) e.push_back(Coll(2, "nccl:all_reduce", "started"));
    return e;
  }));
  const Finding* f = Find(fs, "CONSENSUS-BEHIND");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{3});
  EXPECT_EQ(f->sequence, "2");
  EXPECT_NE(f->explanation.find("never enqueued #2 (ALL_REDUCE)"), std::string::npos) << f->explanation;
}

TEST(Consensus, SizeMismatchNamesTheMinorityAndTheField) {
  auto fs = Check(World(4, [](int r) {
    return std::vector<FrEntry>{
        Coll(1, "nccl:all_reduce", "completed"),
        Coll(2, "nccl:all_reduce", "started", r == 1 ? std::vector<int64_t>{4, 6} : std::vector<int64_t>{4, 5})};
  }));
  const Finding* f = Find(fs, "CONSENSUS-CALL-MISMATCH");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_NE(f->explanation.find("differs in size"), std::string::npos) << f->explanation;
  // The evidence cites the dump file and entry.
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_NE(f->evidence[0].text.find("nccl_trace_rank_1: record 2 nccl:all_reduce"), std::string::npos);
  EXPECT_NE(f->evidence[0].text.find("train.py:88"), std::string::npos);
}

TEST(Consensus, EveryMismatchOfEveryGroupIsReported) {
  auto fs = Check(World(4, [](int r) {
    return std::vector<FrEntry>{Coll(1, "nccl:all_reduce", "completed", {4}, r == 0 ? "BFloat16" : "Float"),
                                Coll(2, r == 2 ? "nccl:broadcast" : "nccl:all_reduce", "started")};
  }));
  int n = 0;
  for (const auto& f : fs) n += f.rule_id == "CONSENSUS-CALL-MISMATCH";
  EXPECT_EQ(n, 2);
}

TEST(Consensus, NotStartedNamesTheRankStillScheduled) {
  auto fs = Check(World(4, [](int r) {
    return std::vector<FrEntry>{Coll(1, "nccl:all_reduce", "completed"),
                                Coll(2, "nccl:all_reduce", r == 0 ? "scheduled" : "started")};
  }));
  const Finding* f = Find(fs, "CONSENSUS-NOT-STARTED");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{0});
}

TEST(Consensus, UnpairedSendNamesTheSilentReceiver) {
  auto fs = Check(World(2, [](int r) {
    if (r == 0) return std::vector<FrEntry>{P2p(1, "nccl:send 0->1"), P2p(2, "nccl:send 0->1")};
    return std::vector<FrEntry>{P2p(1, "nccl:recv 1<-0")};
  }));
  const Finding* f = Find(fs, "CONSENSUS-P2P-UNPAIRED");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
}

TEST(Consensus, P2pSizeMismatchNamesBothEnds) {
  auto fs = Check(World(2, [](int r) {
    if (r == 0) return std::vector<FrEntry>{P2p(1, "nccl:send 0->1", {8})};
    return std::vector<FrEntry>{P2p(1, "nccl:recv 1<-0", {16})};
  }));
  const Finding* f = Find(fs, "CONSENSUS-P2P-UNPAIRED");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->ranks, (std::vector<int>{0, 1}));
}

TEST(Consensus, ReceiveFromTheWrongPeerNamesTheReceiver) {
  // 2 sends to 3; 3 receives from 1, who sends nothing: one finding, rank 3.
  auto fs = Check(World(4, [](int r) {
    if (r == 2) return std::vector<FrEntry>{P2p(1, "nccl:send 2->3")};
    if (r == 3) return std::vector<FrEntry>{P2p(1, "nccl:recv 3<-1")};
    return std::vector<FrEntry>{};
  }));
  ASSERT_EQ(fs.size(), 1u) << fs[0].explanation;
  EXPECT_EQ(fs[0].rule_id, "CONSENSUS-P2P-UNPAIRED");
  EXPECT_EQ(fs[0].ranks, std::vector<int>{3});
  EXPECT_NE(fs[0].explanation.find("peer mismatch"), std::string::npos) << fs[0].explanation;
}

TEST(Consensus, GroupsAreComparedOnlyWithinThemselves) {
  // pg "1" has its own sequence: its #1 on ranks 0-1 is unrelated to pg "0"'s #1.
  auto files = World(2, [](int) { return std::vector<FrEntry>{Coll(1, "nccl:all_reduce", "completed")}; });
  for (auto& f : files) {
    FrEntry e = Coll(1, "nccl:all_gather", "completed", {64});
    e.pg_id = "1";
    e.pg_name = "1";
    f.dump.entries.push_back(e);
    f.dump.pg_config["1"] = FrProcessGroup{"1", "tp", {0, 1}};
  }
  EXPECT_TRUE(Check(files).empty());
}

TEST(Consensus, WindowKeepsTheLatestSequences) {
  CollectiveModel m;
  FrFile f = World(1, [](int) {
    std::vector<FrEntry> e;
    for (int i = 1; i <= 500; ++i) e.push_back(Coll(i, "nccl:all_reduce", "completed"));
    return e;
  })[0];
  m.AddDump(f, -1);
  const RankView& v = m.groups().at("pg 0").ranks.at(0);
  EXPECT_EQ(v.calls.size(), CollectiveModel::kWindow);
  EXPECT_EQ(v.calls.rbegin()->first, 500);
  EXPECT_EQ(v.last_completed, 500);
}

TEST(Consensus, LoaderRejectsAnUnknownCheck) {
  TempDir dir;
  dir.Write("site.yaml",
            "correlations:\n"
            "  - id: SITE-CULPRIT\n"
            "    title: t\n"
            "    category: desync\n"
            "    kind: collective\n"
            "    check: guess\n"
            "    finding: {severity: error, explanation: \"{ranks}\", remediation: r}\n");
  std::string err;
  EXPECT_EQ(LoadRules({dir.path()}, &err), nullptr);
  EXPECT_NE(err.find("unknown collective check 'guess'"), std::string::npos) << err;
}

TEST(Consensus, CollTraceKeepsTheLatestCallPerCommunicator) {
  // 300 COLL lines of one rank: last_opcount holds one entry per communicator,
  // whose evidence is the latest call (what the consensus model compares), so a
  // traced job's bulk folds to one update per run.
  std::string text;
  for (int i = 0; i < 300; ++i) {
    text += fmt::format(
        "n1:7:7 [0] NCCL INFO AllReduce: opCount {:x} sendbuff 0x1 recvbuff 0x1 count {} datatype 7 op 0 root 0 "
        "comm 0x55d0c1a0e9f0 [nranks=2] stream 0x2\n",
        i, i == 299 ? 24 : 8);
  }
  TempDir dir;
  std::string path = dir.Write("rank0.log", text);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  const int fact = Rules().FindFact("last_opcount");
  size_t keys = 0;
  std::string value, evidence;
  std::vector<std::string> fields;
  for (int s : a.state->LiveSubjects()) {
    for (const auto& kv : a.state->subjects()[s].keyed[fact]) {
      ++keys;
      value = kv.second.value;
      evidence = kv.second.evidence.text;
      fields = kv.second.fields;
    }
  }
  EXPECT_EQ(keys, 1u);
  EXPECT_EQ(value, "12b");
  // The kept call's op, count, datatype and root ride with it (the fact's fields).
  EXPECT_EQ(fields, (std::vector<std::string>{"AllReduce", "24", "7", "0"}));
  EXPECT_NE(evidence.find("opCount 12b sendbuff 0x1 recvbuff 0x1 count 24 "), std::string::npos) << evidence;
}

TEST(Consensus, CollP2pCountsEachPeerAcrossTheWholeTrace) {
  // 200 Send lines of one rank to two peers, alternating: p2p_last holds one
  // entry per (communicator, op, peer) with the number of lines, and the
  // latest line's count for the size comparison.
  std::string text =
      "n1:7:7 [0] NCCL INFO comm 0x55d0c1a0e9f0 rank 0 nranks 3 cudaDev 0 nvmlDev 0 busId 18000 commId 0xabc - "
      "Init COMPLETE\n";
  for (int i = 0; i < 200; ++i) {
    text += fmt::format(
        "n1:7:7 [0] NCCL INFO Send: opCount {:x} sendbuff (nil) recvbuff 0x1 count {} datatype 7 op 0 root {} "
        "comm 0x55d0c1a0e9f0 [nranks=3] stream 0x2\n",
        i, i == 198 ? 24 : 8, 1 + i % 2);
  }
  TempDir dir;
  std::string path = dir.Write("rank0.log", text);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  const int fact = Rules().FindFact("p2p_last");
  std::map<std::string, std::pair<int64_t, std::string>> got;
  for (int s : a.state->LiveSubjects()) {
    for (const auto& kv : a.state->subjects()[s].keyed[fact]) got[kv.first] = {kv.second.count, kv.second.value};
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["0xabc Send 1"], std::make_pair(int64_t{100}, std::string("c6")));
  EXPECT_EQ(got["0xabc Send 2"], std::make_pair(int64_t{100}, std::string("c7")));
}

TEST(Consensus, CollP2pSizeMismatchNamesBothEnds) {
  // Rank 0 sends 4096 floats to rank 1 twice; rank 1's second receive posts
  // 8192: equal numbers, so the latest of each are one transfer and differ.
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 2; ++r) {
    std::string text = fmt::format(
        "n1:{0}:{0} [{1}] NCCL INFO comm 0x55d0c1a0e9f{1} rank {1} nranks 2 cudaDev {1} nvmlDev {1} busId 18000 "
        "commId 0xabc - Init COMPLETE\n",
        70 + r, r);
    for (int i = 0; i < 2; ++i) {
      text += fmt::format(
          "n1:{0}:{0} [{1}] NCCL INFO {2}: opCount {3:x} sendbuff (nil) recvbuff 0x1 count {4} datatype 7 op 0 "
          "root {5} comm 0x55d0c1a0e9f{1} [nranks=2] stream 0x2\n",
          70 + r, r, r == 0 ? "Send" : "Recv", i, r == 1 && i == 1 ? 8192 : 4096, 1 - r);
    }
    paths.push_back(dir.Write(fmt::format("rank{}.log", r), text));
  }
  Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
  int found = 0;
  for (const auto& f : d.findings) {
    if (f.rule_id != "CONSENSUS-P2P-UNPAIRED") continue;
    ++found;
    EXPECT_EQ(CompactRanks(f.ranks), "0-1");
    EXPECT_NE(f.explanation.find("rank 0 sends count 4096 fp32 to rank 1, which receives count 8192 fp32"),
              std::string::npos)
        << f.explanation;
  }
  EXPECT_EQ(found, 1);
}

// A three-rank job: ranks 0 and 1 start at 10:05:11 and time out in ALLREDUCE
// SeqNum 5 at 10:15:41 and 10:15:42 (each having run 600010 ms); rank 2 starts
// at `rank2_start` and then prints `rank2` (one file a rank).
Diagnosis DiedFirstJob(const std::string& rank2_start, const std::vector<std::string>& rank2) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 3; ++r) {
    std::string text = fmt::format(
        "[rank{0}]:[I1122 {1}.000000000 ProcessGroupNCCL.cpp:918] [PG ID 0 PG GUID 0 Rank {0}] "
        "ProcessGroupNCCL initialization options: size: 3, global rank: {0}, TIMEOUT(ms): 600000\n",
        r, r < 2 ? "10:05:11" : rank2_start);
    if (r < 2) {
      text += fmt::format(
          "[rank{0}]:[E1122 10:15:4{1}.000000000 ProcessGroupNCCL.cpp:616] [Rank {0}] Watchdog caught collective "
          "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
          "for 600010 milliseconds before timing out.\n",
          r, r + 1);
    } else {
      for (const auto& l : rank2) text += l + "\n";
    }
    paths.push_back(dir.Write(fmt::format("rank{}.log", r), text));
  }
  return Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
}

const Finding* FindingByRule(const Diagnosis& d, const std::string& rule) {
  for (const auto& f : d.findings) {
    if (f.rule_id == rule) return &f;
  }
  return nullptr;
}

TEST(Consensus, DiedFirstNamesOnlyWhatPrecedesTheTimeouts) {
  // Ranks 0 and 1 time out at 10:15:41; what rank 2 printed decides.
  struct Case {
    const char* name;
    std::vector<std::string> rank2;
    std::string want;  // ranks named, "" = silent
  } cases[] = {
      {"untimed OOM", {"[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."}, "2"},
      {"error before",
       {"[rank2]:[E1122 10:05:00.000000000 Foo.cpp:1] [PG ID 0 PG GUID 0 Rank 2] frobnication failed"},
       "2"},
      {"error after",
       {"[rank2]:[E1122 10:20:00.000000000 Foo.cpp:1] [PG ID 0 PG GUID 0 Rank 2] frobnication failed"},
       ""},
      {"silent since init", {}, "2"},
      // A Python exception is the process's own failure, not an error NCCL reported.
      {"untimed exception", {"[rank2]: Traceback (most recent call last):", "[rank2]: KeyError: 'shard_00041'"}, "2"},
      {"exception a wrapper names", {"Rank 2: FileNotFoundError: [Errno 2] No such file or directory: '/d/s3'"}, "2"},
      {"timed out too",
       {"[rank2]:[E1122 10:15:43.000000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out."},
       ""},
  };
  for (const Case& c : cases) {
    const Diagnosis d = DiedFirstJob("10:05:11", c.rank2);
    const Finding* f = FindingByRule(d, "CONSENSUS-DIED-FIRST");
    EXPECT_EQ(f ? CompactRanks(f->ranks) : "", c.want) << c.name;
  }
}

// The quiet rank's last line, against when the others entered the collective
// they timed out in (their timeout's time less the time it ran for): before it
// (the rank never came) or while they waited (it stopped there).
TEST(Consensus, DiedFirstSaysWhenTheQuietRankStoppedAgainstTheCollective) {
  struct Case {
    const char* rank2_time;
    const char* want;
  } cases[] = {
      {"10:03:10",
       "printed nothing after 11-22 10:03:10.000, 2 min 31 s before the others entered ALLREDUCE "
       "(11-22 10:05:40.990); it never timed out itself"},
      {"10:10:00",
       "printed nothing after 11-22 10:10:00.000, 4 min 19 s after the others entered ALLREDUCE and "
       "5 min 41 s before their watchdogs fired; it never timed out itself"},
  };
  for (const Case& c : cases) {
    const Diagnosis d = DiedFirstJob(c.rank2_time, {});
    const Finding* f = FindingByRule(d, "CONSENSUS-DIED-FIRST");
    ASSERT_NE(f, nullptr) << c.rank2_time;
    EXPECT_NE(f->explanation.find(c.want), std::string::npos) << f->explanation;
  }
}

// Ranks 0 and 1 time out at 10:15:41; rank 2 reports an error of its own. A
// "peer gone" error well after the timeouts is a rank that entered late (the
// straggler); one at the timeouts is a rank that waited with them and heard of
// their abort; an IB completion error is a waiting rank's retries running out.
TEST(Consensus, ArrivedLateNamesOnlyAPeerGoneErrorWellAfterTheTimeouts) {
  const auto async_error = [](const char* time, const char* err) {
    return fmt::format(
        "[rank2]:[E1122 {}.000000000 ProcessGroupNCCL.cpp:542] [Rank 2] Collective WorkNCCL(SeqNum=5, "
        "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) raised the following async exception: {}",
        time, err);
  };
  const char* remote = "NCCL error: remote process exited or there was a network error, NCCL version 2.22.3";
  struct Case {
    const char* name;
    std::vector<std::string> rank2;
    std::string want;  // ranks CONSENSUS-ARRIVED-LATE names, "" = silent
  } cases[] = {
      {"remote error 25 s after", {async_error("10:16:06", remote)}, "2"},
      {"remote error at the timeouts", {async_error("10:15:43", remote)}, ""},
      {"remote error before the timeouts", {async_error("10:10:00", remote)}, ""},
      {"its own failure after", {async_error("10:16:06", "NCCL error: unhandled cuda error, NCCL version 2.22.3")}, ""},
  };
  for (const Case& c : cases) {
    const Diagnosis d = DiedFirstJob("10:05:11", c.rank2);
    const Finding* f = FindingByRule(d, "CONSENSUS-ARRIVED-LATE");
    EXPECT_EQ(f ? CompactRanks(f->ranks) : "", c.want) << c.name;
    if (f) {
      EXPECT_NE(f->explanation.find("rank 2 reported its first error at 11-22 10:16:06.000, 25 s after the first "
                                    "watchdog timeout"),
                std::string::npos)
          << f->explanation;
      EXPECT_EQ(d.findings.front().rule_id, "CONSENSUS-ARRIVED-LATE") << "the straggler leads the report";
    }
  }
}

TEST(Consensus, RankZeroAloneOnlyWhereNothingElseSpeaks) {
  // Ranks 2 and 3 time out; what else the input says decides whether rank 0,
  // silent, is named from its role.
  const std::string timeouts =
      "[rank2]:[E1122 10:15:41.000000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out.\n"
      "[rank3]:[E1122 10:15:42.000000000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out.\n";
  struct Case {
    const char* name;
    std::string extra;
    std::string want;  // ranks CONSENSUS-RANK0-ALONE names, "" = silent
  } cases[] = {
      {"rank 0 silent, no world size", "", "0"},
      {"world size printed: elimination speaks",
       "[rank2]:[I1122 10:05:11.000000000 ProcessGroupNCCL.cpp:918] [PG ID 0 PG GUID 0 Rank 2] ProcessGroupNCCL "
       "initialization options: size: 4, global rank: 2, TIMEOUT(ms): 600000\n",
       ""},
      {"rank 0 in the input",
       "[rank0]:[E1122 10:15:40.000000000 ProcessGroupNCCL.cpp:1709] [PG ID 0 PG GUID 0 Rank 0] Timeout at NCCL work: "
       "1, last enqueued NCCL work: 1, last completed NCCL work: 1.\n",
       ""},
      {"rank 0 timed out too",
       "[rank0]:[E1122 10:15:43.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
       "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
       "milliseconds before timing out.\n",
       ""},
      {"rank 0 busy: its own lines show no timeout", "[rank0]: Evaluating:  45%|####5     | 450/1000\n", "0"},
      {"rank 0 reached its end",
       "[rank0]: Evaluating:  45%|####5     | 450/1000\n"
       "[rank0]:[W1122 10:30:00.000000000 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been "
       "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
       "destroy_process_group to ensure that any pending NCCL operations have finished in this process.\n",
       ""},
      {"a sub-group: rank 0 may not be a member",
       "[rank2]:[E1122 10:15:41.100000000 ProcessGroupNCCL.cpp:1709] [PG ID 2 PG GUID 2 Rank 2] Timeout at NCCL work: "
       "2, last enqueued NCCL work: 2, last completed NCCL work: 1.\n",
       ""},
      {"a rank failed on its own", "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
       ""},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::vector<std::string> paths = {dir.Write("job.log", timeouts + c.extra)};
    Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
    std::string got;
    for (const auto& f : d.findings) {
      if (f.rule_id == "CONSENSUS-RANK0-ALONE") got = CompactRanks(f.ranks);
    }
    EXPECT_EQ(got, c.want) << c.name;
  }
}

// A rank named by elimination whose start a shared line printed (Lightning's
// "GLOBAL_RANK: r") began and stopped: the finding says so, with that line
// first; a rank no line names left no trace.
TEST(Consensus, ARankThatPrintedItsStartDidNotLeaveNoTrace) {
  const std::string timeouts =
      "[rank1]:[E1122 10:15:41.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out.\n"
      "[rank2]:[E1122 10:15:42.000000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out.\n";
  struct Case {
    const char* name;
    std::string head;
    const char* rule;
    const char* says;
    int64_t first_line;  // the finding's first evidence line
  } cases[] = {
      {"rank 3 started", "Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/4\n", "CONSENSUS-NEVER-JOINED",
       "rank(s) 0,3 left no trace in any input but the start of rank(s) 3", 1},
      {"ranks 0 and 3 started",
       "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\nInitializing distributed: GLOBAL_RANK: 3, MEMBER: 4/4\n",
       "CONSENSUS-NEVER-JOINED", "rank(s) 0,3 printed their start and nothing after it", 1},
      {"no start printed", "All distributed processes registered. Starting with 4 processes\n",
       "CONSENSUS-NEVER-JOINED", "rank(s) 0,3 left no trace in any input:", 2},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::vector<std::string> paths = {dir.Write("job.log", c.head + timeouts)};
    Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
    const Finding* got = nullptr;
    for (const auto& f : d.findings) {
      if (f.rule_id == c.rule) got = &f;
    }
    ASSERT_NE(got, nullptr) << c.name;
    EXPECT_NE(got->explanation.find(c.says), std::string::npos) << c.name << ": " << got->explanation;
    ASSERT_FALSE(got->evidence.empty()) << c.name;
    EXPECT_EQ(got->evidence[0].line, c.first_line) << c.name;
  }
}

// Start lines of a stated world (Lightning's "GLOBAL_RANK: r, MEMBER: m/n")
// where the logs stop: the ranks that never printed one never started, or a
// rank's start printed twice in one log means two processes claim it. A run
// that goes on after its starts, a whole world started, a restart that prints
// every start again, and two attempts in two files name nobody started twice.
TEST(Consensus, RanksThatNeverStartedAndRanksStartedTwice) {
  auto start = [](int r, int n) {
    return fmt::format("Initializing distributed: GLOBAL_RANK: {}, MEMBER: {}/{}\n", r, r + 1, n);
  };
  const std::string registered = "All distributed processes registered. Starting with 4 processes\nEpoch 0:  10%\n";
  struct Case {
    const char* name;
    std::vector<std::string> files;
    const char* never_started;  // ranks CONSENSUS-NEVER-STARTED names ("" none)
    const char* twice;          // ranks RANK-STARTED-TWICE names ("" none)
    const char* primary;
  } cases[] = {
      {"half the world started", {start(0, 4) + start(1, 4)}, "2-3", "", "CONSENSUS-NEVER-STARTED"},
      {"the run went on", {start(0, 4) + start(1, 4) + registered}, "", "", ""},
      {"the whole world started", {start(0, 4) + start(2, 4) + start(1, 4) + start(3, 4)}, "", "", ""},
      {"two processes claim ranks 0-1",
       {start(0, 4) + start(1, 4) + start(1, 4) + start(0, 4)},
       "2-3",
       "0-1",
       "RANK-STARTED-TWICE"},
      {"a restart starts the whole world again", {start(0, 2) + start(1, 2) + start(0, 2) + start(1, 2)}, "", "", ""},
      {"two attempts in two files", {start(0, 4) + start(1, 4), start(0, 4)}, "2-3", "", "CONSENSUS-NEVER-STARTED"},
      {"two attempts in one file",
       {start(0, 4) + start(1, 4) + "squeue: JOBID PARTITION NAME\nGPU available: True\n" + start(0, 4)},
       "2-3",
       "",
       "CONSENSUS-NEVER-STARTED"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::vector<std::string> paths;
    for (size_t i = 0; i < c.files.size(); ++i) paths.push_back(dir.Write(fmt::format("node{}.out", i), c.files[i]));
    Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
    std::map<std::string, std::string> got;
    for (const auto& f : d.findings) got[f.rule_id] = CompactRanks(f.ranks);
    EXPECT_EQ(got.count("CONSENSUS-NEVER-STARTED") ? got["CONSENSUS-NEVER-STARTED"] : "", c.never_started) << c.name;
    EXPECT_EQ(got.count("RANK-STARTED-TWICE") ? got["RANK-STARTED-TWICE"] : "", c.twice) << c.name;
    const std::string primary = d.primary >= 0 ? d.findings[d.primary].rule_id : "";
    if (*c.primary) {
      EXPECT_EQ(primary, c.primary) << c.name;
    }
  }
}

// Ranks that timed out in different collectives of one group did not all wait
// for a rank missing from the excerpt (no world size is printed): the one
// behind is the suspect (WATCHDOG-SEQ-SPLIT), not the absent rank 3.
TEST(Consensus, RanksWaitingInDifferentCollectivesNameNobodyByElimination) {
  auto timeout = [](int rank, int seq) {
    return fmt::format(
        "[rank{0}]:[E ProcessGroupNCCL.cpp:563] [Rank {0}] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum={1}, OpType=ALLREDUCE, NumelIn=2560, NumelOut=2560, Timeout(ms)=600000) ran for 600049 "
        "milliseconds before timing out.\n",
        rank, seq);
  };
  TempDir dir;
  std::vector<std::string> paths = {
      dir.Write("job.log", timeout(0, 959) + timeout(1, 963) + timeout(2, 963) + timeout(4, 963))};
  Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
  EXPECT_EQ(FindingByRule(d, "CONSENSUS-NEVER-JOINED"), nullptr);
  const Finding* split = FindingByRule(d, "WATCHDOG-SEQ-SPLIT");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(CompactRanks(split->ranks), "0");
  ASSERT_GE(d.primary, 0);
  EXPECT_EQ(d.findings[d.primary].rule_id, "WATCHDOG-SEQ-SPLIT");
}

// A watchdog line cut inside "NumelIn=1, N" does not show its size: unknown
// there, not different. Sizes shown on every rank are still compared.
TEST(Consensus, ASizeALineDoesNotShowIsNotADifference) {
  auto line = [](int rank, const std::string& work) {
    return fmt::format(
        "[rank{0}]:[E1122 10:15:4{0}.000000000 ProcessGroupNCCL.cpp:616] [Rank {0}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, {1}\n",
        rank, work);
  };
  const std::string full = "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.";
  struct Case {
    const char* name;
    std::string log;
    bool mismatch;
  } cases[] = {
      {"rank 2's line cut", line(1, full) + line(2, "NumelIn=1, N") + line(3, full), false},
      {"rank 2 passed more", line(1, full) + line(2, "NumelIn=8, NumelOut=8, Timeout(ms)=600000)") + line(3, full),
       true},
  };
  for (const Case& c : cases) {
    TempDir dir;
    std::vector<std::string> paths = {dir.Write("job.log", c.log)};
    Diagnosis d = Diagnose(*Analyze(Rules(), paths, ScanOptions()).state);
    const Finding* got = nullptr;
    for (const auto& f : d.findings) {
      if (f.rule_id == "CONSENSUS-CALL-MISMATCH") got = &f;
    }
    EXPECT_EQ(got != nullptr, c.mismatch) << c.name << ": " << (got ? got->explanation : "");
    if (got) {
      EXPECT_EQ(got->ranks, std::vector<int>{2}) << c.name;
    }
  }
}

TEST(Consensus, WindowedFactKeepsTheLatestKeys) {
  // A user fact with `window: 16`: of 300 keys set by one process, about the
  // newest 16..32 remain, the latest among them.
  TempDir dir;
  dir.Write("rules/w.yaml",
            "facts:\n"
            "  - {name: step_seen, merge: last, keyed: true, window: 16, description: d}\n"
            "rules:\n"
            "  - id: SITE-STEP\n"
            "    title: t\n"
            "    category: config\n"
            "    family: any\n"
            "    pattern: 'site step (?P<n>\\d+)'\n"
            "    facts: {\"step_seen[{n}]\": \"{n}\"}\n"
            "    examples:\n"
            "      match: [\"site step 3\"]\n"
            "      no_match: [\"site step x\"]\n");
  std::string err;
  auto rules = LoadRules({dir.path() + "/rules"}, &err);
  ASSERT_TRUE(rules) << err;
  std::string text;
  for (int i = 0; i < 300; ++i) text += fmt::format("n1:7:7 [0] NCCL INFO site step {}\n", i);
  std::string path = dir.Write("rank0.log", text);
  Analysis a = Analyze(*rules, {path}, ScanOptions());
  const int fact = rules->FindFact("step_seen");
  size_t keys = 0;
  bool newest = false;
  for (int s : a.state->LiveSubjects()) {
    keys += a.state->subjects()[s].keyed[fact].size();
    newest |= a.state->subjects()[s].keyed[fact].count("299") > 0;
  }
  EXPECT_GE(keys, 16u);
  EXPECT_LE(keys, 32u);
  EXPECT_TRUE(newest);
}

}  // namespace
}  // namespace ncclscan
