#include "engine/scan/scanner.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/reports/report.h"
#include "engine/run/analyze.h"
#include "engine/scan/hard_wrap.h"
#include "rules/rule_loader.h"
#include "tests/differential.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

const RuleSet& Rules() { return BuiltInRules(); }

// A small 2-host, 4-rank job with init lines and one IB error.
std::string RankLog(int rank) {
  std::string host = rank < 2 ? "node-a" : "node-b";
  std::string p = host + ":" + std::to_string(1000 + rank) + ":" + std::to_string(1000 + rank) + " [" +
                  std::to_string(rank % 2) + "] NCCL INFO ";
  std::string s;
  s += p + "Bootstrap : Using eth0:10.0.0." + std::to_string(rank < 2 ? 1 : 2) + "<0>\n";
  s += p + "NCCL version 2.21.5+cuda12.4\n";
  s += p + "Using network IB\n";
  s += p + "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId 1b000 commId 0xabc - Init START\n";
  for (int i = 0; i < 50; ++i) s += "step " + std::to_string(i) + " | loss 2.31 | lr 3e-4\n";
  s += p + "ncclCommInitRank comm 0x55d0c1a0e9f" + std::to_string(rank) + " rank " + std::to_string(rank) +
       " nranks 4 cudaDev " + std::to_string(rank % 2) + " nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE\n";
  return s;
}

std::string Json(const std::vector<std::string>& paths, ScanOptions opts) {
  Analysis a = Analyze(Rules(), paths, opts);
  return RenderJson(*a.state, a.diagnosis);
}

TEST(Scanner, LinesSplitAcrossChunksAreParsedOnce) {
  TempDir dir;
  std::string all;
  for (int r = 0; r < 4; ++r) all += RankLog(r);
  std::string path = dir.Write("job.log", all);
  ScanOptions big;
  big.jobs = 1;
  Analysis ref = Analyze(Rules(), {path}, big);
  uint64_t lines = 4 * 55;  // 55 lines per rank log
  EXPECT_EQ(ref.state->counters().lines, lines);
  for (size_t chunk : {1, 7, 13, 64, 100, 4096}) {
    ScanOptions small;
    small.jobs = 2;
    small.chunk_size = chunk;
    Analysis a = Analyze(Rules(), {path}, small);
    EXPECT_EQ(a.state->counters().lines, lines) << "chunk " << chunk;
    EXPECT_EQ(a.state->counters().matched_lines, ref.state->counters().matched_lines) << "chunk " << chunk;
    EXPECT_EQ(RenderJson(*a.state, a.diagnosis), RenderJson(*ref.state, ref.diagnosis)) << "chunk " << chunk;
  }
}

TEST(Scanner, SummaryNamesRanksHostsCommunicators) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) paths.push_back(dir.Write("rank" + std::to_string(r) + ".log", RankLog(r)));
  Analysis a = Analyze(Rules(), paths, ScanOptions());
  std::vector<int> ranks;
  for (int s : a.state->LiveSubjects()) ranks.push_back(a.state->subjects()[s].rank);
  EXPECT_EQ(CompactRanks(ranks), "0-3");
  EXPECT_EQ(a.state->Hosts(), (std::set<std::string>{"node-a", "node-b"}));
  ASSERT_EQ(a.state->comms().size(), 1u);
  EXPECT_EQ(a.state->comms().begin()->second.nranks, 4);
  EXPECT_EQ(a.state->comms().begin()->second.ranks_completed.size(), 4u);
}

TEST(Scanner, OutputIndependentOfThreadsAndFileOrder) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int r = 0; r < 4; ++r) paths.push_back(dir.Write("r" + std::to_string(r) + "/log.txt", RankLog(r)));
  ScanOptions j1, j4;
  j1.jobs = 1;
  j4.jobs = 4;
  j4.chunk_size = 333;
  std::string a = Json(paths, j1);
  std::vector<std::string> reversed(paths.rbegin(), paths.rend());
  EXPECT_EQ(a, Json(reversed, j4));
  EXPECT_EQ(a, Json({dir.path()}, j4));
}

// Regression: a GPU a kernel line named (no rank owns its bus id) was ordered
// among the subjects by its label "GPU …" against the file paths of the
// others, so the JSON changed with how the paths were spelled (relative or
// absolute). The order is the same whatever the spelling.
TEST(Scanner, KernelSubjectsOrderedTheSameWhateverThePathSpelling) {
  TempDir dir;
  dir.Write("node-a.dmesg.log",
            "[ 9912.200001] NVRM: Xid (PCI:0000:3b:00): 79, pid=77, name=python, GPU has fallen off the bus.\n"
            "[ 9912.300001] pcieport 0000:3a:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0\n");
  dir.Write("notes/tool.log", "Unable to determine the device handle for GPU0000:5e:00.0: Unknown Error\n");
  ScanOptions opts;
  opts.jobs = 1;
  auto labels = [](const std::string& root, ScanOptions o) {
    Analysis a = Analyze(Rules(), {root}, o);
    std::vector<std::string> out;
    for (int s : a.state->LiveSubjects()) {
      std::string l = a.state->subjects()[s].label;
      const size_t slash = l.rfind('/');
      out.push_back(slash == std::string::npos ? l : l.substr(slash + 1));
    }
    return out;
  };
  // "/tmp/ncclscan_test_…" sorts before "GPU …", "ncclscan_test_…" (from /tmp) after it.
  const std::filesystem::path abs = std::filesystem::absolute(dir.path());
  const std::filesystem::path cwd = std::filesystem::current_path();
  const std::vector<std::string> a = labels(abs.string(), opts);
  std::filesystem::current_path(abs.parent_path());
  const std::vector<std::string> b = labels(abs.filename().string(), opts);
  std::filesystem::current_path(cwd);
  EXPECT_EQ(a, b);
  // The GPU no rank owns comes before the files' own subjects.
  const auto gpu = std::find(a.begin(), a.end(), "GPU 0000:5e:00.0");
  const auto file = std::find(a.begin(), a.end(), "node-a.dmesg.log");
  EXPECT_TRUE(gpu != a.end() && file != a.end() && gpu < file) << ::testing::PrintToString(a);
}

std::string StateDump(const JobState& st);  // below

// Scans `path` at -j2 in chunks of each size in `chunks` and expects exactly the
// state and JSON of `ref` (the whole file in one chunk).
void ExpectEveryChunkSizeAgrees(const std::string& path, const Analysis& ref, const std::vector<size_t>& chunks) {
  const std::string want = RenderJson(*ref.state, ref.diagnosis);
  for (size_t chunk : chunks) {
    ScanOptions small;
    small.jobs = 2;
    small.chunk_size = chunk;
    Analysis a = Analyze(Rules(), {path}, small);
    EXPECT_EQ(StateDump(*a.state), StateDump(*ref.state)) << "chunk " << chunk;
    EXPECT_EQ(RenderJson(*a.state, a.diagnosis), want) << "chunk " << chunk;
  }
}

// Regression: the parser kept a "Using [0]…" interface list open across lines,
// and that context travelled with pooled chunks into the next file: two files
// that are each OK gave a WARN together, citing a line that exists in neither,
// and the result changed with -j.
TEST(Scanner, AFileDoesNotContinueAnotherFilesInterfaceList) {
  TempDir dir;
  const std::string a = dir.Write(
      "a/x.log",
      "node-a:11:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0xabc - Init COMPLETE\n"
      "node-a:11:11 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n");
  const std::string b =
      dir.Write("b/y.log",
                "[1]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>\n"
                "node-b:12:12 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 2000 commId 0xabc - "
                "Init COMPLETE\n");
  ScanOptions j1;
  j1.jobs = 1;
  Analysis both = Analyze(Rules(), {a, b}, j1);
  // Init completed and nothing after: no problem, no evidence of the run's end.
  EXPECT_EQ(std::string(StatusName(both.diagnosis.status)), "incomplete");
  for (const Finding& f : both.diagnosis.findings) EXPECT_NE(f.rule_id, "NCCL-SOCKET-UNROUTABLE-IF");
  const std::string want = RenderJson(*both.state, both.diagnosis);
  for (int jobs : {2, 4, 8}) {
    for (int run = 0; run < 5; ++run) {
      ScanOptions o;
      o.jobs = jobs;
      EXPECT_EQ(Json({a, b}, o), want) << "-j" << jobs;
    }
  }
  EXPECT_EQ(DifferentialScan(Rules(), {a, b}, 64, dir.path()), "");
}

