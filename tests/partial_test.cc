// Partials and merge (engine/run/partial.h): split every corpus case several ways,
// write a partial per share, merge them in another order, and require the JSON
// diagnosis of one scan over the same files, byte for byte. Then the ways a
// partial can be bad: each a clear error naming the file.
#include "engine/run/partial.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/io/source.h"
#include "engine/reports/report.h"
#include "tests/test_util.h"

namespace ncclscan {
namespace {

namespace fs = std::filesystem;

// The log files of a corpus case (what a scan of its directory reads).
std::vector<std::string> CaseFiles(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == "expected.json" || name == "truth.json" || e.path().extension() == ".md") {
      continue;
    }
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ScanJson(const std::vector<std::string>& files) {
  Analysis a = Analyze(BuiltInRules(), files, ScanOptions{});
  return RenderJson(*a.state, a.diagnosis);
}

// Writes a partial per share (a share may be empty) and returns their paths.
std::vector<std::string> WriteShares(const TempDir& tmp, const std::string& tag,
                                     const std::vector<std::vector<std::string>>& shares) {
  std::vector<std::string> out;
  for (size_t i = 0; i < shares.size(); ++i) {
    const std::string path = tmp.path() + "/" + tag + std::to_string(i) + ".part";
    std::vector<std::string> errors;
    size_t inputs = 0;
    std::string err;
    ScanOptions opts;
    opts.jobs = 1;
    // An empty share is written from an empty directory: a node with no logs.
    std::vector<std::string> paths = shares[i];
    if (paths.empty()) {
      fs::create_directories(tmp.path() + "/empty");
      paths.push_back(tmp.path() + "/empty");
    }
    EXPECT_TRUE(WritePartialScan(BuiltInRules(), paths, opts, path, &errors, &inputs, &err)) << err;
    out.push_back(path);
  }
  return out;
}

std::string MergeJson(const std::vector<std::string>& partials) {
  Analysis a;
  std::string err;
  EXPECT_TRUE(MergePartials(BuiltInRules(), partials, &a, &err)) << err;
  return a.state ? RenderJson(*a.state, a.diagnosis) : "";
}

// The directory above a file, relative to the case: on per-host layouts (one
// directory per node) the logs a node would scan locally.
std::string ShareKey(const fs::path& c, const std::string& file) {
  return fs::relative(fs::path(file).parent_path(), c).string();
}

// Every case directory of the corpus: the regression cases and the real
// incidents under corpus/incidents/.
std::vector<fs::path> CorpusCases() {
  const fs::path corpus = fs::path(NCCLSCAN_SOURCE_DIR) / "corpus";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(corpus)) {
    if (!e.is_directory()) continue;
    if (e.path().filename() != "incidents") {
      cases.push_back(e.path());
      continue;
    }
    for (const auto& i : fs::directory_iterator(e.path())) {
      if (i.is_directory()) cases.push_back(i.path());
    }
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

// Where two renderings first differ, with some text around it ("" if equal):
// a whole diagnosis in a failure message is unreadable.
std::string FirstDifference(const std::string& got, const std::string& want) {
  if (got == want) return "";
  size_t i = 0;
  while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
  const size_t from = i > 120 ? i - 120 : 0;
  return "at byte " + std::to_string(i) + ":\n  got  ..." + got.substr(from, 240) + "\n  want ..." +
         want.substr(from, 240);
}

// The determinism property on every corpus case: byte-identical JSON at
// -j1, -j2 and -j8, at the default chunk size, at 4 KiB and at 509-byte chunks
// (most lines then straddle a boundary).
TEST(Determinism, EveryCorpusCaseIsTheSameAtEveryThreadCountAndChunkSize) {
  for (const fs::path& c : CorpusCases()) {
    SCOPED_TRACE(c.filename().string());
    const std::vector<std::string> files = CaseFiles(c);
    if (files.empty()) continue;
    std::string want;
    for (size_t chunk : {size_t{1} << 17, size_t{4096}, size_t{509}}) {
      for (int jobs : {1, 2, 8}) {
        if (chunk == 509 && jobs == 8) continue;  // the thread counts are covered above
        ScanOptions o;
        o.jobs = jobs;
        o.chunk_size = chunk;
        Analysis a = Analyze(BuiltInRules(), files, o);
        const std::string got = RenderJson(*a.state, a.diagnosis);
        if (want.empty()) want = got;
        EXPECT_EQ(FirstDifference(got, want), "") << "-j" << jobs << " chunk " << chunk;
      }
    }
  }
}

// The corpus's real logs in one file (the bench's "real" shape): many jobs'
// ranks, processes and wrappers in one stream. Regressions: a rank's last line
// was noted once a chunk whichever process printed it, and srun labels stopped
// counting as ranks from the start of the chunk that showed they are not, so
// subjects, votes and a finding's ranks changed with the chunk size.
TEST(Determinism, RealLogsInOneFileAreTheSameAtEveryChunkSize) {
  std::vector<std::string> logs;
  for (const auto& e : fs::recursive_directory_iterator(std::string(NCCLSCAN_SOURCE_DIR) + "/corpus")) {
    const std::string where = e.path().string();
    if (e.is_regular_file() && e.path().extension() == ".log" &&
        (where.find("/incidents/") != std::string::npos || where.find("/real-") != std::string::npos)) {
      logs.push_back(where);
    }
  }
  std::sort(logs.begin(), logs.end());
  ASSERT_GT(logs.size(), 100u);
  TempDir tmp;
  const std::string all = tmp.path() + "/real.log";
  {
    std::ofstream out(all, std::ios::binary);
    for (const std::string& l : logs) out << std::ifstream(l, std::ios::binary).rdbuf();
  }
  std::string want;
  for (size_t chunk : {size_t{1} << 17, size_t{4099}, size_t{1} << 22}) {
    ScanOptions o;
    o.jobs = 2;
    o.chunk_size = chunk;
    Analysis a = Analyze(BuiltInRules(), {all}, o);
    const std::string got = RenderJson(*a.state, a.diagnosis);
    if (want.empty()) want = got;
    EXPECT_EQ(FirstDifference(got, want), "") << "chunk " << chunk;
  }
}

// What a diagnosis says, without where its evidence sits (paths, bytes, text).
std::string Verdict(const Diagnosis& d) {
  std::string s = std::to_string(static_cast<int>(d.status)) + " primary " + std::to_string(d.primary) + "\n";
  for (const Finding& f : d.findings) {
    s += f.rule_id + " " + std::to_string(static_cast<int>(f.severity)) + " " + CompactRanks(f.ranks) + " " +
         CompactRanks(f.suspect_ranks) + " [";
    for (const auto& h : f.suspect_hosts) s += h + ",";
    s += "] " + std::to_string(f.count) + "\n";
  }
  return s;
}

// The same logs with CRLF line ends (a Windows editor, a paste from a browser)
// or with each line padded with blanks (a paste from tmux or screen) say the
// same. Regressions (corpus nanotron-204, torchtune-2651): a terminal hard wrap
// after "Watchdog caught " was not rejoined when the line ended in '\r' or in
// padding, and the culprit changed from rank 0 to rank 2; a glog header with
// an empty message ("run.py:793] ") was no header once its blank was trimmed.
TEST(Determinism, EveryCorpusCaseSaysTheSameWithCrlfOrPaddedLines) {
  for (const bool crlf : {true, false}) {
    SCOPED_TRACE(crlf ? "CRLF" : "padded");
    int checked = 0;
    for (const fs::path& c : CorpusCases()) {
      SCOPED_TRACE(c.filename().string());
      std::vector<std::string> logs;
      for (const auto& f : CaseFiles(c)) {
        if (fs::path(f).filename() != "golden.json") logs.push_back(f);
      }
      if (logs.empty()) continue;
      TempDir tmp;
      std::vector<std::string> changed;
      bool text_only = true;
      for (size_t i = 0; i < logs.size() && text_only; ++i) {
        std::ifstream in(logs[i], std::ios::binary);
        std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        // Binary inputs (compressed, pickled dumps) are read as they are.
        text_only =
            body.find('\0') == std::string::npos && (body.empty() || static_cast<unsigned char>(body[0]) < 0x80);
        // Padded as a terminal copy is: each line to the width of the longest
        // (a line a hard wrap cut fills the width and gets no padding).
        size_t width = 0;
        for (size_t k = 0, from = 0; k <= body.size(); ++k) {
          if (k == body.size() || body[k] == '\n') {
            width = std::max(width, k - from);
            from = k + 1;
          }
        }
        std::string out;
        for (size_t k = 0, from = 0; k < body.size(); ++k) {
          if (body[k] == '\n' && (k == 0 || body[k - 1] != '\r')) {
            out += crlf ? "\r\n" : std::string(width - (k - from), ' ') + "\n";
          } else {
            out += body[k];
          }
          if (body[k] == '\n') from = k + 1;
        }
        // The same relative path: directory names are hints (a host per directory).
        changed.push_back(tmp.Write(fs::relative(logs[i], c).string(), out));
      }
      if (!text_only) continue;
      ScanOptions o;
      o.jobs = 1;
      const Analysis want = Analyze(BuiltInRules(), logs, o);
      const Analysis got = Analyze(BuiltInRules(), changed, o);
      EXPECT_EQ(Verdict(got.diagnosis), Verdict(want.diagnosis));
      ++checked;
    }
    EXPECT_GT(checked, 300);
  }
}

TEST(Partial, EveryCorpusCaseMergesToItsScan) {
  std::vector<fs::path> cases = CorpusCases();
  ASSERT_GT(cases.size(), 100u);
  int checked = 0;
  for (const fs::path& c : cases) {
    SCOPED_TRACE(c.filename().string());
    const std::vector<std::string> files = CaseFiles(c);
    if (files.empty()) continue;
    const std::string want = ScanJson(files);
    TempDir tmp;

    // 1. By node: a share per directory (per-host layouts), merged in reverse.
    std::map<std::string, std::vector<std::string>> by_dir;
    for (const auto& f : files) by_dir[ShareKey(c, f)].push_back(f);
    std::vector<std::vector<std::string>> shares;
    for (auto& kv : by_dir) shares.push_back(kv.second);
    std::vector<std::string> parts = WriteShares(tmp, "dir", shares);
    std::reverse(parts.begin(), parts.end());
    EXPECT_EQ(MergeJson(parts), want) << "split by directory";

    // 1b. By host: each file goes to the node its own lines name (the first
    //     host a scan of it alone finds; files naming none go together).
    std::map<std::string, std::vector<std::string>> by_host;
    for (const auto& f : files) {
      Analysis alone = Analyze(BuiltInRules(), {f}, ScanOptions{});
      const std::set<std::string> hosts = alone.state->Hosts();
      by_host[hosts.empty() ? "" : *hosts.begin()].push_back(f);
    }
    shares.clear();
    for (auto& kv : by_host) shares.push_back(kv.second);
    parts = WriteShares(tmp, "host", shares);
    std::reverse(parts.begin(), parts.end());
    EXPECT_EQ(MergeJson(parts), want) << "split by host";

    // 2. Unevenly in three, interleaved as SLURM_PROCID % 3 of a sorted list
    //    would give (so shares alternate in path order), one share empty when
    //    there are fewer than three files; merged as a tree: (2 + 0) then 1.
    std::vector<std::vector<std::string>> three(3);
    for (size_t i = 0; i < files.size(); ++i) three[i % 7 < 4 ? 0 : (i % 7 < 6 ? 1 : 2)].push_back(files[i]);
    parts = WriteShares(tmp, "three", three);
    const std::string tree = tmp.path() + "/tree.part";
    std::string err;
    ASSERT_TRUE(CombinePartials(BuiltInRules(), {parts[2], parts[0]}, tree, &err)) << err;
    EXPECT_EQ(MergeJson({parts[1], tree}), want) << "split unevenly in three, merged as a tree";

    // 3. One file per partial: the finest split.
    shares.clear();
    for (const auto& f : files) shares.push_back({f});
    parts = WriteShares(tmp, "file", shares);
    std::rotate(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(parts.size() / 2), parts.end());
    EXPECT_EQ(MergeJson(parts), want) << "one partial per file";
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

// A partial and a merge over a job's directory, as users run them, equal the
// scan of the directory: hygiene (skipped files) and walk order included.
TEST(Partial, DirectoryPartialEqualsDirectoryScan) {
  const std::string dir = std::string(NCCLSCAN_SOURCE_DIR) + "/corpus/real-cuda-oom-in-proxy-setup-conn-closed";
  Analysis a = Analyze(BuiltInRules(), {dir}, ScanOptions{});
  TempDir tmp;
  std::vector<std::string> errors;
  size_t inputs = 0;
  std::string err;
  ASSERT_TRUE(WritePartialScan(BuiltInRules(), {dir}, ScanOptions{}, tmp.path() + "/p", &errors, &inputs, &err));
  EXPECT_EQ(inputs, 1u);
  EXPECT_EQ(MergeJson({tmp.path() + "/p"}), RenderJson(*a.state, a.diagnosis));
}

// One process whose lines are in two files (its stdout and stderr): facts of
// each merge mode keep the scan's answer when the files are in two partials
// (last: the later file's version; first and set: both files' values).
TEST(Partial, ProcessSplitOverTwoPartialsKeepsScanOrder) {
  TempDir tmp;
  const std::string a = tmp.Write("a/stdout.log",
                                  "h1:10:11 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n"
                                  "h1:10:11 [0] NCCL INFO NET/IB : No device found.\n"
                                  "h1:10:11 [0] NCCL INFO Channel 00/02 :    0   1\n");
  const std::string b =
      tmp.Write("b/stderr.log",
                "h1:10:11 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
                "h1:10:11 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                "h1:10:11 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer\n");
  const std::string want = ScanJson({a, b});
  ASSERT_NE(want.find("2.19.3"), std::string::npos);
  for (bool reversed : {false, true}) {
    std::vector<std::string> parts = WriteShares(tmp, "split", {{a}, {b}});
    if (reversed) std::swap(parts[0], parts[1]);
    EXPECT_EQ(MergeJson(parts), want) << (reversed ? "given in reverse" : "given in order");
  }
}

class BadPartial : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<std::string> errors;
    size_t inputs = 0;
    std::string err;
    log_ = tmp_.Write("rank0.log",
                      "h1:10:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
                      "h1:10:11 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer\n");
    good_ = tmp_.path() + "/good.part";
    ASSERT_TRUE(WritePartialScan(BuiltInRules(), {log_}, ScanOptions{}, good_, &errors, &inputs, &err)) << err;
    std::ifstream in(good_, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // The error merging `content` (written as bad.part) beside the good partial gives.
  std::string MergeError(const std::string& content) {
    const std::string bad = tmp_.Write("bad.part", content);
    Analysis a;
    std::string err;
    EXPECT_FALSE(MergePartials(BuiltInRules(), {good_, bad}, &a, &err));
    return err;
  }
  TempDir tmp_;
  std::string log_, good_, bytes_;
};

TEST_F(BadPartial, NotAPartial) {
  EXPECT_EQ(MergeError("h1:10:11 [0] NCCL INFO x\n"),
            tmp_.path() + "/bad.part: not an ncclscan partial (made by 'ncclscan partial -o FILE')");
}

TEST_F(BadPartial, Truncated) {
  for (size_t keep : {bytes_.size() - 1, bytes_.size() / 2, size_t{18}}) {
    EXPECT_EQ(MergeError(bytes_.substr(0, keep)),
              tmp_.path() + "/bad.part: truncated partial (the file ends inside its data; was it copied whole?)")
        << keep;
  }
}

TEST_F(BadPartial, CorruptByteIsCaughtByTheChecksum) {
  std::string b = bytes_;
  b[b.size() - 6] ^= 0x40;
  EXPECT_NE(MergeError(b).find("bad.part: corrupt partial"), std::string::npos);
}

TEST_F(BadPartial, OtherVersion) {
  std::string b = bytes_;
  b[17] = 9;  // the version varint after the 17-byte magic
  EXPECT_EQ(MergeError(b), tmp_.path() + "/bad.part: partial format version 9, this ncclscan reads version " +
                               std::to_string(kPartialVersion) +
                               "; write the "
                               "partials and merge them with the same release");
}

// One input in two partials (here: one partial given twice) is one input, as
// a scan reads a file named twice once and counts the duplicate. (Inputs are
// told apart by what they are, not by path: see tests/cli_test.sh
// merge_tells_inputs_apart_by_what_they_are.)
TEST_F(BadPartial, SameInputTwiceIsReadOnce) {
  Analysis once, twice, scan;
  std::string err;
  ASSERT_TRUE(MergePartials(BuiltInRules(), {good_}, &once, &err)) << err;
  ASSERT_TRUE(MergePartials(BuiltInRules(), {good_, good_}, &twice, &err)) << err;
  EXPECT_EQ(twice.state->counters().lines, once.state->counters().lines);
  EXPECT_EQ(twice.state->files().size(), 1u);
  EXPECT_EQ(twice.state->skipped().count.at(kSkipDuplicate), 1u);
  auto diagnosis = [](const Analysis& a) {  // the JSON after "input"
    std::string j = RenderJson(*a.state, a.diagnosis);
    return j.substr(j.find("\"subjects\""));
  };
  EXPECT_EQ(diagnosis(twice), diagnosis(once));
}

TEST_F(BadPartial, OtherRules) {
  // The same bytes read with a rule set that has one more rule.
  TempDir rules;
  rules.Write("site.yaml", R"(rules:
  - id: SITE-X
    title: x
    category: env
    family: nccl
    pattern: 'zzz-site-x (\d+)'
    finding:
      severity: warning
      explanation: x
    examples:
      match: ["h:1:1 [0] NCCL INFO zzz-site-x 1"]
      no_match: ["h:1:1 [0] NCCL INFO zzz-site-x none"]
)");
  std::string load_err;
  auto other = LoadRules({rules.path()}, &load_err);
  ASSERT_TRUE(other) << load_err;
  Analysis a;
  std::string err;
  EXPECT_FALSE(MergePartials(*other, {good_}, &a, &err));
  EXPECT_EQ(err.rfind(good_ + ": made with other rules (ncclscan ", 0), 0u) << err;
}

// The partial's decoder on every truncation and on flipped bytes of a state:
// a clean false, never a crash or a wild allocation (ASan runs this too).
TEST(Partial, DecoderSurvivesDamagedState) {
  TempDir tmp;
  const std::string log =
      tmp.Write("r.log",
                "h1:10:11 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
                "h1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0\n"
                "h1:10:11 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer\n");
  JobState st(&BuiltInRules());
  Scanner(&BuiltInRules(), ScanOptions{}).Scan(std::vector<std::string>{log}, &st, [](const std::string&) {});
  WireWriter w;
  st.Encode(&w);
  const std::string bytes = w.bytes();
  {
    JobState back(&BuiltInRules());
    WireReader r(bytes);
    ASSERT_TRUE(back.Decode(&r));
    WireWriter again;
    back.Encode(&again);
    EXPECT_EQ(again.bytes(), bytes) << "encode(decode(x)) == x";
  }
  for (size_t keep = 0; keep < bytes.size(); ++keep) {
    JobState back(&BuiltInRules());
    WireReader r(std::string_view(bytes).substr(0, keep));
    EXPECT_FALSE(back.Decode(&r)) << keep;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string b = bytes;
      b[i] = static_cast<char>(b[i] ^ flip);
      JobState back(&BuiltInRules());
      WireReader r(b);
      if (back.Decode(&r)) {
        back.Finalize();  // what decodes must be usable
        (void)Diagnose(back);
      }
    }
  }
}

}  // namespace
}  // namespace ncclscan