// `remember:` (an ibstat block's CA and port) holds for the lines below it in
// its own file, across any chunk boundary, and never for another file: a
// "State: Down" in b.ibstat.log, which has no CA line, must not borrow a.'s.
TEST(Scanner, RememberedBlockHeadsStayInTheirFile) {
  TempDir dir;
  std::string ibstat = "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n";
  for (int i = 0; i < 40; ++i) ibstat += "\t\tCapability mask: 0x2651e848\n";
  ibstat += "CA 'mlx5_3'\n\tCA type: MT4123\n\tPort 2:\n";
  for (int i = 0; i < 40; ++i) ibstat += "\t\tCapability mask: 0x2651e848\n";
  ibstat += "\t\tState: Down\n";
  const std::string a = dir.Write("node-a.ibstat.log", ibstat);
  const std::string b = dir.Write("node-b.ibstat.log", "\t\tState: Down\n");
  ScanOptions j1;
  j1.jobs = 1;
  Analysis both = Analyze(Rules(), {a, b}, j1);
  std::vector<std::string> said;
  for (const Finding& f : both.diagnosis.findings) {
    if (f.rule_id == "IBSTAT-PORT-DOWN") said.push_back(f.explanation);
  }
  ASSERT_EQ(said.size(), 2u);
  EXPECT_NE(said[0].find("port 2 of mlx5_3") == std::string::npos,
            said[1].find("port 2 of mlx5_3") == std::string::npos);
  EXPECT_NE(said[0].find("shows a port not active") == std::string::npos,
            said[1].find("shows a port not active") == std::string::npos);
  EXPECT_EQ(DifferentialScan(Rules(), {a, b}, 64, dir.path()), "");
  EXPECT_EQ(DifferentialScan(Rules(), {b, a}, 97, dir.path()), "");
}

// The same list inside one file does continue across any chunk boundary: the
// serial stage parses a chunk's first lines again in the context the previous
// chunk of the file left.
TEST(Scanner, InterfaceListContinuesAcrossChunkBoundaries) {
  TempDir dir;
  const std::string path =
      dir.Write("x.log",
                "node-a:11:11 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n"
                "node-a:11:11 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                "[1]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>\n"
                "[2]docker0:172.17.0.1<0>\n"
                "node-a:11:11 [0] NCCL INFO Using network Socket\n"
                "[E1122 10:15:30.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                "600012 milliseconds before timing out.\n");
  ScanOptions whole;
  whole.jobs = 1;
  Analysis ref = Analyze(Rules(), {path}, whole);
  bool unroutable = false;
  for (const Finding& f : ref.diagnosis.findings) unroutable |= f.rule_id == "NCCL-SOCKET-UNROUTABLE-IF";
  EXPECT_TRUE(unroutable) << "the list's veth item is read with the line it continues";
  std::vector<size_t> chunks;
  for (size_t chunk = 1; chunk < 420; chunk += 7) chunks.push_back(chunk);
  ExpectEveryChunkSizeAgrees(path, ref, chunks);
}

// Regression (found by determinism_fuzz): a WARN ending one file and a
// return-code chain starting the next were joined by a scan, not by a merge of
// one partial per file. A chain closes a WARN of its own file only.
TEST(Scanner, AReturnCodeChainDoesNotCloseAnotherFilesWarn) {
  TempDir dir;
  const std::string a =
      dir.Write("a.log",
                "ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory "
                "segment /dev/shm/nccl-KWfVyt (size 5967872)\n");
  const std::string b = dir.Write("b.log",
                                  "ubuntu:9621:9688 [3] NCCL INFO transport/shm.cc:114 -> 2\n"
                                  "ubuntu:9621:9688 [3] NCCL INFO init.cc:1358 -> 2\n");
  EXPECT_EQ(DifferentialScan(Rules(), {a, b}, 1 << 17, dir.path()), "");
}

// A communicator pointer named by an Init line in one file and used in another
// (a rotated or pasted-in-parts log) is folded into its commId at the end,
// by the scan and by a merge of one partial per file alike.
TEST(Scanner, ACommunicatorPointerNamedInAnotherFileIsResolvedAtTheEnd) {
  TempDir dir;
  const std::string a =
      dir.Write("a.log",
                "gpu-1:5833:6089 [1] NCCL INFO ncclCommInitRank comm 0x5531a8983cd0 rank 5 nranks 8 cudaDev 1 "
                "nvmlDev 1 busId 2a000 commId 0x1bd2e90488c35ff3 - Init START\n");
  const std::string b =
      dir.Write("b.log",
                "gpu-1:5833:6089 [1] NCCL INFO comm 0x5531a8983cd0 rank 5 nRanks 8 nNodes 2 localRanks 4 "
                "localRank 1 MNNVL 0\n");
  EXPECT_EQ(DifferentialScan(Rules(), {a, b}, 1 << 17, dir.path()), "");
  ScanOptions opts;
  Analysis an = Analyze(Rules(), {b, a}, opts);  // the use before the Init line
  const std::string json = RenderJson(*an.state, an.diagnosis);
  EXPECT_EQ(json.find("ptr:"), std::string::npos) << json;
  EXPECT_NE(json.find("\"id\":\"0x1bd2e90488c35ff3\",\"nranks\":8"), std::string::npos) << json;
}

// The same, wrapped by the terminal after a blank: the glued line and its
// continuation are joined, so rank 2 timed out (it is not an unknown error).
TEST(Scanner, AGluedLineWrappedMidSentenceIsJoined) {
  TempDir dir;
  const std::string f = dir.Write(
      "tee.log",
      "[default0]:Grouping texts in chunks of 2049:   8%| 726000/9672101 [02:32<30:38, 4866.01 "
      "examples/s][default2]:[E "
      "ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught \n"
      "collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
      "ran for 600888 milliseconds before timing out.                   \n");
  ScanOptions opts;
  Analysis a = Analyze(Rules(), {f}, opts);
  // (The primary is rank 0's, silent while rank 2 waits: CONSENSUS-RANK0-ALONE.)
  const Finding* timeout = nullptr;
  for (const Finding& x : a.diagnosis.findings) {
    if (x.rule_id == "TORCH-WATCHDOG-TIMEOUT") timeout = &x;
  }
  ASSERT_NE(timeout, nullptr);
  EXPECT_EQ(CompactRanks(timeout->ranks), "2");
}

// The determinism property on real lines: runs of lines of the real corpus
// cases, shuffled between 2-5 files, at random chunk sizes, give the same JSON
// at -j1, at -j4 and as one partial per file merged in reverse.
TEST(Scanner, RandomSplitsOfRealLinesAreDeterministic) {
  namespace fs = std::filesystem;
  std::vector<std::vector<std::string>> logs;
  for (const auto& e : fs::recursive_directory_iterator(std::string(NCCLSCAN_SOURCE_DIR) + "/corpus")) {
    const std::string name = e.path().filename().string();
    const std::string where = e.path().string();
    if (!e.is_regular_file() || where.find("/real-") == std::string::npos || name.size() < 4 ||
        name.substr(name.size() - 4) != ".log") {
      continue;
    }
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    if (!lines.empty()) logs.push_back(std::move(lines));
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_GT(logs.size(), 20u);
  // Lines that carry context to the next ones, often enough to end a file: an
  // interface list re-wrapped one item per line, PyTorch continuation lines.
  const std::vector<std::string> context = {
      "node-a:11:11 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
      "[1]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>", "[2]docker0:172.17.0.1<0>",
      "[rank1]:[E1122 10:15:31.000000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
      "milliseconds before timing out.",
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled cuda error"};
  for (int i = 0; i < 10; ++i) logs.push_back(context);
  std::mt19937 rng(20261126);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (int round = 0; round < 24; ++round) {
    TempDir dir;
    const size_t files = 2 + pick(4);
    std::vector<std::string> texts(files);
    for (int run = 0, runs = 2 + static_cast<int>(pick(6)); run < runs; ++run) {
      const std::vector<std::string>& log = logs[pick(logs.size())];
      const size_t from = pick(log.size()), len = 1 + pick(40);
      std::string& t = texts[pick(files)];
      for (size_t i = from; i < std::min(log.size(), from + len); ++i) t += log[i] + "\n";
    }
    // Often a file ends inside an interface list and the next starts with items.
    for (size_t i = 0; i + 1 < files; ++i) {
      if (pick(2)) continue;
      texts[i] += context[0] + "\n";
      texts[i + 1] = context[1] + "\n" + context[2] + "\n" + texts[i + 1];
    }
    std::vector<std::string> paths;
    for (size_t i = 0; i < files; ++i) paths.push_back(dir.Write("f" + std::to_string(i) + ".log", texts[i]));
    const size_t chunk = 1 + pick(3000);
    EXPECT_EQ(DifferentialScan(Rules(), paths, chunk, dir.path()), "") << "round " << round << " chunk " << chunk;
  }
}

// Everything Apply() leaves in a JobState that folding could change: every
// fact entry with its count, evidence and order key, rank votes, counters.
std::string StateDump(const JobState& st) {
  std::string out = "matched " + std::to_string(st.counters().matched_lines) + "\n";
  auto fact = [&](const std::string& name, const FactValue& v) {
    out += "  " + name + " = " + v.value + " x" + std::to_string(v.count) + " @" + std::to_string(v.evidence.file) +
           ":" + std::to_string(v.evidence.line) + " " + v.evidence.text + " seen " + std::to_string(v.seen.line) +
           "\n";
  };
  for (const Subject& s : st.subjects()) {
    out += "subject " + s.host + ":" + std::to_string(s.pid) + " rank " + std::to_string(s.rank) + "\n";
    for (const auto& [r, n] : s.rank_hints) out += "  hint " + std::to_string(r) + " x" + std::to_string(n) + "\n";
    for (size_t f = 0; f < s.facts.size(); ++f) {
      const std::string& name = st.rules().facts()[f].name.value;
      if (const FactValue* v = s.Get(static_cast<int>(f))) fact(name, *v);
      for (const auto& [k, v] : s.keyed[f]) fact(name + "[" + k + "]", v);
    }
  }
  return out;
}

// Regression: a PyTorch continuation line (no header) inherits the rank of the
// c10 line before it; when a chunk boundary fell between them it lost it, so
// results depended on the chunk size.
TEST(Scanner, ContinuationLinesKeepTheirRankAcrossChunkBoundaries) {
  TempDir dir;
  std::string s;
  for (int r = 0; r < 3; ++r) {
    s += "[E1122 10:15:3" + std::to_string(r) + ".000000000 ProcessGroupNCCL.cpp:616] [Rank " + std::to_string(r) +
         "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
         "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n";
    s += "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled cuda error, NCCL "
         "version 2.18.1\n";
    s += "step " + std::to_string(r) + " | loss 2.31\n";
  }
  std::string path = dir.Write("job.log", s);
  ScanOptions whole;
  Analysis ref = Analyze(Rules(), {path}, whole);
  ExpectEveryChunkSizeAgrees(path, ref, {1, 20, 97, 250});
}

// Regression: the detail PyTorch appends to an NCCL error ("ncclRemoteError: …",
// "Last error:", the peer's closed connection) has no prefix of its own and was
// nobody's: the closed peer of ranks 1 and 6 counted as one report of the file,
// and PEER-CLOSED-STORM did not name the peer's host. It is the rank's whose
// error it continues, at every chunk size.
TEST(Scanner, NcclErrorDetailLinesTakeTheRankOfTheErrorTheyContinue) {
  TempDir dir;
  std::string s;
  for (int r : {1, 6}) {
    const std::string R = std::to_string(r);
    s += "[rank" + R + "]:[E1122 12:11:33.117677740 ProcessGroupNCCL.cpp:1601] [PG ID 0 PG GUID 0(default_pg) Rank " +
         R +
         "] Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
         "was a network error, NCCL version 2.21.5\n"
         "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
         "Last error:\n"
         "socketProgress: Connection closed by remote peer gpu-node-7.cluster<5159" +
         R + ">\n";
    s += "loss 0.5 step " + R + "\n";
  }
  const std::string path = dir.Write("job.log", s);
  ScanOptions whole;
  Analysis ref = Analyze(Rules(), {path}, whole);
  const int closed = ref.state->rules().fact(Fact::kClosedPeer);
  std::vector<int> reporters;
  for (int sub : ref.state->LiveSubjects()) {
    if (ref.state->subjects()[sub].Has(closed)) reporters.push_back(ref.state->subjects()[sub].rank);
  }
  EXPECT_EQ(reporters, (std::vector<int>{1, 6}));
  ASSERT_GE(ref.diagnosis.primary, 0);
  const Finding& p = ref.diagnosis.findings[ref.diagnosis.primary];
  EXPECT_EQ(p.rule_id, "PEER-CLOSED-STORM");
  EXPECT_EQ(p.hosts, (std::vector<std::string>{"gpu-node-7"}));
  // "loss …" after the detail is the application's: nobody's rank.
  ExpectEveryChunkSizeAgrees(path, ref, {1, 40, 97, 150, 250});
}

// The file scanned with folding and line by line, at each chunk size: the
// same state and the same JSON.
void ExpectFoldingChangesNothing(const std::string& path, std::initializer_list<size_t> chunks) {
  for (size_t chunk : chunks) {
    ScanOptions folded, plain;
    folded.chunk_size = plain.chunk_size = chunk;
    plain.fold = false;
    Analysis a = Analyze(Rules(), {path}, folded);
    Analysis b = Analyze(Rules(), {path}, plain);
    EXPECT_EQ(StateDump(*a.state), StateDump(*b.state)) << "chunk " << chunk;
    EXPECT_EQ(RenderJson(*a.state, a.diagnosis), RenderJson(*b.state, b.diagnosis)) << "chunk " << chunk;
  }
}

// Folding runs of COLL matches in the parallel stage must leave exactly the
// state of applying every line: two processes interleaved in one file,
// alternating communicators, opCounts that go down and repeat, rank prefixes
// that change mid-run, a comm pointer named by an Init line halfway, a
// last-merge fact between runs, and chunk boundaries everywhere.
TEST(Scanner, FoldedRunsLeaveTheSameStateAsLineByLine) {
  TempDir dir;
  std::string s;
  const char* comms[] = {"0x55aa", "0x55bb"};
  int opcounts[] = {1, 2, 3, 3, 2, 7, 0x1f, 0x1e, 0x100, 5};
  for (int i = 0; i < 400; ++i) {
    int proc = (i / 7) % 3 == 2 ? 2 : 1;
    std::string pre = (i / 50) % 2 ? "[rank" + std::to_string(proc) + "]:" : "";
    std::string host = "node:" + std::to_string(100 + proc) + ":" + std::to_string(100 + proc) + " [0] NCCL INFO ";
    char op[16];
    std::snprintf(op, sizeof op, "%x", opcounts[i % 10] + (i / 10));
    s += pre + host + "AllReduce: opCount " + op + " sendbuff 0x7f count 8 datatype 7 op 0 root 0 comm " +
         comms[(i / 3) % 2] + " [nranks=2] stream 0x1\n";
    if (i == 200) {
      s += host +
           "ncclCommInitRank comm 0x55aa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xfeed - "
           "Init COMPLETE\n";
    }
    if (i % 37 == 0) s += host + "Using network IB\n";
    if (i % 41 == 0) s += "step " + std::to_string(i) + " | loss 2.31\n";
  }
  // One process driving two GPUs: two comm pointers with one commId, the same
  // opCounts on both (ties between the folded entries of one translated key).
  const char* p0 = "gpu:10:10 [0] NCCL INFO ";
  const char* p1 = "gpu:10:10 [1] NCCL INFO ";
  for (const char* ptr : {"0xa0", "0xb0"}) {
    s += std::string(ptr[2] == 'a' ? p0 : p1) + "ncclCommInitRank comm " + ptr + " rank " +
         (ptr[2] == 'a' ? "0" : "1") + " nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0xc0 - Init COMPLETE\n";
  }
  for (int i = 0; i < 6; ++i) {
    for (int gpu : {i % 2, 1 - i % 2}) {
      s += std::string(gpu ? p1 : p0) + "AllReduce: opCount " + std::to_string(i) +
           " sendbuff 0x7f count 8 datatype 7 op 0 root 0 comm " + (gpu ? "0xb0" : "0xa0") + " [nranks=2] stream 0x1\n";
    }
  }
  std::string path = dir.Write("rank1.log", s);
  ExpectFoldingChangesNothing(path, {size_t{1} << 20, size_t{97}, size_t{1000}});
}

// One srun -l file interleaves every rank's lines (here with srun's labels,
// then without, 140 processes on 18 hosts): a run stays open per process
// while others' lines come between. Each process's lines must still apply in
// their order: its own Init line closes its run (the comm pointer it names
// translates the COLL keys after it, not before), a line of no process closes
// every run, and more processes than open runs close the oldest.
TEST(Scanner, InterleavedProcessesFoldLikeLineByLine) {
  TempDir dir;
  std::string s;
  const int kProcs = 140;  // more than the folder keeps open at once
  for (int i = 0; i < 3000; ++i) {
    const int proc = (i * 7919) % (i < 1500 ? 6 : kProcs);
    const std::string label = i < 1500 ? std::to_string(proc) + ": " : "";  // then only the pid tells them apart
    const std::string host = "gpu-node-" + std::to_string(proc / 8) + ":" + std::to_string(1000 + proc) + ":" +
                             std::to_string(1000 + proc) + " [" + std::to_string(proc % 8) + "] NCCL INFO ";
    char op[16];
    std::snprintf(op, sizeof op, "%x", (i / 6) % 50 + (i % 4 == 3 ? 0 : 1));
    s += label + host + "AllReduce: opCount " + op + " sendbuff 0x7f count " + std::to_string(8 << (i % 3)) +
         " datatype 7 op 0 root 0 comm 0x55" + std::to_string(proc % 4) + " [nranks=" + std::to_string(kProcs) +
         "] stream 0x1\n";
    if (i % 500 == 250) {
      s += label + host + "ncclCommInitRank comm 0x55" + std::to_string(proc % 4) + " rank " + std::to_string(proc) +
           " nranks " + std::to_string(kProcs) + " cudaDev 0 nvmlDev 0 busId 1b000 commId 0xfeed - Init COMPLETE\n";
    }
    if (i % 97 == 0) s += label + "step " + std::to_string(i) + " | loss 2.31\n";
    if (i % 131 == 0) s += label + host + "Using network IB\n";
  }
  std::string path = dir.Write("job.log", s);
  ExpectFoldingChangesNothing(path, {size_t{1} << 20, size_t{97}, size_t{4096}});
}

// A wide job: more processes than the folder has slots, so processes share a
// slot (the later one closes the other's run) and every run is open at once
// (one closes round the clock). Each process's lines still apply in order.
TEST(Scanner, WideJobsFoldLikeLineByLine) {
  TempDir dir;
  std::string s;
  const int kProcs = 5000;
  for (int i = 0; i < 4 * kProcs; ++i) {
    const int proc = (i * 7919) % kProcs;
    const std::string host = "n" + std::to_string(proc / 8) + ":" + std::to_string(1000 + proc) + ":" +
                             std::to_string(1000 + proc) + " [" + std::to_string(proc % 8) + "] NCCL INFO ";
    s += host + "AllReduce: opCount " + std::to_string(i / kProcs + (i % 5 == 0)) + " sendbuff 0x7f count 8" +
         " datatype 7 op 0 root 0 comm 0x55" + std::to_string(proc % 2) + " [nranks=" + std::to_string(kProcs) +
         "] stream 0x1\n";
    if (i % 11 == 0)
      s += host + "Broadcast: opCount 0 sendbuff 0x7f count 8 datatype 7 op 0 root 0 comm 0x550 [nranks=" +
           std::to_string(kProcs) + "] stream 0x1\n";
  }
  std::string path = dir.Write("job.log", s);
  ExpectFoldingChangesNothing(path, {size_t{1} << 20, size_t{4099}});
}

// A lagging rank's finding (COLL-OPCOUNT-LAGGING) cites one line of the
// others for contrast and caps its evidence: both were picked by subject
// index, which the chunk size reorders (processes met in a chunk are noted
// before its Init lines create rank subjects), so the report changed with
// the chunk size. Now by input order. Random interleavings of 6 processes.
TEST(Scanner, ALaggingRanksEvidenceDoesNotDependOnTheChunkSize) {
  TempDir dir;
  for (unsigned seed : {1u, 2u}) {
    std::mt19937 g(seed);
    const int procs = 1 + static_cast<int>(g() % 40);
    const bool labels = g() % 2;
    std::string s;
    const int n = 500 + static_cast<int>(g() % 3000);
    for (int i = 0; i < n; ++i) {
      const int p = static_cast<int>(g() % procs);
      const std::string lab = labels ? std::to_string(p) + ": " : "";
      const std::string host = "node" + std::to_string(p % 3) + ":" + std::to_string(100 + p) + ":" +
                               std::to_string(200 + p) + " [" + std::to_string(p % 8) + "] NCCL INFO ";
      const int k = static_cast<int>(g() % 100);
      char op[16];
      std::snprintf(op, sizeof op, "%x", static_cast<int>(i / 7 + g() % 3));
      const std::string nranks = std::to_string(procs);
      if (k < 75) {
        s += lab + host + "AllReduce: opCount " + op + " sendbuff 0x7f count " + std::to_string(8 << (g() % 4)) +
             " datatype 7 op 0 root 0 comm 0x55" + std::to_string(g() % 3) + " [nranks=" + nranks + "] stream 0x1\n";
      } else if (k < 80) {
        s += lab + host + "ncclCommInitRank comm 0x55" + std::to_string(g() % 3) + " rank " + std::to_string(p) +
             " nranks " + nranks + " cudaDev 0 nvmlDev 0 busId 1b000 commId 0xfeed - Init COMPLETE\n";
      } else if (k < 90) {
        s += lab + host + "Using network IB\n";
      } else {
        s += lab + "[rank" + std::to_string(p) + "]:[E ProcessGroupNCCL.cpp:1] [Rank " + std::to_string(p) +
             "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(i) +
             ", OpType=ALLREDUCE, Timeout(ms)=1000) ran for 1001 milliseconds before timing out.\n";
      }
    }
    const std::string path = dir.Write("job" + std::to_string(seed) + ".log", s);
    std::string want;
    for (size_t chunk : {size_t{1} << 20, size_t{97}, size_t{333}, size_t{4096}}) {
      ScanOptions o;
      o.chunk_size = chunk;
      Analysis a = Analyze(Rules(), {path}, o);
      const std::string got = RenderJson(*a.state, a.diagnosis);
      if (want.empty()) want = got;
      EXPECT_EQ(got, want) << "seed " << seed << " chunk " << chunk;
    }
  }
}

std::string Gzip(const std::string& data) {
  std::string out(compressBound(data.size()) + 64, '\0');
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = data.size();
  zs.next_out = reinterpret_cast<Bytef*>(&out[0]);
  zs.avail_out = out.size();
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(Scanner, ReadsGzipAndZstdTransparently) {
  TempDir dir;
  std::string plain = RankLog(0) + RankLog(1);
  std::string p0 = dir.Write("plain/a.log", plain);
  std::string p1 = dir.Write("gz/a.log.gz", Gzip(plain));
  std::string z(ZSTD_compressBound(plain.size()), '\0');
  z.resize(ZSTD_compress(&z[0], z.size(), plain.data(), plain.size(), 3));
  std::string p2 = dir.Write("zst/a.log.zst", z);
  Analysis a = Analyze(Rules(), {p0}, ScanOptions());
  Analysis b = Analyze(Rules(), {p1}, ScanOptions());
  Analysis c = Analyze(Rules(), {p2}, ScanOptions());
  EXPECT_TRUE(b.errors.empty());
  EXPECT_TRUE(c.errors.empty());
  EXPECT_EQ(b.state->counters().lines, a.state->counters().lines);
  EXPECT_EQ(c.state->counters().lines, a.state->counters().lines);
  EXPECT_EQ(b.state->counters().matched_lines, a.state->counters().matched_lines);
  EXPECT_EQ(c.state->counters().matched_lines, a.state->counters().matched_lines);
}

TEST(Scanner, TruncatedGzipIsReportedAndOtherFilesStillScanned) {
  TempDir dir;
  std::string gz = Gzip(RankLog(0));
  std::string bad = dir.Write("a_bad.log.gz", gz.substr(0, gz.size() / 2));
  std::string good = dir.Write("b_good.log", RankLog(1));
  Analysis a = Analyze(Rules(), {bad, good}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_NE(a.errors[0].find("truncated gzip"), std::string::npos) << a.errors[0];
  EXPECT_NE(a.errors[0].find("a_bad.log.gz"), std::string::npos);
  EXPECT_GE(a.state->counters().lines, 55u);
}

// Regression: a zstd stream corrupt after its first block was cut short with no
// error because the decoder's error was dropped once some bytes had been returned.
TEST(Scanner, CorruptZstdAfterGoodDataIsReported) {
  TempDir dir;
  std::string plain;
  for (int i = 0; i < 400; ++i) plain += RankLog(i % 4);
  std::string z(ZSTD_compressBound(plain.size()), '\0');
  z.resize(ZSTD_compress(&z[0], z.size(), plain.data(), plain.size(), 1));
  for (size_t k = z.size() / 2; k < z.size() / 2 + 64; ++k) z[k] = static_cast<char>(z[k] ^ 0x5a);
  std::string path = dir.Write("c.log.zst", z);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_NE(a.errors[0].find("corrupt zstd data"), std::string::npos) << a.errors[0];
  EXPECT_LT(a.state->counters().lines, 400u * 55);
}

// Regression: every conflicting line added another identical message.
TEST(Scanner, IdentityConflictsAreDistinct) {
  TempDir dir;
  std::string s;
  for (int i = 0; i < 50; ++i)
    s += "#  Rank  " + std::to_string(i % 2) + " Group  0 Pid  77 on  node-a device  0 [0x1b] GPU\n";
  std::string path = dir.Write("t.log", s);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(a.state->identity_conflicts().size(), 1u);
}

TEST(Scanner, OverlongLineIsCutAndCounted) {
  TempDir dir;
  std::string big(5000, 'x');
  std::string path = dir.Write("a.log", RankLog(0) + big + "\n" + RankLog(0));
  ScanOptions opts;
  opts.max_line = 1024;
  opts.chunk_size = 512;
  Analysis a = Analyze(Rules(), {path}, opts);
  EXPECT_EQ(a.state->counters().overlong_lines, 1u);
  EXPECT_EQ(a.state->counters().lines, 55u * 2 + 1);
}

TEST(Scanner, FinalLineWithoutNewlineIsKept) {
  TempDir dir;
  std::string path = dir.Write("a.log", "n1:1:1 [0] NCCL INFO Using network IB");
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(a.state->counters().lines, 1u);
  EXPECT_EQ(a.state->counters().matched_lines, 1u);
}

TEST(Scanner, MissingFileIsAnErrorOthersContinue) {
  TempDir dir;
  std::string good = dir.Write("good.log", RankLog(0));
  Analysis a = Analyze(Rules(), {dir.path() + "/missing.log", good}, ScanOptions());
  ASSERT_EQ(a.errors.size(), 1u);
  EXPECT_EQ(a.errors[0], "cannot read " + dir.path() + "/missing.log: No such file or directory");
  EXPECT_EQ(a.inputs, 1u);
}

TEST(Scanner, GluedWarnLinesAreEachMatchedAlone) {
  TempDir dir;
  std::string path = dir.Write(
      "g.log",
      "n1:7:9 [0] misc/socket.cc:1 NCCL WARN socketStartConnect: Connect to 10.1.2.4<39275> failed : Connection "
      "refused n1:7:9 [0] transport/frob.cc:2 NCCL WARN frob exploded n1:7:9 [0] NCCL INFO transport/frob.cc:3 -> 2\n");
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  std::map<std::string, const Finding*> by_rule;
  for (const auto& f : a.diagnosis.findings) by_rule[f.rule_id] = &f;
  ASSERT_TRUE(by_rule.count("NCCL-CONNECT-FAILED"));
  ASSERT_TRUE(by_rule.count("NCCL-WARN-UNRECOGNISED"));
  const Finding& unknown = *by_rule["NCCL-WARN-UNRECOGNISED"];
  // The catch-all's text ends where the next glued line begins, and the chain after it names the result.
  EXPECT_NE(unknown.explanation.find("\"frob exploded\""), std::string::npos) << unknown.explanation;
  EXPECT_EQ(unknown.result.rfind("ncclSystemError (2)", 0), 0u) << unknown.result;
}

TEST(Scanner, CrOnlyLineEndsSplitLinesAtEveryChunkSize) {
  TempDir dir;
  std::string log;
  for (int r = 0; r < 4; ++r) {
    std::string rl = RankLog(r);
    for (char& ch : rl) {
      if (ch == '\n') ch = '\r';
    }
    log += rl;
  }
  std::string path = dir.Write("cr.log", log);
  std::string lf_path = dir.Write("lf.log", RankLog(0) + RankLog(1) + RankLog(2) + RankLog(3));
  for (size_t chunk : {64u, 512u, 1u << 17}) {
    ScanOptions opts;
    opts.chunk_size = chunk;
    opts.max_line = 1024;
    Analysis cr = Analyze(Rules(), {path}, opts);
    Analysis lf = Analyze(Rules(), {lf_path}, opts);
    EXPECT_EQ(cr.state->counters().lines, 55u * 4) << chunk;
    EXPECT_EQ(cr.state->counters().overlong_lines, 0u) << chunk;
    EXPECT_EQ(cr.state->counters().matched_lines, lf.state->counters().matched_lines) << chunk;
    EXPECT_EQ(cr.diagnosis.headline, lf.diagnosis.headline) << chunk;
  }
}

// A CR-only log whose last line ends in CR LF (or that has any LF in its
// first chunk) is a CR-only log all the same: every line is its own, at every
// chunk size. (It used to be split at CRs only while more than 4 KiB were
// left, and the rest, one "line", kept only its text after the last CR: the
// errors at its end were lost.)
// The lines a scan of `path` counts at every chunk size in `chunks`, expected
// the same at each (the first size's count is returned).
uint64_t LinesAtEveryChunkSize(const std::string& path, const std::vector<size_t>& chunks) {
  uint64_t want = 0;
  for (size_t chunk : chunks) {
    ScanOptions opts;
    opts.chunk_size = chunk;
    Analysis a = Analyze(Rules(), {path}, opts);
    const uint64_t lines = a.state->counters().lines;
    if (want == 0) want = lines;
    EXPECT_EQ(lines, want) << "chunk " << chunk;
  }
  return want;
}

// A LF log with a progress bar redrawn thousands of times on one line (longer
// than 4 KiB: its CRs end lines) and short redrawn lines after it (their CRs do
// not): the same lines at every chunk size. A chunk cut inside the long line
// used to make every later CR of the file end a line, at small chunk sizes only
// (corpus alcf-nccl-tests-vae-20250115-155347-healthy).
TEST(Scanner, LongRedrawnLineSplitsTheSameAtEveryChunkSize) {
  TempDir dir;
  // LF lines first: a head of mostly lone CRs would make it a CR-only file.
  std::string log;
  for (int i = 0; i < 300; ++i)
    log += "h:1:1 [0] NCCL INFO Channel " + std::to_string(i) + " : 0[0] -> 1[1] via P2P/IPC\n";
  for (int i = 0; i < 400; ++i) log += "\rEpoch 1:  " + std::to_string(i) + "/400 [00:01<00:02, 3.2it/s]";
  log += "\n";
  for (int i = 0; i < 50; ++i) log += "step " + std::to_string(i) + "\rstep " + std::to_string(i) + " done\n";
  log += "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 1b000 - Destroy COMPLETE\n";
  const uint64_t want = LinesAtEveryChunkSize(dir.Write("bar.log", log), {size_t{1} << 17, 4096, 509});
  // The long line is 401 lines (one before its first CR), the short ones one each.
  EXPECT_EQ(want, 300u + 401u + 50u + 1u) << "the long line's redraws are lines; the short lines keep theirs";
}

// Long lines with redraws (longer than a chunk and than kCrSplitMin) that end
// in CR LF: wherever a read ends, even between a CR and its LF, every chunk
// size gives the same lines.
TEST(Scanner, LongLineEndingInCrLfSplitsTheSameAtEveryChunkSize) {
  TempDir dir;
  std::string log;
  for (int i = 0; i < 300; ++i) log += "h:1:1 [0] NCCL INFO Channel " + std::to_string(i) + " : 0[0] -> 1[1]\n";
  for (int k = 0; k < 8; ++k) {
    for (int i = 0; i < 2500; ++i) log += "\rstep " + std::to_string(i);
    log += "\r\n";
  }
  std::vector<size_t> chunks;
  for (size_t chunk = 500; chunk < 560; ++chunk) chunks.push_back(chunk);
  LinesAtEveryChunkSize(dir.Write("crlf.log", log), chunks);
}

TEST(Scanner, CrOnlyLogEndingInOneLfKeepsEveryLine) {
  TempDir dir;
  std::string lf, cr;
  for (int r = 0; r < 4; ++r) lf += RankLog(r);
  for (char ch : lf) cr += ch == '\n' ? '\r' : ch;
  cr.back() = '\r';
  std::string lf_path = dir.Write("lf.log", lf);
  std::string small_lf = RankLog(1), small_cr;
  for (char ch : small_lf) small_cr += ch == '\n' ? '\r' : ch;
  const std::pair<std::string, std::string> cases[] = {
      {dir.Write("cr_lf.log", cr + "\n"), lf_path},
      {dir.Write("lf_first.log", "h:1:1 [0] NCCL INFO first line\n" + cr), ""},
      {dir.Write("small_cr_lf.log", small_cr + "\n"), dir.Write("small_lf.log", small_lf)},
  };
  for (size_t chunk : {512u, 1u << 17}) {
    ScanOptions opts;
    opts.chunk_size = chunk;
    for (const auto& c : cases) {
      SCOPED_TRACE(c.first + " chunk " + std::to_string(chunk));
      Analysis got = Analyze(Rules(), {c.first}, opts);
      Analysis want = Analyze(Rules(), {c.second.empty() ? lf_path : c.second}, opts);
      uint64_t extra = c.second.empty() ? 1 : 0;  // the LF line before the CR-only ones
      EXPECT_EQ(got.state->counters().lines, want.state->counters().lines + extra);
      EXPECT_EQ(got.state->counters().matched_lines, want.state->counters().matched_lines);
      EXPECT_EQ(got.diagnosis.headline, want.diagnosis.headline);
    }
  }
}

// A zero-filled hole (what a file system leaves after a crash) is no text:
// however long it is, the line after it is read (its NULs are dropped as in
// any line). It used to make one overlong "line" with the next real line
// once it passed max_line, and that line was cut away unseen.
TEST(Scanner, ZeroFilledHoleDoesNotSwallowTheNextLine) {
  TempDir dir;
  const std::string warn =
      "gpu-b:2:2 [1] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<1>\n";
  for (size_t hole : {size_t{900} << 10, size_t{2} << 20, size_t{5} << 20}) {
    for (bool mid_line : {false, true}) {
      SCOPED_TRACE(std::to_string(hole) + (mid_line ? " mid-line" : ""));
      std::string log = "gpu-b:2:2 [1] NCCL INFO NCCL version 2.21.5\n";
      if (mid_line) log += "gpu-b:2:2 [1] NCCL INFO cut sho";
      log += std::string(hole, '\0') + warn + "gpu-b:2:2 [1] NCCL INFO Using network IB\n";
      std::string path = dir.Write("hole.log", log);
      Analysis a = Analyze(Rules(), {path}, ScanOptions());
      EXPECT_EQ(a.state->counters().overlong_lines, 0u);
      EXPECT_EQ(a.state->counters().lines, 3u);
      EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "fail");
      ASSERT_FALSE(a.diagnosis.findings.empty());
      EXPECT_EQ(a.diagnosis.findings[0].rule_id, "NCCL-CONN-CLOSED");
    }
  }
  // A real overlong line is still cut and counted.
  std::string path = dir.Write("long.log", std::string(3 << 20, 'x') + "\n" + warn);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(a.state->counters().overlong_lines, 1u);
  EXPECT_EQ(std::string(StatusName(a.diagnosis.status)), "fail");
}

TEST(Scanner, TerminalHardWrapIsRejoinedOnlyWhereItCompletesAMessage) {
  TempDir dir;
  // Cut at a fixed column in the middle of "NumelOut" (a real paste).
  std::string wrapped =
      "[rank4]:[E430 05:09:48.828088908 ProcessGroupNCCL.cpp:632] [Rank 4] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9387, OpType=ALLREDUCE, NumelIn=1, N\n"
      "umelOut=1, Timeout(ms)=600000) ran for 600005 milliseconds before timing out.\n";
  std::string path = dir.Write("w.log", wrapped);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(a.state->counters().wrapped_joined, 1u);
  EXPECT_EQ(a.state->counters().lines, 2u);
  const Finding* timeout = nullptr;
  for (const Finding& g : a.diagnosis.findings) {
    if (g.rule_id == "TORCH-WATCHDOG-TIMEOUT") timeout = &g;
  }
  ASSERT_NE(timeout, nullptr);
  const Finding& f = *timeout;
  EXPECT_EQ(f.sequence, "9387");
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_EQ(f.evidence[0].line, 1);
  // A complete line followed by program output is left alone.
  std::string plain = dir.Write(
      "p.log",
      "[rank4]:[W430 05:09:48.828088908 Module.cpp:1] [Rank 4] a long warning line that is complete in itself and "
      "ends in a word\nEpoch 3 step 200 loss 1.25\n");
  Analysis b = Analyze(Rules(), {plain}, ScanOptions());
  EXPECT_EQ(b.state->counters().wrapped_joined, 0u);
}

// Rows of a terminal-wrapped paste that the first joins missed: a row that
// starts with what a cut leaves mid-value ("with status" / "=12 opcode=129"),
// a row of a line that does not name NCCL but holds a rule's key atom (the
// c10d store's barrier), and a line whose rule only sets facts (a teardown).
// A long line followed by a line of its own is still left alone, even where
// the next line's first word would lengthen a capture that ends the first.
TEST(Scanner, HardWrappedRowsOfEveryKindOfLineAreJoined) {
  struct Case {
    const char* text;
    uint64_t joined;
    const char* finding;  // a finding the joined line gives, or ""
  };
  const Case cases[] = {
      {"node1:984:1357 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer 172.36.143.59<44206> with "
       "status\n=12 opcode=129 len=65536 vendor err 129 (Recv) localGid ::ffff:29.87.88.182\n",
       1, "NCCL-IB-COMPLETION-ERROR"},
      {"INFO:root:Waiting in store based barrier to initialize process group for rank: 3, key: "
       "store_based_barrier_key:1 (world_\nsize=8, worker_count=7, timeout=0:30:00)\n",
       1, "TORCH-STORE-BARRIER-WAIT"},
      {"node1:23:670 [0] NCCL INFO comm 0x55d0c1a0e9f0 rank 6 nranks 32 cudaDev 2 busId 190000 - Abort COMP\nLETE\n", 1,
       ""},
      {"E0806 14:09:41.310000 139876 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) "
       "local_rank: 3 (pid: 139945) of binary: /usr/bin/python\nTraceback (most recent call last):\n",
       0, ""},
      // A row that goes on with "NCCL version" (not an NCCL line's "NCCL INFO" / "NCCL WARN").
      {"[rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
       "un\nhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n",
       1, "NCCL-UNHANDLED-ERROR"},
      // The cut falls inside the rule's key atom: the two rows together hold it.
      {"This may indicate that different ranks are trying to submit different tensors or that only subset of ranks "
       "is submitting\n tensors, which will cause deadlock.\n",
       1, "HOROVOD-STALL-WARNING"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    Analysis a = Analyze(Rules(), {dir.Write("w.log", c.text)}, ScanOptions());
    EXPECT_EQ(a.state->counters().wrapped_joined, c.joined) << c.text;
    if (!*c.finding) continue;
    bool found = false;
    for (const Finding& f : a.diagnosis.findings) found |= f.rule_id == c.finding;
    EXPECT_TRUE(found) << c.finding;
  }
}

// Regression: two rows of `srun -l` output from different tasks ("1661: …",
// "1667: …") differ from their first bytes, so the same-prefix test let them
// through, and every long line of a wide interleaved job was parsed and matched
// three more times as a wrap candidate (7% of its instructions). A row with a
// task label is a line of its own; the label's own wrapped row is still joined.
TEST(Scanner, SrunLabelledRowsAreNeverOneWrappedLine) {
  using scan_detail::HardWrapGate;
  using scan_detail::WrapGate;
  const std::string first =
      "1661: gpu-node-207:829848:830168 [5] NCCL INFO ncclCommInitRank comm 0x55a4394aa9a0 rank 5 nranks 8 cudaDev 5 "
      "nvmlDev 5 busId ab000 commId 0x8831586f39aaf692 - Init COMPLETE";
  EXPECT_EQ(
      HardWrapGate(first, false,
                   "1667: /usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:1399: FutureWarning", true),
      WrapGate::kNo);
  EXPECT_EQ(HardWrapGate(first, false, "  3: step 10 loss 2.5", true), WrapGate::kNo);
  const std::string cut =
      "12: [rank12]:[E1122 10:15:32.123456789 ProcessGroupNCCL.cpp:616] [Rank 12] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9387, OpType=ALLREDUCE, NumelIn=1, N";
  EXPECT_EQ(
      HardWrapGate(cut, false, "umelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.", true),
      WrapGate::kMaybe);
  TempDir dir;
  Analysis a = Analyze(Rules(),
                       {dir.Write("srun.log", cut + "\numelOut=1, Timeout(ms)=600000) ran for 600081 "
                                                    "milliseconds before timing out.\n")},
                       ScanOptions());
  EXPECT_EQ(a.state->counters().wrapped_joined, 1u);
}

// Scans `path` with chunk sizes 1, 1 + step, … below `limit`: each JSON is `want`.
void ExpectSameJsonWhateverTheChunkSize(const std::string& path, const std::string& want, size_t limit, size_t step) {
  for (size_t chunk = 1; chunk < limit; chunk += step) {
    ScanOptions o;
    o.chunk_size = chunk;
    Analysis b = Analyze(Rules(), {path}, o);
    EXPECT_EQ(RenderJson(*b.state, b.diagnosis), want) << "chunk " << chunk;
    if (::testing::Test::HasFailure()) break;
  }
}

// Regression: a hard wrap that straddled a chunk boundary stayed two lines, so
// the counts by family and the evidence depended on the chunk size. The reader
// now never ends a chunk between two lines that might be joined.
TEST(Scanner, AHardWrapIsJoinedWhateverTheChunkSize) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 12; ++i) {
    const std::string r = std::to_string(i % 4);
    text += "node" + r + ":10" + r + ":20" + r + " [" + r + "] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
    // Cut mid-token at the terminal's width; the rest has no header.
    text += "[rank" + r + "]:[E430 05:09:48.828088908 ProcessGroupNCCL.cpp:632] [Rank " + r +
            "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(90 + i) +
            ", OpType=ALLREDUCE, NumelIn=1, N\numelOut=1, Timeout(ms)=600000) ran for 600005 milliseconds before "
            "timing out.\n";
    // A long NCCL line followed by program output: might be a wrap, is not.
    text += "node" + r + ":10" + r + ":20" + r + " [" + r + "] NCCL INFO comm 0x5555 rank " + r +
            " nRanks 4 nNodes 1 localRanks 4 localRank " + r + " MNNVL 0\n";
    text += "Epoch 3 step " + std::to_string(i) + " loss 1.25\n";
  }
  const std::string path = dir.Write("w.log", text);
  ScanOptions whole;
  Analysis a = Analyze(Rules(), {path}, whole);
  EXPECT_EQ(a.state->counters().wrapped_joined, 12u);
  const std::string want = RenderJson(*a.state, a.diagnosis);
  ExpectSameJsonWhateverTheChunkSize(path, want, 700, 7);
}

// The same watchdog line on an 80-column terminal: rows as wide as the first,
// joined into one line whatever the chunk size; its size and time read in full
// (the third row holds "NumelOut=1, Timeout(ms)=600000) ran for"). The last
// row, a lone ".", adds nothing and stays a line of its own.
TEST(Scanner, ALineCutIntoSeveralRowsIsJoinedWhateverTheChunkSize) {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 6; ++i) {
    const std::string r = std::to_string(i % 3);
    const std::string line =
        "[rank" + r + "]:[E430 05:09:48.828088908 ProcessGroupNCCL.cpp:632] [Rank " + r +
        "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(90 + i) +
        ", OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600005 "
        "milliseconds before timing out.";
    for (size_t k = 0; k < line.size(); k += 80) text += line.substr(k, 80) + "\n";
    text += "Epoch 3 step " + std::to_string(i) + " loss 1.25\n";
  }
  const std::string path = dir.Write("w.log", text);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  EXPECT_EQ(a.state->counters().wrapped_joined, 6u * 2);
  const std::string want = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(want.find("ran for 600005 milliseconds"), std::string::npos);
  ExpectSameJsonWhateverTheChunkSize(path, want, 900, 11);
}

// An indented paste (a code block inside a markdown list item): every line
// carries the page's indent, so a traceback's last line and a header-less NCCL
// fragment do not start the line. The file's head shows the indent; lines are
// read without it, whatever the chunk size, and their numbers stay the file's.
TEST(Scanner, AnIndentedPasteIsReadWithoutItsIndent) {
  TempDir dir;
  const std::string text =
      "    Traceback (most recent call last):\n"
      "      File \"train.py\", line 3, in <module>\n"
      "    ValueError: batch 7 has no rows\n"
      "\n"
      "    9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n";
  const std::string path = dir.Write("paste.log", text);
  Analysis a = Analyze(Rules(), {path}, ScanOptions());
  ASSERT_GE(a.diagnosis.primary, 0);
  const Finding& p = a.diagnosis.findings[a.diagnosis.primary];
  EXPECT_EQ(p.rule_id, "PYTHON-UNCAUGHT-EXCEPTION");
  const std::string want = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(want.find("\"line\":3"), std::string::npos) << want;
  EXPECT_EQ(a.state->counters().family_lines[static_cast<int>(Family::kNccl)], 1u);
  ExpectSameJsonWhateverTheChunkSize(path, want, 200, 3);
  // The same lines at the margin but one: no common indent, nothing removed.
  const std::string mixed = dir.Write("mixed.log", "ValueError: at the margin\n" + text);
  Analysis m = Analyze(Rules(), {mixed}, ScanOptions());
  EXPECT_EQ(m.state->counters().family_lines[static_cast<int>(Family::kNccl)], 0u);
}

// `where` on one key of a keyed fact, compared as numbers (14 < 9 as text).
TEST(Scanner, ConditionsCompareKeyedFactsAsNumbers) {
  RuleLoader loader;
  loader.AddEmbedded();
  loader.BeginLayer();
  std::string site = "correlations:\n";
  for (const char* op : {"lt", "le", "ge", "gt"}) {
    site += std::string("  - id: TIMEOUT-") + (op[0] == 'l' ? "L" : "G") + (op[1] == 't' ? "T" : "E") +
            "\n"
            "    title: t\n"
            "    category: env\n"
            "    kind: condition\n"
            "    where: [{fact: 'env[NCCL_IB_TIMEOUT]', " +
            op +
            ": 18}]\n"
            "    finding: {severity: warning, explanation: 'NCCL_IB_TIMEOUT={value} on {hosts}'}\n";
  }
  loader.AddSource("site.yaml", site);
  std::vector<Diagnostic> diags;
  auto rules = loader.Build(&diags);
  ASSERT_TRUE(rules) << (diags.empty() ? "" : diags[0].message);
  TempDir dir;
  std::string log;
  for (const char* v : {"9", "14", "18", "22", "abc"}) {
    log += std::string("h") + v + ":1:1 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to " + v + ".\n";
  }
  log += "h0:1:1 [0] NCCL INFO NCCL_IB_RETRY_CNT set by environment to 3.\n";  // another key only
  Analysis a = Analyze(*rules, {dir.Write("job.log", log)}, ScanOptions());
  std::map<std::string, std::vector<std::string>> hosts;
  for (const Finding& f : a.diagnosis.findings) {
    if (f.rule_id.rfind("TIMEOUT-", 0) == 0) hosts[f.rule_id] = f.hosts;
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(hosts["TIMEOUT-LT"], (V{"h14", "h9"}));
  EXPECT_EQ(hosts["TIMEOUT-LE"], (V{"h14", "h18", "h9"}));
  EXPECT_EQ(hosts["TIMEOUT-GE"], (V{"h18", "h22"}));
  EXPECT_EQ(hosts["TIMEOUT-GT"], (V{"h22"}));
}

}  // namespace
}  // namespace ncclscan

namespace ncclscan {
namespace {

// Two processes on two hosts that both claim rank 0 were merged into one
// subject and the second host vanished from the report: both are kept now,
// and the conflict is said.
TEST(Scanner, TwoHostsClaimingOneRankAreBothKept) {
  TempDir tmp;
  const std::string a = tmp.Write(
      "a.log", "node-a:100:101 [0] NCCL INFO comm 0x11 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n");
  const std::string b = tmp.Write(
      "b.log", "node-b:200:201 [0] NCCL INFO comm 0x22 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n");
  Analysis an = Analyze(BuiltInRules(), {a, b}, ScanOptions{});
  EXPECT_EQ(an.state->Hosts(), (std::set<std::string>{"node-a", "node-b"}));
  int rank0 = 0;
  for (int s : an.state->LiveSubjects()) rank0 += an.state->subjects()[s].rank == 0;
  EXPECT_EQ(rank0, 2);
  ASSERT_EQ(an.state->identity_conflicts().size(), 1u);
  EXPECT_EQ(an.state->identity_conflicts()[0],
            "rank 0 is claimed by node-a:100 and node-b:200 (two hosts); both are kept");
  EXPECT_NE(RenderJson(*an.state, an.diagnosis).find("rank 0 (node-b:200)"), std::string::npos);

  // The near miss: a restart on the same host (another pid) is one rank.
  const std::string c = tmp.Write(
      "c.log", "node-a:300:301 [0] NCCL INFO comm 0x33 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n");
  Analysis same = Analyze(BuiltInRules(), {a, c}, ScanOptions{});
  EXPECT_TRUE(same.state->identity_conflicts().empty());
  EXPECT_EQ(same.state->LiveSubjects().size(), 1u);
}

// Past kMaxSubjects distinct processes, their lines are summarised as one
// subject and said so in every report; what those lines say still counts (a
// WARN of the 200,000th process is a finding), and the earlier processes keep
// their identity.
TEST(Scanner, SubjectsPastTheCapAreSummarisedAndReported) {
  TempDir tmp;
  std::string log;
  const size_t n = kMaxSubjects + 5000;
  log.reserve(n * 40);
  for (size_t i = 0; i < n; ++i) log += "h" + std::to_string(i) + ":1:1 [0] NCCL INFO x\n";
  log += "h" + std::to_string(n - 1) +
         ":1:1 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer h0<1234>\n";
  Analysis a = Analyze(BuiltInRules(), {tmp.Write("big.log", log)}, ScanOptions{});
  EXPECT_LE(a.state->subjects().size(), kMaxSubjects + 1);
  EXPECT_GE(a.state->counters().over_subject_cap, 5000u);
  const std::string json = RenderJson(*a.state, a.diagnosis);
  EXPECT_NE(json.find("\"limits\":{\"processes_and_ranks\":{\"cap\":131072,\"over\":"), std::string::npos);
  ReportOptions ro;
  EXPECT_NE(RenderText(*a.state, a.diagnosis, ro).find("limit: more than 131072 processes and ranks"),
            std::string::npos);
  EXPECT_NE(RenderMarkdown(*a.state, a.diagnosis).find("limit: more than 131072"), std::string::npos);
  bool closed = false;
  for (const auto& f : a.diagnosis.findings) closed |= f.rule_id == "NCCL-CONN-CLOSED";
  EXPECT_TRUE(closed);
  EXPECT_TRUE(a.state->Hosts().count("h0"));
  EXPECT_FALSE(a.state->Hosts().count("h" + std::to_string(n - 1)));
}

}  // namespace
}  // namespace ncclscan

namespace ncclscan {
namespace {

// A line whose rank does not fit is kept but counted, and every report says so.
TEST(Scanner, LinesWithNumbersTooLargeAreCounted) {
  TempDir tmp;
  const std::string log = tmp.Write("r.log",
                                    "[rank4294967297]:[E1122 09:41:02.000000000 ProcessGroupNCCL.cpp:1900] boom\n"
                                    "[rank1]:[E1122 09:41:02.000000000 ProcessGroupNCCL.cpp:1900] boom\n");
  Analysis a = Analyze(BuiltInRules(), {log}, ScanOptions{});
  EXPECT_EQ(a.state->counters().bad_numbers, 1u);
  EXPECT_NE(RenderJson(*a.state, a.diagnosis).find("\"bad_number\":1"), std::string::npos);
  EXPECT_NE(
      RenderText(*a.state, a.diagnosis, ReportOptions{}).find("unparsed: 1 line(s) with a rank or count too large"),
      std::string::npos);
}

}  // namespace
}  // namespace ncclscan

namespace ncclscan {
namespace {

// Communicators past kMaxComms are not tracked, and keys of one keyed fact
// past kMaxKeysPerFact are dropped: both counted and said, so memory stays
// flat however many a log names (a scan and a merge of partials agree).
TEST(Scanner, CommunicatorsAndFactKeysPastTheirCapsAreCounted) {
  TempDir tmp;
  std::string comms, coll;
  const size_t extra = 100;
  for (size_t i = 0; i < kMaxComms + extra; ++i) {
    comms += "h0:1:1 [0] NCCL INFO comm 0x" + std::to_string(1000000 + i) +
             " rank 0 nranks 1 cudaDev 0 busId 1b000 commId 0x" + std::to_string(5000000 + i) + " - Init COMPLETE\n";
  }
  for (size_t i = 0; i < kMaxKeysPerFact + extra; ++i) {
    coll +=
        "h1:2:2 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x7f00 recvbuff 0x7f00 count 8 datatype 7 op 0 root 0 comm "
        "0x" +
        std::to_string(9000000 + i) + " [nranks=4] stream 0x1\n";
  }
  const std::string a = tmp.Write("comms.log", comms), b = tmp.Write("coll.log", coll);
  Analysis an = Analyze(BuiltInRules(), {a, b}, ScanOptions{});
  EXPECT_EQ(an.state->comms().size(), kMaxComms);
  EXPECT_EQ(an.state->counters().over_comm_cap, extra);
  EXPECT_EQ(an.state->counters().over_key_cap, extra);
  const std::string json = RenderJson(*an.state, an.diagnosis);
  EXPECT_NE(json.find("\"communicators\":{\"cap\":65536,\"over\":100}"), std::string::npos);
  EXPECT_NE(json.find("\"keys_per_fact\":{\"cap\":4096,\"over\":100}"), std::string::npos);
  const std::string text = RenderText(*an.state, an.diagnosis, ReportOptions{});
  EXPECT_NE(text.find("limit: more than 65536 communicators; 100 line(s)"), std::string::npos);
  EXPECT_NE(text.find("limit: 100 value(s) of keyed facts past 4096 keys"), std::string::npos);
}

}  // namespace
}  // namespace ncclscan
